"""``loss.backward()`` with no arguments: the root gradient the engine makes itself (ones
of the output's shape and dtype) and the defaults around it, checked on tracegrad and on
torch alike -- the engine makes this root on a short path of its own (engine.backward)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_a_one_element_output_gets_a_ones_gradient_of_its_shape_and_dtype(lib, shape):
    x = lib.tensor(np.full(shape, 3.0), dtype=lib.float64, requires_grad=True)
    y = x * x
    seen = []
    y.register_hook(lambda grad: seen.append(grad))
    y.backward()
    (root,) = seen
    assert tuple(root.shape) == shape and root.dtype == lib.float64
    assert root.tolist() == np.ones(shape).tolist()
    assert root.requires_grad is False and root.grad_fn is None
    assert x.grad.tolist() == np.full(shape, 6.0).tolist()


def test_a_float32_output_gets_a_float32_root(lib):
    x = lib.tensor([2.0], requires_grad=True)
    seen = []
    y = (x * 4).sum()
    y.grad_fn.register_prehook(lambda grads: seen.append(grads[0]))
    y.backward()
    assert seen[0].dtype == lib.float32 and seen[0].item() == 1.0
    assert x.grad.tolist() == [4.0]


def test_the_graph_is_freed_unless_retained(lib):
    x = lib.tensor([2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()  # retained once: a second pass runs, then the graph is freed
    assert x.grad.tolist() == [8.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.backward()


def test_create_graph_retains_the_graph_by_default(lib):
    x = lib.tensor([2.0], requires_grad=True)
    y = (x * x * x).sum()
    with warnings.catch_warnings():  # (the reference-cycle warning: given once a process)
        warnings.simplefilter("ignore")
        y.backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    x.grad = None
    y.backward()  # retain_graph followed create_graph: the graph is still there
    assert x.grad.tolist() == [12.0]


def test_an_output_without_grad_raises_the_engines_error(lib):
    x = lib.tensor([2.0])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        (x * 2).sum().backward()


def test_a_many_element_output_still_needs_a_gradient(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()


def test_a_parameter_as_the_root(lib):
    # a Tensor subclass (the short path takes plain tensors only): a leaf that is its own
    # root gets a ones gradient
    weight = lib.nn.Parameter(lib.tensor([5.0]))
    weight.backward()
    assert weight.grad.tolist() == [1.0]
