"""The legacy API torch 2.13 still runs, ported from PyTorch's test_autograd.py
(test_volatile_deprecated, test_type_conversions, test_resize_version_bump,
test_set_requires_grad_only_for_floats, test_requires_grad_) plus tests of our own for
Variable, the typed constructors, ``new``/``new_*``, ``resize_``, integer dtypes and the
deprecated arguments.

Each test that is observable on both libraries runs on tracegrad and on torch (``lib``),
so the expectation itself is proven against PyTorch.
"""

from __future__ import annotations

import doctest
import importlib
import itertools
import math
import re
import warnings

import numpy as np
import pytest

import tracegrad


def _caught(function):
    """(result, [(category, message)]) of calling ``function`` with every warning kept."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function()
    return result, [(w.category, str(w.message)) for w in caught]


# -- Variable ----------------------------------------------------------------------------
def test_variable_is_a_new_leaf_over_the_same_storage(lib):
    Variable = lib.autograd.Variable
    t = lib.ones(2)
    v = Variable(t)
    assert type(v) is lib.Tensor and v is not t
    assert isinstance(v, Variable) and isinstance(t, Variable) and isinstance(v, lib.Tensor)
    assert not issubclass(lib.Tensor, Variable)
    t.add_(1)  # same storage and the same version counter
    assert v.tolist() == [2.0, 2.0] and v._version == t._version == 1
    assert (v.requires_grad, v.grad_fn, v.is_leaf) == (False, None, True)
    assert Variable(t, requires_grad=True).requires_grad


def test_variable_of_a_non_leaf_is_detached(lib):
    y = lib.ones(2, requires_grad=True) * 2
    for requires_grad in (False, True):
        v = lib.autograd.Variable(y, requires_grad=requires_grad)
        assert (v.grad_fn, v.is_leaf, v.requires_grad) == (None, True, requires_grad)
    p = lib.nn.Parameter(lib.ones(1))
    assert type(lib.autograd.Variable(p)) is lib.Tensor
    assert lib.autograd.Variable(p).requires_grad is False


def test_variable_volatile_warns_and_has_no_effect(lib):
    t = lib.ones(2)
    for make in (lambda: lib.autograd.Variable(t, volatile=True),
                 lambda: lib.autograd.Variable(t, False, True)):
        v, caught = _caught(make)
        assert caught == [(UserWarning, ("volatile was removed and now has no effect. Use "
                                        "`with torch.no_grad():` instead."))]
        assert v.tolist() == [1.0, 1.0] and not v.requires_grad


def test_volatile_deprecated(lib):
    v = lib.randn(3, 3)
    value, caught = _caught(lambda: v.volatile)
    assert value is False
    assert caught == [(UserWarning, "volatile was removed (Variable.volatile is always False)")]


def test_variable_bad_data_and_empty(lib):
    Variable = lib.autograd.Variable
    for data, kind in (([1, 2], "list"), (3, "int")):
        with pytest.raises(TypeError, match=f"Variable data has to be a tensor, but got {kind}"):
            Variable(data)
    empty = Variable()
    assert tuple(empty.shape) == (0,) and empty.dtype == lib.float32
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        Variable(lib.tensor([1]), requires_grad=True)
    with pytest.raises(TypeError, match="foo"):
        Variable(lib.ones(1), foo=1)


def test_variable_name_and_use_in_a_graph(lib):
    v = lib.autograd.Variable(lib.ones(2), False, False, None, "weights")
    assert v.name == "weights"
    x = lib.autograd.Variable(lib.tensor([1.0, 2.0]), requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_saved_variables_deprecated(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_variables
            assert var1.shape == var2.shape == grad_output.shape
            return grad_output, grad_output

    x = lib.randn((3, 3), requires_grad=True)
    y = lib.randn((3, 3), requires_grad=True)
    _, caught = _caught(lambda: MyFunction.apply(x, y).sum().backward())
    assert (DeprecationWarning, "'saved_variables' is deprecated; use 'saved_tensors'") in caught
    assert x.grad.tolist() == lib.ones(3, 3).tolist()


# -- typed constructors and .type() --------------------------------------------------------
TYPED = [("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
         ("ByteTensor", "uint8"), ("CharTensor", "int8"), ("ShortTensor", "int16"),
         ("IntTensor", "int32"), ("LongTensor", "int64"), ("BoolTensor", "bool")]


@pytest.mark.parametrize("name, dtype", TYPED)
def test_typed_constructor_from_sizes_data_and_nothing(lib, name, dtype):
    cls = getattr(lib, name)
    assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype == getattr(lib, dtype)
    assert cls(lib.Size([4, 1])).shape == (4, 1)
    assert tuple(cls().shape) == (0,) and cls().dtype == getattr(lib, dtype)
    assert cls([1, 0]).dtype == getattr(lib, dtype)
    assert cls([1, 0]).tolist() == [1, 0]
    assert isinstance(cls(2), cls) and isinstance(cls(2), lib.Tensor)
    assert type(cls(2)) is lib.Tensor and not issubclass(cls, lib.Tensor)
    assert cls.dtype == getattr(lib, dtype)
    assert cls(1).type() == f"torch.{name}"
    assert repr(cls) == f"<class '{lib.__name__}.{name}'>"


def test_typed_constructor_conversions_and_aliases(lib):
    assert lib.LongTensor([1.5, 2]).tolist() == [1, 2]
    assert lib.ByteTensor([1, -2]).tolist() == [1, 254]
    assert lib.BoolTensor([1, 0]).tolist() == [True, False]
    assert lib.FloatTensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, not a size
    assert lib.FloatTensor(np.zeros(2)).dtype == lib.float32
    source = lib.ones(2)
    alias = lib.FloatTensor(source)
    assert alias.data_ptr() == source.data_ptr() and alias is not source
    with pytest.raises(TypeError, match=r"expected TensorOptions\(dtype=long int"):
        lib.LongTensor(lib.ones(2))
    assert isinstance(lib.ones(2), lib.FloatTensor)
    assert not isinstance(lib.ones(2, dtype=lib.float64), lib.FloatTensor)
    assert isinstance(lib.nn.Parameter(lib.ones(2)), lib.FloatTensor)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((2,), {"requires_grad": True}, TypeError, "keywords were incorrect: requires_grad"),
    ((2,), {"dtype": "float32"}, TypeError, "keywords were incorrect: dtype"),
    ((3.5,), {}, TypeError, r"new\(\): data must be a sequence \(got float\)"),
    ((True,), {}, TypeError, r"new\(\): data must be a sequence \(got bool\)"),
    ((2, 3.0), {}, TypeError, ("failed to unpack the object at pos 2 with error \"type must "
                              "be tuple of ints,but got float\"")),
    (("ab",), {}, TypeError, r"new\(\): invalid data type 'str'"),
    (([[1, 2], [3]],), {}, ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ((-1,), {}, RuntimeError, r"Trying to create tensor with negative dimension -1: \[-1\]"),
])
def test_tensor_constructor_errors(lib, args, kwargs, error, message):
    if "dtype" in kwargs:
        kwargs = {"dtype": getattr(lib, kwargs["dtype"])}
    with pytest.raises(error, match=message):
        lib.Tensor(*args, **kwargs)


def test_tensor_constructor_is_the_legacy_one(lib):
    assert lib.Tensor(64, 1).shape == (64, 1) and lib.Tensor(64, 1).dtype == lib.float32
    assert lib.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert lib.Tensor([1, 2]).dtype == lib.float32
    assert lib.Tensor(lib.Size([2, 3])).shape == (2, 3)
    assert tuple(lib.Tensor().shape) == (0,)
    assert tuple(lib.Tensor(0).shape) == (0,)
    assert lib.Tensor(range(3)).tolist() == [0.0, 1.0, 2.0]
    assert lib.Tensor(np.int64(3)).shape == (3,)
    assert lib.Tensor(2, 3, device="cpu").shape == (2, 3)
    assert lib.Tensor([lib.tensor(1.0), lib.tensor(2.0)]).tolist() == [1.0, 2.0]
    # another tensor: an alias of any dtype, in the graph when it requires grad
    assert lib.Tensor(lib.ones(2, dtype=lib.float64)).dtype == lib.float64
    assert lib.Tensor(lib.tensor([1, 2])).dtype == lib.int64
    x = lib.ones(2, requires_grad=True)
    alias = lib.Tensor(x)
    assert alias.grad_fn.name() == "AliasBackward0" and alias.requires_grad
    (alias * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    z = lib.zeros(2)
    shared = lib.Tensor(z)
    z.add_(1)
    assert shared.tolist() == [1.0, 1.0] and shared._version == z._version == 1


def test_tensor_constructor_follows_the_default_dtype(lib):
    previous = lib.get_default_dtype()
    lib.set_default_dtype(lib.float64)
    try:
        assert lib.Tensor(2).dtype == lib.float64 and lib.Tensor([1]).dtype == lib.float64
        assert lib.FloatTensor([1]).dtype == lib.float32
    finally:
        lib.set_default_dtype(previous)


def test_type_conversions(lib):
    x = lib.randn(5, 5)
    assert isinstance(x.float(), lib.FloatTensor) and isinstance(x.int(), lib.IntTensor)
    for cls in (lib.DoubleTensor, lib.FloatTensor, lib.IntTensor, lib.ByteTensor):
        for wrap in (True, False):
            # torch's test writes randint(5, (5, 5)); tracegrad's factories (another
            # engineer's area) do not take that overload yet
            y = lib.randint(0, 5, (5, 5), dtype=cls.dtype)
            y = lib.autograd.Variable(y) if wrap else y
            assert isinstance(x.type(cls), cls)
            assert isinstance(x.type_as(y), cls)
            cls_dtype = cls().dtype
            assert isinstance(x.type(cls_dtype), cls)
            assert x.type(cls_dtype).dtype is cls_dtype
            assert y.data_ptr() == y.type(cls).data_ptr()
    for convert in (lambda t: t.double(), lambda t: t.float()):
        for source in (lib.randn(5, 5).float(), lib.randn(5, 5).double()):
            leaf = lib.autograd.Variable(source, requires_grad=True)
            convert(leaf).sum().backward()
            assert leaf.grad.tolist() == lib.ones_like(leaf).tolist()
            assert type(leaf.grad) is type(leaf) and leaf.grad.dtype == leaf.dtype


def test_type_strings_and_conversion_by_name(lib):
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor",
             "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor",
             "uint16": "UInt16Tensor", "uint32": "UInt32Tensor", "uint64": "UInt64Tensor"}
    for dtype, name in names.items():
        assert lib.ones(1, dtype=getattr(lib, dtype)).type() == f"torch.{name}"
    t = lib.ones(2)
    assert t.type("torch.FloatTensor") is t and t.type(lib.FloatTensor) is t
    assert t.type("torch.DoubleTensor").dtype == lib.float64
    assert t.type(lib.DoubleTensor).dtype == lib.float64
    assert t.type(dtype=lib.int32).dtype == lib.int32
    assert t.type(lib.int32, non_blocking=True).dtype == lib.int32
    grad_x = lib.ones(2, requires_grad=True)
    assert grad_x.type(lib.DoubleTensor).grad_fn.name() == "ToCopyBackward0"
    for bad, shown in (("torch.Foo", "torch.Foo"), (int, "int"), (float, "float"),
                       ("torch.float64", "torch.float64")):
        with pytest.raises(ValueError, match=re.escape(f"invalid type: '{shown}'")):
            t.type(bad)


def test_conversions_named_by_legacy_type(lib):
    x = lib.tensor([1.5, -2.0, 300.0])
    assert x.byte().dtype == lib.uint8 and x.char().dtype == lib.int8
    assert x.short().dtype == lib.int16 and x.short().tolist() == [1, -2, 300]
    assert isinstance(x.byte(), lib.ByteTensor) and isinstance(x.char(), lib.CharTensor)


def test_byte_tensor_index_is_a_deprecated_mask(lib):
    x = lib.arange(3.0)
    mask = lib.ByteTensor([1, 0, 1])
    message = ("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
               "torch.bool instead.")
    def warned(caught):  # torch adds where in its C++ source it was raised
        return any(category is UserWarning and text.startswith(message)
                   for category, text in caught)

    picked, caught = _caught(lambda: x[mask])
    assert picked.tolist() == [0.0, 2.0] and warned(caught)
    y = lib.zeros(3)
    _, caught = _caught(lambda: y.__setitem__(mask, lib.tensor([5.0, 6.0])))
    assert y.tolist() == [5.0, 0.0, 6.0] and warned(caught)


# -- new and new_* -------------------------------------------------------------------------
def test_new_uses_this_tensors_dtype(lib):
    t = lib.ones(1, dtype=lib.float64)
    assert tuple(t.new().shape) == (0,) and t.new().dtype == lib.float64
    assert t.new(2, 3).shape == (2, 3) and t.new(2, 3).dtype == lib.float64
    assert t.new([1, 2]).tolist() == [1.0, 2.0] and t.new([1, 2]).dtype == lib.float64
    assert t.new((2, 3)).tolist() == [2.0, 3.0]
    assert t.new(lib.Size([2, 3])).shape == (2, 3)
    assert lib.ones(1, dtype=lib.int64).new([1.5]).tolist() == [1]
    other = lib.zeros(3, dtype=lib.float64)
    assert t.new(other).data_ptr() == other.data_ptr()
    with pytest.raises(TypeError, match=r"expected TensorOptions\(dtype=double"):
        t.new(lib.zeros(3))
    for kwargs in ({"dtype": lib.int64}, {"requires_grad": True}):
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            t.new(2, **kwargs)
    with pytest.raises(TypeError, match=r"data must be a sequence \(got float\)"):
        t.new(3.5)
    y = lib.ones(2, requires_grad=True) * 2
    assert lib.ones(1).new(y).grad_fn.name() == "AliasBackward0"


def test_new_zeros_ones_empty_full(lib):
    t = lib.ones(2, dtype=lib.float64)
    for make in (t.new_zeros, t.new_ones, t.new_empty):
        assert make(2, 3).shape == (2, 3) and make(2, 3).dtype == lib.float64
        assert make((2, 3)).shape == (2, 3) and make([2, 3]).shape == (2, 3)
        assert make(size=(2, 3)).shape == (2, 3) and make([]).shape == ()
        assert make(2, dtype=lib.int64).dtype == lib.int64
        assert make(2, requires_grad=True).requires_grad
        assert make(2, layout=lib.strided, pin_memory=False).shape == (2,)
    assert t.new_zeros(2).tolist() == [0.0, 0.0] and t.new_ones(2).tolist() == [1.0, 1.0]
    assert t.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert lib.zeros(1, dtype=lib.int64).new_full((2,), 3.5).tolist() == [3, 3]
    assert t.new_full((2,), True).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("call, error, message", [
    (lambda t: t.new_zeros(), TypeError, ('new_zeros\\(\\) missing 1 required positional '
                                         'arguments: "size"')),
    (lambda t: t.new_full(2, 3), TypeError, (r"new_full\(\): argument 'size' \(position 1\) "
                                            "must be tuple of ints, not int")),
    (lambda t: t.new_ones(2.0), TypeError, (r"new_ones\(\): argument 'size' \(position 1\) "
                                           "must be tuple of ints, not float")),
    (lambda t: t.new_zeros(-1), RuntimeError, ("Trying to create tensor with negative "
                                              "dimension -1")),
    (lambda t: t.new_zeros(2, dtype=t.new_zeros(1, dtype=t.dtype).long().dtype,
                           requires_grad=True),
     RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"),
])
def test_new_methods_errors(lib, call, error, message):
    with pytest.raises(error, match=message):
        call(lib.ones(2))


def test_new_tensor_copies_and_warns_for_a_tensor(lib):
    t = lib.ones(2)
    assert t.new_tensor([1, 2]).tolist() == [1.0, 2.0]
    assert t.new_tensor([1, 2]).dtype == lib.float32
    assert t.new_tensor([1, 2], dtype=lib.int64).dtype == lib.int64
    made = t.new_tensor([1, 2], requires_grad=True)
    assert made.requires_grad and made.is_leaf
    source = lib.ones(2, dtype=lib.int64)
    copy, caught = _caught(lambda: t.new_tensor(source))
    assert copy.dtype == lib.float32 and copy.data_ptr() != source.data_ptr()
    assert caught == [(UserWarning, ("To copy construct from a tensor, it is recommended to "
                                    "use sourceTensor.detach().clone() or sourceTensor."
                                    "detach().clone().requires_grad_(True), rather than "
                                    "tensor.new_tensor(sourceTensor)."))]
    leaf = lib.ones(2, requires_grad=True)
    copy, _ = _caught(lambda: t.new_tensor(leaf))
    assert not copy.requires_grad and copy.grad_fn is None
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        t.new_tensor([1, 2], dtype=lib.int64, requires_grad=True)


# -- resize_ -------------------------------------------------------------------------------
def test_resize_version_bump(lib):
    x = lib.rand((1,))
    y = lib.randn((3,))
    x.resize_((1, 2))
    assert x._version == 1
    x.resize_as_(y)
    assert x._version == 2
    x.resize_((3,))  # the same shape: a no-op, no bump
    assert x._version == 2
    x.resize_as_(y)
    assert x._version == 2


def test_resize_reads_the_storage_in_order(lib):
    a = lib.arange(6.0).reshape(2, 3)
    assert a.resize_(4).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert a.resize_(2, 3).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]  # storage kept
    assert lib.arange(6.0).resize_((3, 2)).shape == (3, 2)
    assert lib.arange(6.0).resize_([2, 3]).shape == (2, 3)
    assert lib.arange(6.0).resize_(()).shape == ()
    grown = lib.arange(6.0).resize_(8)
    assert grown.shape == (8,) and grown[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    base = lib.arange(6.0)
    assert base[:2].resize_(4).tolist() == [0.0, 1.0, 2.0, 3.0]  # grows into its storage
    view = base[1:3]
    view.resize_(1)
    view.fill_(9)
    assert base.tolist() == [0.0, 9.0, 2.0, 3.0, 4.0, 5.0]
    transposed = lib.arange(6.0).reshape(2, 3).t()
    assert transposed.resize_(6).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert lib.Tensor().resize_(2, 2).shape == (2, 2)
    assert lib.arange(6.0).resize_as_(lib.zeros(2, 3)).shape == (2, 3)


def test_resize_refuses_tensors_that_require_grad(lib):
    for tensor in (lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True) * 2):
        for call in (lambda t: t.resize_(3), lambda t: t.resize_(2),
                     lambda t: t.resize_as_(lib.zeros(3))):
            with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
                call(tensor)
    with lib.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables"):
        lib.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(TypeError, match=r"resize_\(\): argument 'size' \(position 1\) must be "
                                        "tuple of ints, not float"):
        lib.ones(2).resize_(2.0)
    with pytest.raises(TypeError, match=r"resize_as_\(\): argument 'the_template' \(position 1\)"
                                        " must be Tensor, not tuple"):
        lib.ones(2).resize_as_((2, 3))


# -- integer dtypes ------------------------------------------------------------------------
INTEGER_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_DTYPES = INTEGER_DTYPES + ["bool", "float16", "float32", "float64"]


def test_every_integer_dtype_and_its_aliases(lib):
    for name in INTEGER_DTYPES:
        dtype = getattr(lib, name)
        info = np.iinfo(name)
        assert (dtype.is_floating_point, dtype.is_signed, dtype.itemsize, dtype.is_complex) == (
            False, info.min < 0, info.bits // 8, False)
    assert lib.short is lib.int16 and lib.int is lib.int32 and lib.long is lib.int64
    assert lib.half is lib.float16 and lib.float is lib.float32 and lib.double is lib.float64
    assert (lib.bool.is_signed, lib.float16.is_signed, lib.bfloat16.is_floating_point) == (
        False, True, True)
    assert (lib.bfloat16.itemsize, lib.float32.to_complex(), lib.float64.to_real()) == (
        2, lib.complex64, lib.float64)
    assert not hasattr(lib, "char") and not hasattr(lib, "byte")  # torch has neither name


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_tensors_of_every_dtype_without_grad(lib, name):
    dtype = getattr(lib, name)
    t = lib.tensor([1, 0, 1], dtype=dtype)
    assert t.dtype == dtype and not t.requires_grad
    assert t.tolist() == [1, 0, 1] or t.tolist() == [True, False, True]
    assert lib.zeros(2, dtype=dtype).dtype == dtype and lib.ones(2).to(dtype).dtype == dtype
    assert t.is_signed() == dtype.is_signed
    if not dtype.is_floating_point:
        for make in (lambda: t.requires_grad_(),
                     lambda: lib.ones(1, dtype=dtype, requires_grad=True)):
            with pytest.raises(RuntimeError, match="floating point"):
                make()
        assert t.requires_grad_(False) is t


def test_set_requires_grad_only_for_floats(lib):
    # test_set_requires_grad_only_for_floats: requires_grad_() and factories; the
    # attribute form is below.
    for dtype in (lib.int8, lib.int16, lib.int32, lib.int64, lib.uint8, lib.bool):
        a = lib.ones(1, dtype=dtype)
        a.requires_grad = False  # always allowed
        a.requires_grad_(False)
        with pytest.raises(RuntimeError, match="floating point"):
            lib.ones(1, dtype=dtype).requires_grad_()
        with pytest.raises(RuntimeError, match="floating point"):
            lib.ones(1, dtype=dtype, requires_grad=True)
    for dtype in (lib.float16, lib.float32, lib.float64):
        lib.ones(1, dtype=dtype).requires_grad_()
        lib.ones(1, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("lib_name", [
    "tracegrad",  # requires_grad is a property with torch's setter checks (views-inplace)
    pytest.param("torch", marks=pytest.mark.torch)])
def test_set_requires_grad_attribute_only_for_floats(lib_name):
    lib = pytest.importorskip(lib_name)
    a = lib.ones(1, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="floating point"):
        a.requires_grad = True


def test_requires_grad_(lib):
    x = lib.randn(5, 5)
    y = lib.randn(5, 5, requires_grad=True)
    assert x.requires_grad_() is x and x.requires_grad
    assert y.requires_grad_(True) is y and y.requires_grad
    z = x * y
    with pytest.raises(RuntimeError):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert x.requires_grad_(False) is x and not x.requires_grad
    assert y.requires_grad_(False) is y and not y.requires_grad


def _promotion(lib, first, second):
    try:
        return lib.promote_types(getattr(lib, first), getattr(lib, second)).__repr__().split(
            ".")[-1]
    except RuntimeError:
        return "error"


@pytest.mark.torch
def test_promote_types_matches_torch_for_every_pair():
    torch = pytest.importorskip("torch")
    for first, second in itertools.product(ALL_DTYPES, repeat=2):
        assert _promotion(tracegrad, first, second) == _promotion(torch, first, second), (
            first, second)


INTEGER_CASES = {
    "int8+1000 wraps": lambda L: L.ones(2, dtype=L.int8) + 1000,
    "int8 overflow wraps": lambda L: L.ones(2, dtype=L.int8) * 100 + 100,
    "uint8-2 wraps": lambda L: L.ones(2, dtype=L.uint8) - 2,
    "uint8+(-1) wraps": lambda L: L.ones(2, dtype=L.uint8) + (-1),
    "int8<1000 compares wrapped": lambda L: L.ones(2, dtype=L.int8) < 1000,
    "int8==257 compares wrapped": lambda L: L.ones(2, dtype=L.int8) == 257,
    "int8+uint8 is int16": lambda L: L.ones(2, dtype=L.int8) + L.ones(2, dtype=L.uint8),
    "0-dim int8 loses": lambda L: L.ones(2, dtype=L.uint8) + L.tensor(1, dtype=L.int8),
    "0-dim uint16 loses": lambda L: L.ones(2, dtype=L.int8) + L.tensor(1, dtype=L.uint16),
    "0-dim int64 loses": lambda L: L.ones(2, dtype=L.uint8) + L.tensor(1),
    "int16+float scalar": lambda L: L.ones(2, dtype=L.int16) + 1.5,
    "int8/2 true division": lambda L: L.ones(2, dtype=L.int8) / 2,
    "uint16*2": lambda L: L.ones(2, dtype=L.uint16) * 2,
    "uint32+1.5": lambda L: L.ones(2, dtype=L.uint32) + 1.5,
    "-uint8 wraps": lambda L: -L.ones(2, dtype=L.uint8),
    "int8 abs": lambda L: L.tensor([-1, 2], dtype=L.int8).abs(),
    "int16 float": lambda L: L.ones(2, dtype=L.int16).float(),
    "uint8 comparison": lambda L: L.tensor([1, 2], dtype=L.uint8) > 1,
    "bool+0-dim uint8": lambda L: L.ones(2, dtype=L.bool) + L.tensor(1, dtype=L.uint8),
    "int16+float16": lambda L: L.ones(2, dtype=L.int16) + L.ones(2, dtype=L.float16),
    "int8 sum is int64": lambda L: L.ones(2, dtype=L.int8).sum(),
    "uint8 sum is int64": lambda L: L.ones(2, dtype=L.uint8).sum(),
}


def _dtype_name(dtype) -> str:
    return repr(dtype).split(".")[-1]


@pytest.mark.torch
@pytest.mark.parametrize("name", INTEGER_CASES)
def test_integer_arithmetic_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = INTEGER_CASES[name](tracegrad), INTEGER_CASES[name](torch)
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype)
    assert ours.tolist() == theirs.tolist()


def test_integer_arithmetic_wraps_as_torch_does():
    assert (tracegrad.ones(2, dtype=tracegrad.int8) + 1000).tolist() == [-23, -23]
    assert (tracegrad.ones(1, dtype=tracegrad.uint8) - 2).tolist() == [255]
    assert (tracegrad.ones(1, dtype=tracegrad.int8) < 1000).tolist() == [False]
    promoted = tracegrad.ones(1, dtype=tracegrad.int8) + tracegrad.ones(1, dtype=tracegrad.uint8)
    assert promoted.dtype == tracegrad.int16


@pytest.mark.parametrize("case", [
    lambda L: L.ones(2, dtype=L.uint16) + L.ones(2, dtype=L.int8),
    lambda L: L.ones(2, dtype=L.bool) + L.ones(2, dtype=L.uint16),
    lambda L: L.promote_types(L.uint32, L.int64),
], ids=["uint16+int8", "bool+uint16", "promote_types"])
def test_unsigned_promotion_refused_as_torch_does(lib, case):
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not "
                                           "supported, attempted to promote"):
        case(lib)


def test_iinfo_and_finfo(lib):
    for name in INTEGER_DTYPES:
        info, expected = lib.iinfo(getattr(lib, name)), np.iinfo(name)
        assert (info.bits, info.min, info.max, info.dtype) == (
            expected.bits, int(expected.min), int(expected.max), name)
    assert repr(lib.iinfo(lib.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    assert repr(lib.iinfo(lib.int32)) == "iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)"
    for name in ("float16", "float32", "float64"):
        info, expected = lib.finfo(getattr(lib, name)), np.finfo(name)
        assert (info.bits, info.eps, info.max, info.min, info.tiny) == (
            expected.bits, float(expected.eps), float(expected.max), float(expected.min),
            float(expected.tiny))
        assert info.resolution == 10.0 ** -expected.precision  # torch: exact powers of ten
        assert info.smallest_normal == info.tiny and info.dtype == name
    assert lib.finfo().dtype == "float32" and lib.finfo(lib.bfloat16).eps == 0.0078125
    assert repr(lib.finfo(lib.float32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")
    with pytest.raises(TypeError, match=r"torch.iinfo\(\) requires an integer input type"):
        lib.iinfo(lib.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        lib.iinfo(lib.bool)
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input"):
        lib.finfo(lib.int32)


def test_constants(lib):
    assert (lib.inf, lib.pi, lib.e, lib.newaxis) == (math.inf, math.pi, math.e, None)
    assert math.isnan(lib.nan)


def test_dtypes_numpy_cannot_hold_raise_a_clear_error():
    for dtype in (tracegrad.bfloat16, tracegrad.complex64, tracegrad.cfloat):
        with pytest.raises(tracegrad.DTypeError, match="tracegrad does not implement tensors "
                                                       f"of dtype torch.{dtype.name}"):
            tracegrad.zeros(2, dtype=dtype)
    with pytest.raises(tracegrad.DTypeError, match="NumPy.*has no bfloat16 type"):
        tracegrad.ones(2).to(tracegrad.bfloat16)
    with pytest.raises(tracegrad.DTypeError, match="does not implement tensors of dtype "
                                                   "torch.bfloat16"):
        tracegrad.BFloat16Tensor(2)
    assert tracegrad.ones(1).dtype != tracegrad.bfloat16


def test_from_numpy_keeps_every_integer_dtype():
    for name in INTEGER_DTYPES:
        assert tracegrad.from_numpy(np.zeros(2, dtype=name)).dtype == getattr(tracegrad, name)
    with pytest.raises(tracegrad.DTypeError, match="can't convert np.ndarray of type "
                                                   "numpy.complex128"):
        tracegrad.from_numpy(np.zeros(2, dtype=np.complex128))


# -- deprecated arguments of grad and backward --------------------------------------------
def test_grad_only_inputs_is_deprecated(lib):
    x = lib.ones(2, requires_grad=True)
    grads, caught = _caught(lambda: lib.autograd.grad((x * 2).sum(), x, only_inputs=False))
    assert grads[0].tolist() == [2.0, 2.0]
    assert caught == [(FutureWarning, ("only_inputs argument is deprecated and is ignored now "
                                      "(defaults to True). To accumulate gradient for other "
                                      "parts of the graph, please use "
                                      "torch.autograd.backward."))]
    _, caught = _caught(lambda: lib.autograd.grad((x * 2).sum(), x, None, None, False, True))
    assert caught == []


def test_backward_grad_variables_is_deprecated(lib):
    x = lib.ones(2, requires_grad=True)
    _, caught = _caught(lambda: lib.autograd.backward(x * 2, grad_variables=lib.ones(2)))
    assert x.grad.tolist() == [2.0, 2.0]
    assert caught == [(FutureWarning, ("`grad_variables` is deprecated. Use `grad_tensors` "
                                      "instead."))]
    with warnings.catch_warnings(), pytest.raises(
            RuntimeError, match="`grad_tensors` and `grad_variables` \\(deprecated\\) arguments "
                                "both passed to `backward\\(\\)`"):
        warnings.simplefilter("ignore", FutureWarning)
        lib.autograd.backward(x * 2, lib.ones(2), grad_variables=lib.ones(2))


# -- the examples in the docstrings ------------------------------------------------------
@pytest.mark.parametrize("name", ["tracegrad._dtype", "tracegrad._methods.legacy",
                                  "tracegrad._methods.construction",
                                  "tracegrad.autograd.variable", "tracegrad.tensor"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
