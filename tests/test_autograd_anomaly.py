"""Anomaly mode as PyTorch has it: check_nan honoured, nesting restores, the warnings that
carry the forward traceback (and the parent calculation's), the metadata nodes keep.

Ported from PyTorch's test/test_autograd.py (test_anomaly_detect_nan,
test_nested_anomaly_detect_nan, test_anomaly_grad_warnings, test_anomaly_mode_no_check_nan,
test_anomaly_assign_parent_cleanup, test_nested_anomaly_printstack_cleanup) in our own
words; each runs on tracegrad and on torch.
"""

from __future__ import annotations

import io
import sys
import warnings
import weakref

import pytest

import tracegrad


@pytest.fixture(autouse=True)
def _anomaly_off_after():
    yield
    tracegrad.set_anomaly_enabled(False)


SIZE = 10


def user_warnings(caught) -> list[str]:
    """The UserWarnings among ``caught`` (tracegrad's division leaks NumPy's
    RuntimeWarning for 0/0, which PyTorch does not give)."""
    return [str(w.message) for w in caught if w.category is UserWarning]


def nan_function(lib):
    """Backward puts a NaN into the gradient of input 0 or input 1."""

    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, grad):
            grad_in = grad.clone().expand(SIZE).clone()
            grad_in[0] = 0
            grad_in[0] /= 0  # 0/0: NaN
            return (grad_in, None, None) if ctx.fail_0th else (None, grad_in, None)

    return MyFunc


def test_nan_is_found_only_in_anomaly_mode(lib):
    my_func = nan_function(lib)
    inp = lib.rand(SIZE, requires_grad=True)
    my_func.apply(inp, inp, True).backward()  # no anomaly mode: no error

    out = my_func.apply(inp, inp, True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'MyFuncBackward' returned nan values "
                                               "in its 0th output."), \
                lib.autograd.detect_anomaly():
            out.backward()
    messages = user_warnings(caught)
    assert "Anomaly Detection has been enabled" in messages[0]
    assert "No forward pass information" in messages[1]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'MyFuncBackward' returned nan values "
                                               "in its 1th output."), \
                lib.autograd.detect_anomaly():
            out = my_func.apply(inp, inp, False)
            out.backward()
    message = user_warnings(caught)[1]
    assert message.startswith("Error detected in MyFuncBackward. Traceback of forward call "
                              "that caused the error:")
    assert "my_func.apply(inp, inp, False)" in message


def test_nan_in_a_node_made_by_another_nodes_backward(lib):
    class Outer(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp, fail_0th):
            ctx.fail_0th = fail_0th
            ctx.save_for_backward(inp)
            return inp.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, grad):
            (inp,) = ctx.saved_tensors
            g = grad.clone().expand(SIZE)
            return Inner.apply(g * inp, g + inp, ctx.fail_0th), None

    class Inner(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1 * 2.0 + inp2

        @staticmethod
        def backward(ctx, grad):
            g1, g2 = grad.clone(), grad.clone()
            g1[0] = 0
            g2[0] = 0
            if ctx.fail_0th:
                g1[0] /= 0
            else:
                g2[0] /= 0
            return g1, g2, None

    inp = lib.rand(SIZE, requires_grad=True)
    (ginp,) = lib.autograd.grad(Outer.apply(inp, True), (inp,), create_graph=True)
    ginp.sum().backward()  # no anomaly mode: no error

    (ginp,) = lib.autograd.grad(Outer.apply(inp, True), (inp,), create_graph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'InnerBackward' returned nan values in "
                                               "its 0th output."), \
                lib.autograd.detect_anomaly():
            ginp.sum().backward()
    assert "No forward pass information" in user_warnings(caught)[1]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'InnerBackward' returned nan values in "
                                               "its 1th output."), \
                lib.autograd.detect_anomaly():
            out = Outer.apply(inp, False)
            (ginp,) = lib.autograd.grad(out, (inp,), create_graph=True)
            ginp.sum().backward()
    messages = user_warnings(caught)
    assert "Inner.apply" in messages[1]
    assert messages[2].startswith("\n\nPrevious calculation was induced by OuterBackward.")
    assert "Outer.apply" in messages[2]


def test_an_error_in_backward_warns_with_the_forward_traceback(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient "
                                               "computation has been modified by an inplace "
                                               "operation"), \
                lib.autograd.detect_anomaly():
            a = lib.randn(5, requires_grad=True)
            d1 = a + 1
            d2 = d1 ** 2
            d1 += 1
            lib.autograd.grad(d2.sum(), a)
    assert len(caught) == 2
    assert "Anomaly Detection has been enabled" in str(caught[0].message)
    assert "Error detected in PowBackward0" in str(caught[1].message)
    assert "d2 = d1 ** 2" in str(caught[1].message)


def test_when_warnings_are_errors_the_traceback_goes_to_stderr(lib, monkeypatch):
    stderr = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, \
            pytest.raises(RuntimeError, match="modified by an inplace operation"), \
            lib.autograd.detect_anomaly():
        warnings.simplefilter("error")
        monkeypatch.setattr(sys, "stderr", stderr)
        a = lib.randn(5, requires_grad=True)
        d1 = a + 1
        d2 = d1 ** 2
        d1 += 1
        lib.autograd.grad(d2.sum(), a)
    monkeypatch.undo()
    assert len(caught) == 1
    assert "Error detected in PowBackward0" in stderr.getvalue()


def test_check_nan_false_is_honoured(lib):
    class NanGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, grad):
            return lib.full((10, 10), float("nan"))

    inp = lib.rand(10, 10, requires_grad=True)
    out = NanGrad.apply(inp).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
            out.backward(retain_graph=True)
            assert bool(inp.grad.isnan().all())
            with lib.autograd.detect_anomaly(check_nan=True), \
                    pytest.raises(RuntimeError, match="Function 'NanGradBackward' returned "
                                                      "nan values in its 0th output."):
                out.backward(retain_graph=True)
            assert not lib.is_anomaly_check_nan_enabled()  # the inner block restored it
            out.backward()


def test_nesting_restores_the_previous_settings(lib):
    assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly(check_nan=False):
            with lib.autograd.set_detect_anomaly(False):
                assert not lib.is_anomaly_enabled()
                assert lib.is_anomaly_check_nan_enabled()
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
            with lib.autograd.detect_anomaly():
                assert lib.is_anomaly_check_nan_enabled()
            assert not lib.is_anomaly_check_nan_enabled()
    assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
    lib.autograd.set_detect_anomaly(True)  # as a call, it takes effect at once
    assert lib.is_anomaly_enabled()
    lib.autograd.set_detect_anomaly(False)
    assert not lib.is_anomaly_enabled()


def test_detect_anomaly_reads_the_previous_setting_when_made(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mode = lib.autograd.detect_anomaly()
    assert len(caught) == 1 and caught[0].category is UserWarning
    lib.set_anomaly_enabled(True)
    with mode:
        pass
    assert not lib.is_anomaly_enabled()  # restored to what it was when made


def test_nodes_keep_their_forward_traceback_in_metadata(lib):
    x = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            y = x * 2
    assert list(y.grad_fn.metadata) == ["traceback_"]
    assert "y = x * 2" in y.grad_fn.metadata["traceback_"][-1]
    assert (x * 2).grad_fn.metadata == {}


def test_the_parent_link_does_not_keep_a_graph_alive(lib):
    class Foo:
        pass

    def scope():
        x = lib.randn(2, 2, requires_grad=True)
        t = x.exp()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                lib.autograd.grad(t, x, lib.ones_like(t), create_graph=True)
        marker = Foo()
        t.grad_fn.metadata[0] = marker
        return t, weakref.ref(marker)

    t, reference = scope()
    assert reference() is not None
    del t
    assert reference() is None


def test_the_warnings_do_not_keep_a_graph_alive(lib):
    class Foo:
        pass

    def scope():
        class Outer(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return Inner.apply(x)

        class Inner(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad + float("nan")

        inp = lib.rand(1, requires_grad=True)
        out = Outer.apply(inp)
        (ginp,) = lib.autograd.grad(out, (inp,), create_graph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Function 'InnerBackward' returned nan "
                                                   "values in its 0th output."), \
                    lib.autograd.detect_anomaly():
                ginp.backward()
        marker = Foo()
        out.grad_fn.metadata[0] = marker
        return out, weakref.ref(marker)

    out, reference = scope()
    assert reference() is not None
    del out
    assert reference() is None


def test_tracegrad_also_names_the_forward_line_in_the_error():
    x = tracegrad.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tracegrad.autograd.detect_anomaly():
            y = x.sqrt()
            with pytest.raises(tracegrad.AutogradError) as info:
                (y * 0).sum().backward()
    assert "y = x.sqrt()" in str(info.value) and "Hint:" in str(info.value)
