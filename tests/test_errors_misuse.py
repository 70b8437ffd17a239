"""Misuse of ops and factories (issue 16): each case runs on tracegrad and, where torch is
installed, on torch. Both must raise, ours an instance of the class torch raises (its
built-in base where torch's class is its own, e.g. torch.linalg.LinAlgError is a
RuntimeError), a tracegrad error class, describing the tensor involved and giving a hint.

A case is ``call(lib)``; ``tensor=False`` marks the factories whose inputs are plain
numbers (there is no tensor to describe).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import pytest

import tracegrad as tg


@dataclass(frozen=True)
class Misuse:
    call: Callable
    tensor: bool = True  # the message must describe a tensor (dtype and shape)


def _m(lib):
    return lib.ones(2, 3)


CASES = {
    # issue 16's list
    "narrow_past_the_end": Misuse(lambda L: L.ones(3).narrow(0, 2, 5)),
    "narrow_start_out_of_range": Misuse(lambda L: L.ones(3).narrow(0, 4, 0)),
    "narrow_negative_length": Misuse(lambda L: L.ones(3).narrow(0, 1, -1)),
    "dot_of_matrices": Misuse(lambda L: L.dot(L.ones(2, 2), L.ones(2, 2))),
    "dot_lengths": Misuse(lambda L: L.ones(3).dot(L.ones(4))),
    "dot_dtypes": Misuse(lambda L: L.dot(L.ones(3), L.ones(3, dtype=L.float64))),
    "expand_minus_one_leading": Misuse(lambda L: L.ones(3).expand(-1, 3)),
    "expand_mismatch": Misuse(lambda L: L.ones(3).expand(2, 4)),
    "expand_too_few_sizes": Misuse(lambda L: L.ones(2, 3).expand(3)),
    "randn_integer_dtype": Misuse(lambda L: L.randn(2, dtype=L.int64), tensor=False),
    "rand_integer_dtype": Misuse(lambda L: L.rand(2, dtype=L.int64), tensor=False),
    "arange_step_zero": Misuse(lambda L: L.arange(0, 5, 0), tensor=False),
    "arange_int_dtype_rounds_step_to_zero": Misuse(
        lambda L: L.arange(0, 2, 0.5, dtype=L.int64), tensor=False),
    "arange_wrong_sign": Misuse(lambda L: L.arange(5, 0, 1), tensor=False),
    "matmul_batched_inner": Misuse(lambda L: L.ones(2, 3, 4) @ L.ones(2, 5, 6)),
    "matmul_batch_broadcast": Misuse(lambda L: L.ones(2, 3, 4) @ L.ones(3, 4, 6)),
    "matmul_folded": Misuse(lambda L: L.ones(2, 3, 4) @ L.ones(5, 6)),
    "matmul_vector_batch": Misuse(lambda L: L.ones(3) @ L.ones(2, 4, 5)),
    "matmul_scalar": Misuse(lambda L: L.matmul(L.tensor(2.0), L.ones(3))),
    "plus_bool": Misuse(lambda L: +L.tensor([True])),
    "negate_bool": Misuse(lambda L: -L.tensor([True, False])),
    "subtract_bools": Misuse(lambda L: L.tensor([True]) - L.tensor([False])),
    "subtract_from_bool": Misuse(lambda L: L.tensor([True]) - 1),
    "subtract_bool": Misuse(lambda L: 1 - L.tensor([True])),
    "ragged_lists": Misuse(lambda L: L.tensor([[1, 2], [3]]), tensor=False),
    "list_beside_number": Misuse(lambda L: L.tensor([[1, 2], 3]), tensor=False),
    "string_data": Misuse(lambda L: L.tensor([1, "a"]), tensor=False),
    "negative_size": Misuse(lambda L: L.zeros(-1), tensor=False),
    # matrix products
    "mm_inner": Misuse(lambda L: L.mm(L.ones(3, 4), L.ones(5, 6))),
    "mm_vector": Misuse(lambda L: L.mm(L.ones(3), L.ones(3, 3))),
    "mm_dtypes": Misuse(lambda L: L.ones(2, 2).mm(L.ones(2, 2, dtype=L.float64))),
    "mv_sizes": Misuse(lambda L: L.mv(L.ones(3, 4), L.ones(5))),
    "bmm_not_batched": Misuse(lambda L: L.bmm(L.ones(3, 4), L.ones(3, 4))),
    "bmm_batches": Misuse(lambda L: L.bmm(L.ones(2, 3, 4), L.ones(3, 4, 6))),
    "addmm_input_shape": Misuse(lambda L: L.addmm(L.ones(2), L.ones(3, 4), L.ones(4, 3))),
    "outer_of_matrix": Misuse(lambda L: L.outer(L.ones(3, 3), L.ones(3))),
    "cross_length": Misuse(lambda L: L.linalg.cross(L.ones(4), L.ones(4))),
    "cdist_columns": Misuse(lambda L: L.cdist(L.ones(3, 4), L.ones(2, 5))),
    "tensordot_sizes": Misuse(lambda L: L.tensordot(L.ones(2, 3), L.ones(4, 5), 1)),
    # linear algebra
    "inv_singular": Misuse(lambda L: L.linalg.inv(L.tensor([[1.0, 2.0], [2.0, 4.0]]))),
    "inv_not_square": Misuse(lambda L: L.linalg.inv(L.ones(2, 3))),
    "inv_integers": Misuse(lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64))),
    "det_of_vector": Misuse(lambda L: L.linalg.det(L.ones(3))),
    "cholesky_not_positive": Misuse(lambda L: L.linalg.cholesky(
        L.tensor([[1.0, 2.0], [2.0, 1.0]]))),
    "solve_singular": Misuse(lambda L: L.linalg.solve(L.tensor([[1.0, 2.0], [2.0, 4.0]]),
                                                      L.ones(2))),
    "eigh_not_square": Misuse(lambda L: L.linalg.eigh(L.ones(2, 3))),
    # elementwise
    "bitwise_and_floats": Misuse(lambda L: _m(L) & _m(L)),
    "shift_floats": Misuse(lambda L: _m(L) << 1),
    "invert_floats": Misuse(lambda L: ~_m(L)),
    "logical_xor_number": Misuse(lambda L: L.logical_xor(_m(L), 0.0)),
    "atan2_number": Misuse(lambda L: L.atan2(_m(L), 2.0)),
    "hypot_integers": Misuse(lambda L: L.hypot(L.tensor([1, 2]), L.tensor([1, 2]))),
    "frac_integers": Misuse(lambda L: L.tensor([1, 2]).frac()),
    "round_decimals_integers": Misuse(lambda L: L.tensor([1, 2]).round(decimals=1)),
    "heaviside_dtypes": Misuse(lambda L: L.heaviside(L.ones(3), L.tensor(1))),
    "integer_floor_divide_by_zero": Misuse(lambda L: L.tensor([1, 2]) // 0),
    "integer_remainder_by_zero": Misuse(lambda L: L.tensor([1, 2]) % L.tensor([0, 1])),
    "maximum_shapes": Misuse(lambda L: L.maximum(L.ones(2), L.ones(3))),
    "clamp_bound_shapes": Misuse(lambda L: L.ones(3).clamp(L.ones(2))),
    "softmax_dim": Misuse(lambda L: L.ones(3).softmax(2)),
    "clamp_without_bounds": Misuse(lambda L: L.clamp(_m(L))),
    "div_rounding_mode": Misuse(lambda L: L.div(_m(L), 2, rounding_mode="round")),
    "lerp_dtypes": Misuse(lambda L: L.lerp(_m(L), _m(L).double(), 0.5)),
    "addcdiv_integers": Misuse(lambda L: L.addcdiv(L.ones(2), L.tensor([1, 2]),
                                                   L.tensor([1, 2]))),
    # reductions, scans, sorting
    "var_of_integers": Misuse(lambda L: L.tensor([1, 2]).var()),
    "mean_of_integers": Misuse(lambda L: L.tensor([1, 2]).mean()),
    "nanmean_of_integers": Misuse(lambda L: L.tensor([1, 2]).nanmean()),
    "prod_over_a_tuple": Misuse(lambda L: _m(L).prod((0, 1))),
    "amax_of_nothing": Misuse(lambda L: L.ones(0).amax()),
    "vector_norm_of_integers": Misuse(lambda L: L.linalg.vector_norm(L.tensor([1, 2]))),
    "topk_too_many": Misuse(lambda L: _m(L).topk(5)),
    "kthvalue_out_of_range": Misuse(lambda L: _m(L).kthvalue(4)),
    "sort_dim_out_of_range": Misuse(lambda L: _m(L).sort(dim=2)),
    "cumsum_dim_out_of_range": Misuse(lambda L: _m(L).cumsum(2)),
    # selection
    "index_select_out_of_range": Misuse(lambda L: _m(L).index_select(0, L.tensor([5]))),
    "index_select_float_index": Misuse(lambda L: _m(L).index_select(0, L.tensor([0.0]))),
    "index_select_matrix_index": Misuse(lambda L: _m(L).index_select(0, L.tensor([[0]]))),
    "index_add_source_size": Misuse(lambda L: _m(L).index_add(0, L.tensor([0, 1, 0]),
                                                               L.ones(2, 3))),
    "index_copy_source_size": Misuse(lambda L: _m(L).index_copy(0, L.tensor([0, 1, 0]),
                                                                L.ones(2, 3))),
    "masked_select_integer_mask": Misuse(lambda L: _m(L).masked_select(L.tensor([1, 0, 1]))),
    "masked_scatter_short_source": Misuse(lambda L: _m(L).masked_scatter(
        _m(L) > 0, L.ones(2))),
    "take_out_of_range": Misuse(lambda L: _m(L).take(L.tensor([10]))),
    "select_out_of_range": Misuse(lambda L: _m(L).select(1, 3)),
    "scatter_reduce_kind": Misuse(lambda L: _m(L).scatter_reduce(
        0, L.zeros(1, 3, dtype=L.int64), _m(L), "bogus")),
    # rearranging
    "flip_repeated_dim": Misuse(lambda L: _m(L).flip(0, 0)),
    "roll_misaligned": Misuse(lambda L: _m(L).roll((1, 2), 0)),
    "rot90_one_dim": Misuse(lambda L: L.ones(3).rot90()),
    "diag_of_3d": Misuse(lambda L: L.diag(L.ones(2, 2, 2))),
    "tril_of_vector": Misuse(lambda L: L.ones(3).tril()),
    "unflatten_sizes": Misuse(lambda L: _m(L).unflatten(1, (2, 2))),
    "split_with_sizes_sum": Misuse(lambda L: _m(L).split_with_sizes([1, 1], 1)),
    "repeat_interleave_counts": Misuse(lambda L: L.ones(3).repeat_interleave(
        L.tensor([1, 2]))),
    # factories and random draws
    "linspace_negative_steps": Misuse(lambda L: L.linspace(0, 1, -1), tensor=False),
    "randint_empty_range": Misuse(lambda L: L.randint(3, 2, (2,)), tensor=False),
    "multinomial_too_many": Misuse(lambda L: L.multinomial(L.ones(2), 3)),
    "multinomial_zero_weights": Misuse(lambda L: L.multinomial(L.zeros(2), 1),
                                       tensor=False),
    "normal_negative_std": Misuse(lambda L: L.normal(L.zeros(2), -L.ones(2))),
    "bernoulli_probability": Misuse(lambda L: L.bernoulli(L.full((2,), 2.0))),
    "allclose_dtypes": Misuse(lambda L: L.allclose(L.ones(2), L.ones(2, dtype=L.int64))),
    "isclose_shapes": Misuse(lambda L: L.isclose(L.ones(2), L.ones(3))),
    "format_vector": Misuse(lambda L: format(L.ones(2), ".2f")),
    "default_dtype_integer": Misuse(lambda L: L.set_default_dtype(L.int64), tensor=False),
}


def _builtin_class(error_class: type) -> type:
    """The most derived built-in exception class in ``error_class``'s ancestry."""
    for cls in error_class.__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def _raised(call, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(lib)
        except Exception as error:  # noqa: BLE001 - what was raised is what is compared
            return error
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_gets_a_clear_tracegrad_error(name):
    case = CASES[name]
    error = _raised(case.call, tg)
    assert error is not None, f"{name}: tracegrad accepted it"
    assert isinstance(error, tg.TracegradError), f"{name}: {type(error).__name__}: {error}"
    message = str(error)
    assert "Hint" in message or "hint" in message, f"{name}: no hint in {message!r}"
    if case.tensor:
        assert any(kind in message for kind in ("float32 [", "float64 [", "int64 [", "bool [")), (
            f"{name}: the message describes no tensor: {message!r}")


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_misuse_raises_what_torch_raises(name):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    theirs = _raised(case.call, torch)
    assert theirs is not None, f"{name}: torch accepts it (the case is wrong)"
    ours = _raised(case.call, tg)
    expected = _builtin_class(type(theirs))
    assert isinstance(ours, expected), (
        f"{name}: torch raises {type(theirs).__name__} ({expected.__name__}): {theirs}; "
        f"tracegrad raised {type(ours).__name__}: {ours}")
