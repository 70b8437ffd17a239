"""Grad modes (no_grad, enable_grad, set_grad_enabled, inference_mode) as PyTorch has them --
as context managers, as decorators (generators included), and per thread -- and autograd
from several threads at once.

Ported from PyTorch's test/test_autograd.py (test_no_grad*, test_set_grad*,
test_grad_mode_*, test_enable_grad_*, TestAutogradInferenceMode's mode tests,
TestMultithreadAutograd) in our own words; each runs on tracegrad and on torch.
"""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest

import tracegrad
from tracegrad.autograd import events


def close(a, b) -> bool:
    """Equal up to float32 rounding (relative to the size of the values)."""
    return bool((a - b).abs().max() <= 1e-5 * (1 + b.abs().max()))


# -- as context managers and decorators ---------------------------------------------------
def test_no_grad_as_context_and_decorator(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = lib.ones(5, 5) * 4
    with lib.no_grad():
        w = x + y

    def adder(a, b):
        return a + b

    for decorated in (lib.no_grad()(adder), lib.no_grad(adder)):
        z = decorated(x, y)
        assert not w.requires_grad and w.grad_fn is None
        assert not z.requires_grad and z.grad_fn is None
        with pytest.raises(RuntimeError):
            z.backward(lib.ones(5, 5))
    with lib.no_grad():
        assert not lib.is_grad_enabled()
        decorated(x, y)
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()


def test_custom_functions_respect_no_grad(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = lib.ones(5, 5, requires_grad=True)
    with lib.no_grad():
        y = AddOne.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_enable_grad_without_parentheses(lib):
    x = lib.ones(1, requires_grad=True)

    @lib.enable_grad
    def doubler(a):
        return a * 2

    with lib.no_grad():
        z = doubler(x)
    assert z.requires_grad


def test_decorating_a_class_is_deprecated(lib):
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @lib.no_grad()
        class Foo:
            def __init__(self) -> None:
                assert not lib.is_grad_enabled()

            def method(self):
                assert lib.is_grad_enabled()  # only the constructor is decorated

    Foo().method()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @lib.no_grad()
        def function():
            assert not lib.is_grad_enabled()

        class Bar:
            @lib.no_grad()
            def __init__(self) -> None:
                assert not lib.is_grad_enabled()

            @lib.no_grad()
            def method(self):
                assert not lib.is_grad_enabled()

        function()
        Bar().method()
    assert caught == []


def test_set_grad_enabled_as_context_and_call(lib):
    x = lib.tensor([1.0], requires_grad=True)
    with lib.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with lib.set_grad_enabled(True):
        assert (x * 2).requires_grad
    with lib.set_grad_enabled(False):
        lib.set_grad_enabled(True)  # takes effect at once ...
        assert (x * 2).requires_grad
    assert lib.is_grad_enabled()  # ... and the with block restores what was before it
    lib.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        lib.set_grad_enabled(True)
    assert repr(lib.set_grad_enabled(True)).endswith("set_grad_enabled(mode=True)")
    with pytest.raises(TypeError, match="must be bool, not int"):
        lib.set_grad_enabled(1)
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("as_decorator", [True, False])
def test_set_grad_enabled_as_decorator_leaves_the_caller_alone(lib, as_decorator):
    with lib.enable_grad():
        if as_decorator:
            @lib.set_grad_enabled(False)
            def inner(a):
                return a.sin()
        else:
            def inner(a):
                return a.sin()

            mode = lib.set_grad_enabled(False)
            assert not lib.is_grad_enabled()
            inner = mode(inner)  # decorating undoes the call's own effect
        assert lib.is_grad_enabled()
        assert not inner(lib.zeros(1, requires_grad=True)).requires_grad
        assert lib.is_grad_enabled()


# -- generators and coroutines ------------------------------------------------------------
def test_decorated_generators_hold_the_mode_at_every_step(lib):
    @lib.no_grad()
    def gen_no_grad():
        for index in range(10):
            assert not lib.is_grad_enabled()
            yield index

    @lib.enable_grad()
    def gen_enable_grad():
        for index in range(10):
            assert lib.is_grad_enabled()
            yield index

    with lib.enable_grad():
        for _ in gen_no_grad():
            assert lib.is_grad_enabled()
    with lib.no_grad():
        for _ in gen_enable_grad():
            assert not lib.is_grad_enabled()


def test_decorators_nest_through_recursion(lib):
    @lib.enable_grad()
    def enabling(depth):
        assert lib.is_grad_enabled()
        if depth > 0:
            disabling(depth - 1)
            assert lib.is_grad_enabled()

    @lib.no_grad()
    def disabling(depth):
        assert not lib.is_grad_enabled()
        if depth > 0:
            enabling(depth - 1)
            assert not lib.is_grad_enabled()

    def enabling_block(depth):
        with lib.enable_grad():
            assert lib.is_grad_enabled()
            if depth > 0:
                disabling_block(depth - 1)
                assert lib.is_grad_enabled()

    def disabling_block(depth):
        with lib.no_grad():
            assert not lib.is_grad_enabled()
            if depth > 0:
                enabling_block(depth - 1)
                assert not lib.is_grad_enabled()

    for outer in (lib.enable_grad, lib.no_grad):
        with outer():
            before = lib.is_grad_enabled()
            enabling(10)
            enabling_block(10)
            assert lib.is_grad_enabled() == before


def test_a_generator_driven_by_send_keeps_its_mode(lib):
    @lib.no_grad()
    def coro_no_grad(count=10):
        assert not lib.is_grad_enabled()
        for index in range(count):
            assert not lib.is_grad_enabled()
            received = yield index
            assert not lib.is_grad_enabled()
            assert received == index
        assert not lib.is_grad_enabled()

    with lib.enable_grad():
        coro, received = coro_no_grad(), None
        try:
            while True:
                assert lib.is_grad_enabled()
                received = coro.send(received)
                assert lib.is_grad_enabled()
        except StopIteration:
            pass


def test_exceptions_thrown_into_a_decorated_generator(lib):
    class Recoverable(Exception):
        pass

    class Secondary(Exception):
        pass

    @lib.no_grad()
    def recovers():
        raised = False
        for index in range(10):
            try:
                assert not lib.is_grad_enabled()
                yield -index if raised else index
            except Recoverable:
                assert not lib.is_grad_enabled()
                raised = True

    @lib.no_grad()
    def gives_up():
        for index in range(10):
            try:
                yield index
            except Recoverable:
                assert not lib.is_grad_enabled()
                raise Secondary from None

    with lib.enable_grad():
        coro = recovers()
        assert next(coro) == 0
        try:
            while True:
                assert coro.throw(Recoverable) < 0
                assert lib.is_grad_enabled()
        except StopIteration:
            pass
        coro = gives_up()
        assert next(coro) == 0
        with pytest.raises(Secondary):
            coro.throw(Recoverable)
        assert lib.is_grad_enabled()


def test_closing_a_decorated_generator_runs_its_cleanup_in_its_mode(lib):
    state = set()

    @lib.no_grad()
    def coro_no_grad():
        for index in range(10):
            try:
                yield index
            except GeneratorExit:
                assert not lib.is_grad_enabled()
                state.add("GeneratorExit")
                raise

    with lib.enable_grad():
        coro = coro_no_grad()
        for _ in range(5):
            next(coro)
        coro.close()
        assert lib.is_grad_enabled()
    assert "GeneratorExit" in state


def test_async_functions_get_the_mode_only_when_called(lib):
    # As in PyTorch: the decorator wraps the call, which only makes the coroutine object;
    # its body runs later, in the event loop's mode.
    x = lib.ones(2, requires_grad=True)

    @lib.no_grad()
    async def double(a):
        await asyncio.sleep(0)
        return (a * 2).requires_grad

    assert asyncio.run(double(x)) is True


# -- inference_mode ----------------------------------------------------------------------
def test_inference_mode_as_context(lib):
    assert not lib.is_inference_mode_enabled()
    with lib.inference_mode():
        assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        with lib.inference_mode(False):
            assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
        assert lib.is_inference_mode_enabled()
    assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()
    with lib.no_grad(), lib.inference_mode(False):
        assert lib.is_grad_enabled()  # inference_mode(False) turns grad mode on


@pytest.mark.parametrize("form", ["no_parentheses", "mode_keyword", "True", "False"])
def test_inference_mode_as_decorator(lib, form):
    expected = form != "False"

    def func(a):
        assert lib.is_inference_mode_enabled() == expected
        return a * a

    decorated = {"no_parentheses": lambda: lib.inference_mode(func),
                 "mode_keyword": lambda: lib.inference_mode(mode=func),
                 "True": lambda: lib.inference_mode(True)(func),
                 "False": lambda: lib.inference_mode(False)(func)}[form]()
    for requires_grad in (True, False):
        out = decorated(lib.ones(1, 2, 3, requires_grad=requires_grad))
        assert out.requires_grad == (requires_grad and not expected)


def test_set_multithreading_enabled(lib):
    autograd = lib.autograd
    with autograd.set_multithreading_enabled(False):
        assert not autograd.is_multithreading_enabled()
    assert autograd.is_multithreading_enabled()
    with autograd.set_multithreading_enabled(False):
        autograd.set_multithreading_enabled(True)
        assert autograd.is_multithreading_enabled()
    assert autograd.is_multithreading_enabled()
    autograd.set_multithreading_enabled(False)
    assert not autograd.is_multithreading_enabled()
    autograd.set_multithreading_enabled(True)


# -- threads -----------------------------------------------------------------------------
def run_threads(function, count: int = 8, args=()) -> list:
    """Run ``function(index, *args)`` in ``count`` threads at once (a barrier lines them
    up), re-raise the first error, return the results in thread order."""
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def body(index):
        try:
            barrier.wait()
            results[index] = function(index, *args)
        except BaseException as error:  # noqa: BLE001 - handed to the main thread
            errors.append(error)

    threads = [threading.Thread(target=body, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def test_errors_in_threads_reach_the_test():
    def fail(index):
        raise AssertionError(f"thread {index}")

    with pytest.raises(AssertionError, match="thread"):
        run_threads(fail)


def test_threads_each_run_forward_and_backward_on_their_own_graphs(lib):
    def train(index):
        results = []
        for step in range(20):
            x = lib.full((5, 5), float(index + step), requires_grad=True)
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
            results.append(close(x.grad, x + 3.5))
        return all(results)

    assert all(run_threads(train))


def test_threads_accumulating_into_one_leaf_add_up(lib):
    x = lib.ones(5, 5, requires_grad=True)

    def train(index):
        for _ in range(10):
            ((x + 3) * (x + 4) * 0.5).sum().backward()

    run_threads(train, count=6)
    assert close(x.grad, 60 * (x + 3.5))

    def grads(index):
        (g,) = lib.autograd.grad(((x + 3) * (x + 4) * 0.5).sum(), x)
        return close(g, x + 3.5)

    assert all(run_threads(grads))


def test_no_grad_in_one_thread_does_not_reach_another(lib):
    x = lib.ones(3, requires_grad=True)
    inside = threading.Event()
    done = threading.Event()
    seen = []

    def no_grad_thread():
        with lib.no_grad():
            inside.set()
            done.wait(10)

    def grad_thread():
        inside.wait(10)
        seen.extend((x * 2).requires_grad for _ in range(50))
        done.set()

    threads = [threading.Thread(target=no_grad_thread), threading.Thread(target=grad_thread)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen and all(seen)
    assert lib.is_grad_enabled()


def test_a_new_thread_starts_with_pytorchs_defaults(lib):
    seen = {}

    def read():
        seen["grad"] = lib.is_grad_enabled()
        seen["inference"] = lib.is_inference_mode_enabled()

    with lib.no_grad():
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    assert seen == {"grad": True, "inference": False}

    with lib.inference_mode():
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    assert seen == {"grad": True, "inference": False}


def test_backward_does_not_turn_grad_mode_off_in_other_threads(lib):
    started, finish = threading.Event(), threading.Event()
    seen = []

    class Slow(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            started.set()
            finish.wait(10)  # backward (grad mode off in this thread) is under way
            return grad

    def backward_thread():
        Slow.apply(lib.ones(2, requires_grad=True)).sum().backward()

    thread = threading.Thread(target=backward_thread)
    thread.start()
    started.wait(10)
    seen.append(lib.is_grad_enabled())
    seen.append((lib.ones(2, requires_grad=True) * 2).requires_grad)
    finish.set()
    thread.join()
    assert seen == [True, True]


def test_the_main_threads_modes_survive_threads(lib):
    def toggle(index):
        for _ in range(50):
            with lib.no_grad():
                pass
            lib.set_grad_enabled(index % 2 == 0)
        x = lib.ones(2, requires_grad=True)
        with lib.enable_grad():
            (x * x).sum().backward()
        lib.set_grad_enabled(True)  # a thread's last word must not reach the main thread

    with lib.no_grad():
        run_threads(toggle)
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()


def test_saved_tensor_hooks_belong_to_the_thread_that_set_them(lib):
    packed = []
    seen = {}

    def other_thread():
        x = lib.ones(2, requires_grad=True)
        y = x * x
        seen["other"] = len(packed)
        y.sum().backward()

    with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t,
                                                lambda t: t):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        x = lib.ones(2, requires_grad=True)
        x * x
    assert seen == {"other": 0}
    assert len(packed) == 2


def test_anomaly_mode_is_process_wide(lib):
    seen = {}

    def read():
        seen["anomaly"] = lib.is_anomaly_enabled()
        seen["check_nan"] = lib.is_anomaly_check_nan_enabled()

    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    assert seen == {"anomaly": True, "check_nan": False}
    assert not lib.is_anomaly_enabled()


def test_threads_sharing_a_graph_need_retain_graph(lib):
    outcomes = []

    def no_retain(index, y):
        try:
            y.sum().backward()
            outcomes.append("ok")
        except RuntimeError as error:
            assert "Specify retain_graph=True" in str(error)
            outcomes.append("raised")

    x = lib.ones(5, 5, requires_grad=True)
    y = x + x ** 2
    run_threads(no_retain, count=5, args=(y,))
    assert "ok" in outcomes and len(outcomes) == 5

    x = lib.ones(5, 5, requires_grad=True)
    y = x + x ** 2

    def retain(index, y):
        y.sum().backward(retain_graph=True)

    run_threads(retain, count=5, args=(y,))
    assert close(x.grad, 5 * (2 * x + 1))


def test_multi_grad_hooks_count_each_threads_backward(lib):
    t1, t2, t3, t4 = (lib.rand(2, requires_grad=True) for _ in range(4))
    lock = threading.Lock()
    calls = []

    def hook(grads):
        with lock:
            calls.append([grad is not None for grad in grads])

    handle = lib.autograd.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = (t2 * t3).sum()

    def backward(index):
        out.backward(inputs=(t2, t3), retain_graph=True)

    run_threads(backward, count=5)
    assert calls == [[False, True, True, False]] * 5
    handle.remove()

    any_calls = []
    lib.autograd.graph.register_multi_grad_hook(
        (t1, t2, t3, t4), lambda grad: any_calls.append(1), mode="any")
    run_threads(backward, count=5)
    assert len(any_calls) == 5


def test_a_recording_sees_only_its_own_thread():
    x = tracegrad.ones(3, requires_grad=True)
    stop = threading.Event()
    other_errors = []

    def other_thread():
        try:
            while not stop.is_set():
                w = tracegrad.ones(3, requires_grad=True)
                (w * 2 + 1).sum().backward()
        except BaseException as error:  # noqa: BLE001 - checked below
            other_errors.append(error)

    thread = threading.Thread(target=other_thread)
    thread.start()
    try:
        with tracegrad.record() as trace:
            for _ in range(20):
                loss = (x * 3).sum()
                loss.backward()
    finally:
        stop.set()
        thread.join()
    assert other_errors == []
    assert len(trace.passes) == 20
    names = {trace.node(step.node).name for backward_pass in trace.passes
             for step in backward_pass.steps}
    assert names == {"SumBackward0", "MulBackward0", "AccumulateGrad"}  # no AddBackward0
    assert events.listener is None


def test_a_recording_in_another_thread_does_not_see_this_one():
    recorded = {}
    ready, finished = threading.Event(), threading.Event()

    def recording_thread():
        with tracegrad.record() as trace:
            ready.set()
            finished.wait(10)
        recorded["trace"] = trace

    thread = threading.Thread(target=recording_thread)
    thread.start()
    ready.wait(10)
    x = tracegrad.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    finished.set()
    thread.join()
    assert recorded["trace"].passes == []
    assert len(recorded["trace"].nodes) == 0
    assert close(x.grad, tracegrad.full((3,), 2.0))


def test_many_threads_read_grad_at_once(lib):
    for _ in range(5):
        tensor = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (tensor ** 2).sum().backward()
        results = run_threads(lambda index, t: t.grad, count=4, args=(tensor,))
        assert all(result is tensor.grad for result in results)


def test_one_threads_failing_backward_does_not_disturb_the_others(lib):
    t2, t3 = lib.rand(2, requires_grad=True), lib.rand(2, requires_grad=True)
    lock = threading.Lock()
    backward_calls, errors, hook_calls = [0], [], []

    class FailOnce(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            with lock:
                backward_calls[0] += 1
                first = backward_calls[0] == 1
            if first:
                raise RuntimeError("error message")
            return grad

    handle = lib.autograd.graph.register_multi_grad_hook(
        (t2, t3), lambda grads: hook_calls.append([g is not None for g in grads]))
    out = (FailOnce.apply(t2) * t3).sum()

    def backward(index):
        try:
            out.backward(inputs=(t2, t3), retain_graph=True)
        except RuntimeError:
            with lock:
                errors.append(index)

    run_threads(backward, count=5)
    assert len(errors) == 1
    assert hook_calls == [[True, True]] * 4
    handle.remove()


def test_an_error_in_backward_keeps_its_traceback(lib):
    import traceback

    class Foo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp

        @staticmethod
        def backward(ctx, *grad):
            raise ValueError("something")

    t = lib.rand(10, requires_grad=True)
    with pytest.raises(ValueError) as info:
        Foo.apply(t).sum().backward()
    assert 'raise ValueError("something")' in "".join(traceback.format_tb(info.tb))


def test_the_module_scope_stack_is_per_thread():
    from tracegrad.autograd import module_scope

    seen = {}
    module_scope.push("encoder")
    try:
        thread = threading.Thread(target=lambda: seen.update(scope=module_scope.current_scope()))
        thread.start()
        thread.join()
        assert module_scope.current_scope() == "encoder"
    finally:
        module_scope.pop()
    assert seen == {"scope": None}
