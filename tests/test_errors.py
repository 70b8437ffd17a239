"""Every engine error a user can hit, with its message checked (PyTorch's words + ours)."""

from __future__ import annotations

import re
import warnings

import pytest
from tutorial_programs import BadSquare

import tracegrad as tg
from tracegrad.autograd.gradcheck import GradcheckError


def test_saved_tensor_modified_in_place_uses_pytorch_wording():
    x = tg.randn(64, 100, requires_grad=True)
    h = x * 1
    r = h.relu()  # ReluBackward0 saves its output
    r.add_(1)
    with pytest.raises(RuntimeError) as info:
        r.sum().backward()
    message = str(info.value)
    assert message.startswith(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: [torch.FloatTensor [64, 100]], which is output 0 of Relu, is at "
        "version 1; expected version 0 instead. Hint: enable anomaly detection to find the "
        "operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    assert "Hint: " in message
    assert isinstance(info.value, tg.InplaceError)


def test_saved_input_modified_in_place_names_its_producer():
    x = tg.randn(3, requires_grad=True)
    h = x * 2
    y = h.exp()
    z = h * y  # MulBackward0 saves h (output 0 of MulBackward0)
    h.mul_(3)
    with pytest.raises(RuntimeError, match=re.escape(
            "[torch.FloatTensor [3]], which is output 0 of Mul, is at version 1; expected "
            "version 0 instead.")):
        z.sum().backward()


def test_in_anomaly_mode_the_error_names_the_inplace_op_and_its_line():
    with tg.autograd.detect_anomaly():
        x = tg.randn(4, requires_grad=True)
        y = (x * 1).sigmoid()
        y.mul_(2)  # the culprit line
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert "is at version 1; expected version 0 instead." in message
    assert "It was modified by 'mul_' at tests/test_errors.py:" in message
    assert "(y.mul_(2)  # the culprit line)" in message


def test_inplace_on_a_leaf_that_requires_grad():
    w = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "Tensor: float32 [3], operation: sub_. Hint: wrap the update in `with "
            "tracegrad.no_grad():`")):
        w -= 0.1
    with tg.no_grad():
        w -= 0.5  # the optimizer-step idiom is fine
    assert w.tolist() == [0.5, 0.5, 0.5]
    assert w.is_leaf and w.requires_grad


def test_backward_twice_without_retain_graph():
    x = tg.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=re.escape(
            "Trying to backward through the graph a second time (or directly access saved "
            "tensors after they have already been freed).")) as info:
        y.backward()
    assert "Specify retain_graph=True" in str(info.value)
    assert "Node: MulBackward0" in str(info.value)


def test_backward_on_non_scalar_without_gradient():
    x = tg.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "grad can be implicitly created only for scalar outputs")) as info:
        (x * 2).backward()
    assert "float32 [2, 3]" in str(info.value)
    assert "gradient=" in str(info.value)


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        tg.ones(2).sum().backward()


def test_gradient_shape_mismatch():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Mismatch in shape: grad_output[0] has a shape of tracegrad.Size([2]) and "
            "output[0] has a shape of tracegrad.Size([3]).")):
        (x * 2).backward(tg.ones(2))


def test_detect_anomaly_names_node_and_forward_line_on_nan():
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = x.sqrt()  # d sqrt(x)/dx at 0 is inf; times 0 below gives nan
        z = (y * 0).sum()
        with pytest.raises(RuntimeError) as info:
            z.backward()
    message = str(info.value)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in message
    assert "tests/test_errors.py:" in message and "y = x.sqrt()" in message


def test_requires_grad_on_integer_tensor():
    # torch's requires_grad_() says "floating point dtype"; its setter adds "and complex"
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype "
                                           "can require gradients"):
        tg.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        tg.tensor([1, 2]).requires_grad = True


def test_requires_grad_false_on_non_leaf():
    y = tg.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables"):
        y.requires_grad_(False)


def test_numpy_on_tensor_requiring_grad():
    with pytest.raises(RuntimeError, match=re.escape(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()")):
        tg.ones(2, requires_grad=True).numpy()


def test_mm_shape_error_names_both_tensors():
    x = tg.randn(64, 1000)
    w2 = tg.randn(100, 10, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x.mm(w2)
    message = str(info.value)
    assert message.startswith("mat1 and mat2 shapes cannot be multiplied (64x1000 and 100x10): "
                              "inner dimensions 1000 and 100 differ")
    assert "input 0: float32 [64, 1000], leaf" in message
    assert "input 1: float32 [100, 10], leaf" in message
    assert "Hint:" in message
    assert isinstance(info.value, tg.ShapeError)


def test_mm_dtype_error():
    with pytest.raises(RuntimeError, match=re.escape(
            "expected m1 and m2 to have the same dtype, but got: float != double")):
        tg.ones(2, 2).mm(tg.ones(2, 2, dtype=tg.float64))


def test_broadcast_error_names_shapes():
    with pytest.raises(RuntimeError, match=re.escape(
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
            "dimension 1")):
        tg.ones(2, 3) + tg.ones(2, 4)


def test_view_shape_error():
    with pytest.raises(RuntimeError, match=re.escape("shape '[5]' is invalid for input of "
                                                     "size 6")):
        tg.ones(2, 3).view(5)


def test_dimension_out_of_range():
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)")):
        tg.ones(2, 3).sum(2)


def test_gradcheck_warns_for_non_double_inputs():
    x = tg.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.autograd.gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)
    assert any("is not a double precision floating point" in str(w.message) for w in caught)


def test_gradcheck_failure_names_output_input_and_worst_element():
    x = tg.tensor([1.0, 2.0, 4.0], dtype=tg.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        tg.autograd.gradcheck(BadSquare.apply, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)
    message = str(info.value)
    assert isinstance(info.value, GradcheckError)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "The worst element is d output[2] / d input[2]: analytical 12 vs numerical 8" \
        in message
    assert tg.autograd.gradcheck(BadSquare.apply, (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to "
                                         "require gradient"):
        tg.autograd.gradcheck(lambda t: t * 2, (tg.ones(2, dtype=tg.float64),))


def test_inplace_on_view_of_leaf():
    x = tg.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        x[1:3].mul_(2)


def test_inplace_through_reshape_view_rebases_the_base():
    x = tg.ones(4, requires_grad=True)
    y = x * 1
    y.view(2, 2)[0].mul_(2)  # supported, as in torch: y's history goes through CopySlices
    assert y.grad_fn.name() == "torch::autograd::CopySlices"  # PyTorch's name()
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0]


def test_item_on_many_elements():
    with pytest.raises(ValueError, match="a Tensor with 3 elements cannot be converted to "
                                         "Scalar"):
        tg.ones(3).item()


def test_bool_of_many_elements():
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value "
                                           "is ambiguous"):
        bool(tg.ones(3))
