"""Value-only functions against torch 2.13: factories, comparisons and logic, sort indices,
selection by value, formatting. Each case is written once as ``call(lib)`` and runs with
``lib = tracegrad`` and ``lib = torch``; results must agree in values, shape and dtype.

(Functions with gradients are in test_ops_gradients.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def _data(lib):
    return lib.tensor([[3.0, -1.0, 2.0, 0.0], [0.5, 5.0, 5.0, -2.5], [1.0, 1.0, -1.0, 7.0]])


def _ints(lib):
    return lib.tensor([[3, 1, 2], [0, 5, 5], [-2, 4, 1]])


VALUE_CASES = {
    # factories and dtype inference
    "arange_int": lambda L: L.arange(5),
    "arange_float": lambda L: L.arange(0, 1, 0.1),
    "arange_mixed": lambda L: L.arange(1, 4.5),
    "arange_negative_step": lambda L: L.arange(5, -3, -2),
    "arange_tensor_end": lambda L: L.arange(L.tensor(4)),
    "arange_int_dtype_float_step": lambda L: L.arange(0, 5.5, 1.5, dtype=L.int64),
    "arange_int_dtype_float_start": lambda L: L.arange(0.5, 3, 1, dtype=L.int64),
    "linspace": lambda L: L.linspace(-1, 1, 9),
    "linspace_double": lambda L: L.linspace(0, 10, 11, dtype=L.float64),
    "linspace_int": lambda L: L.linspace(0, 1, 5, dtype=L.int64),
    "linspace_one": lambda L: L.linspace(3, 8, 1),
    "logspace": lambda L: L.logspace(0, 3, 4),
    "logspace_base2": lambda L: L.logspace(0, 4, 5, base=2),
    "eye": lambda L: L.eye(3),
    "eye_rect_int": lambda L: L.eye(2, 4, dtype=L.int64),
    "full_int": lambda L: L.full((2, 2), 3),
    "full_bool": lambda L: L.full((2,), True),
    "full_float": lambda L: L.full([2, 1], 1.5),
    "zeros_like_dtype": lambda L: L.zeros_like(_ints(L), dtype=L.float64),
    "ones_like": lambda L: L.ones_like(_data(L)),
    "full_like": lambda L: L.full_like(_ints(L), 7),
    "tensor_bools_and_ints": lambda L: L.tensor([True, 2, 3]),
    "tensor_nested_floats": lambda L: L.tensor([[1, 2.5], [3, 4]]),
    "tensor_of_scalars": lambda L: L.tensor([L.tensor(1.5), L.tensor(2.0)]),
    "tensor_empty": lambda L: L.tensor([]),
    "tensor_double_list": lambda L: L.tensor([0.1, 0.2], dtype=L.float64),
    "scalar_tensor": lambda L: L.scalar_tensor(3),
    # elementwise without gradients
    "floor_divide_ints": lambda L: L.floor_divide(_ints(L), 2),
    "remainder_ints": lambda L: _ints(L) % 3,
    "rmod": lambda L: 7 % L.tensor([2, 3, -4]),
    "fmod_ints": lambda L: L.fmod(_ints(L), -2),
    "div_trunc_ints": lambda L: L.div(_ints(L), -2, rounding_mode="trunc"),
    "div_floor_ints": lambda L: _ints(L).div(-2, rounding_mode="floor"),
    "true_div_ints": lambda L: _ints(L) / 2,
    "round_decimals": lambda L: L.round(L.tensor([1.2345, -2.5, 2.5, 0.125]), decimals=2),
    "round_half_even": lambda L: L.tensor([0.5, 1.5, 2.5, -0.5]).round(),
    "sign_ints": lambda L: _ints(L).sign(),
    "abs_ints": lambda L: _ints(L).abs(),
    "log2_ints": lambda L: L.log2(L.tensor([1, 2, 8])),
    "erf_float32": lambda L: L.erf(L.linspace(-3, 3, 13)),
    "erfinv_float32": lambda L: L.erfinv(L.linspace(-0.99, 0.99, 9)),
    "nan_to_num": lambda L: L.nan_to_num(L.tensor([float("nan"), float("inf"), -float("inf"),
                                                   1.0])),
    "heaviside": lambda L: L.heaviside(L.tensor([-1.0, 0.0, 2.0]), L.tensor(0.5)),
    "lshift": lambda L: L.tensor([1, 2, 3]) << 2,
    "rshift_scalar_first": lambda L: 64 >> L.tensor([1, 2, 3]),
    "bitwise_and_bool": lambda L: L.tensor([True, False, True]) & L.tensor([True, True, False]),
    "bitwise_xor_ints": lambda L: L.bitwise_xor(_ints(L), 3),
    "bitwise_not": lambda L: L.bitwise_not(L.tensor([0, 5, -3])),
    "invert_bool": lambda L: ~L.tensor([True, False]),
    # comparisons and logic
    "eq_scalar": lambda L: L.eq(_data(L), 5.0),
    "greater_equal": lambda L: L.greater_equal(_data(L), 1.0),
    "ne_broadcast": lambda L: _data(L).ne(L.tensor([3.0, 1.0, 2.0, 0.0])),
    "logical_and": lambda L: L.logical_and(_data(L), _ints(L)[:, :1]),
    "logical_or": lambda L: _data(L).logical_or(L.zeros(4)),
    "logical_xor": lambda L: L.logical_xor(L.tensor([1, 0, 2]), L.tensor([0, 0, 3])),
    "logical_not": lambda L: L.logical_not(_data(L)),
    "isclose": lambda L: L.isclose(L.tensor([1.0, 2.0, float("nan")]),
                                   L.tensor([1.0 + 1e-9, 2.1, float("nan")]), equal_nan=True),
    "allclose": lambda L: L.allclose(_data(L), _data(L) + 1e-9),
    "allclose_far": lambda L: _data(L).allclose(_data(L) + 1),
    "equal": lambda L: L.equal(_data(L), _data(L)),
    "equal_shape": lambda L: L.equal(L.ones(2), L.ones(3)),
    "isneginf": lambda L: L.isneginf(L.tensor([-float("inf"), 1.0])),
    "signbit": lambda L: L.signbit(L.tensor([-0.0, 0.0, -2.0])),
    "where_scalars": lambda L: L.where(_data(L) > 0, 1.0, -1.0),
    "where_scalar_other": lambda L: L.where(_data(L) > 0, _data(L), 0.0),
    "where_single": lambda L: L.where(_data(L) > 2),
    "any_dims": lambda L: L.any(_data(L) > 4, dim=(0, 1)),
    "all_keepdims": lambda L: (_data(L) > -3).all(dim=1, keepdims=True),
    "any_uint8": lambda L: L.tensor([0, 1], dtype=L.uint8).any(),
    "count_nonzero": lambda L: L.count_nonzero(_data(L), dim=0),
    # reductions with NumPy's names
    "sum_axis": lambda L: _data(L).sum(axis=1, keepdims=True),
    "mean_dtype": lambda L: L.mean(_ints(L), dtype=L.float64),
    "prod_ints": lambda L: _ints(L).prod(1),
    "cumsum_ints": lambda L: _ints(L).cumsum(0),
    "cumprod_dtype": lambda L: L.cumprod(_ints(L), 1, dtype=L.float64),
    "argmax_keepdim": lambda L: _data(L).argmax(1, keepdim=True),
    "nanmean": lambda L: L.tensor([1.0, float("nan"), 3.0]).nanmean(),
    "median_even": lambda L: L.tensor([4.0, 1.0, 3.0, 2.0]).median(),
    "median_nan": lambda L: L.tensor([1.0, float("nan"), 3.0]).median(),
    "nanmedian": lambda L: L.tensor([[1.0, float("nan"), 3.0]]).nanmedian(1),
    "median_ints": lambda L: _ints(L).median(0),
    "mode": lambda L: L.tensor([[3.0, 1.0, 3.0, 1.0, 2.0], [5, 5, 5, 4, 4]]).mode(1),
    "aminmax": lambda L: L.aminmax(_data(L), dim=0),
    "var_ints_error_free": lambda L: L.var(_data(L), 0, correction=0),
    # sorting and searching
    "sort_ties_descending": lambda L: L.tensor([1.0, 3.0, 1.0, 3.0, 2.0]).sort(
        descending=True),
    "sort_nan": lambda L: L.tensor([float("nan"), 1.0, 2.0]).sort(),
    "sort_nan_descending": lambda L: L.tensor([float("nan"), 1.0, 2.0]).sort(descending=True),
    "argsort_stable": lambda L: L.argsort(L.tensor([2, 1, 2, 1, 0]), stable=True),
    "argsort_descending": lambda L: _ints(L).argsort(1, descending=True),
    # (ties among the k picked may come in another order than torch's partial sort gives;
    # the data here has none)
    "topk_smallest": lambda L: (_data(L) + L.arange(4) * 0.01).topk(2, largest=False),
    "kthvalue": lambda L: L.kthvalue(_data(L) + L.arange(4) * 0.01, 2, 1),
    "msort_ints": lambda L: _ints(L).msort(),
    "unique": lambda L: L.unique(L.tensor([3, 1, 3, 2, 1])),
    "unique_inverse_counts": lambda L: L.unique(L.tensor([3, 1, 3, 2]), return_inverse=True,
                                                return_counts=True),
    "unique_dim": lambda L: L.unique(L.tensor([[1, 2], [1, 2], [0, 4]]), dim=0),
    "unique_consecutive": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 1]),
                                                         return_counts=True),
    "bucketize": lambda L: L.bucketize(L.tensor([[0.5, 3.0, 6.0], [3.0, 3.0, 3.0]]),
                                       L.tensor([1.0, 3.0, 5.0])),
    "bucketize_right": lambda L: L.bucketize(L.tensor([0.5, 3.0, 6.0]),
                                             L.tensor([1.0, 3.0, 5.0]), right=True),
    "searchsorted": lambda L: L.searchsorted(L.tensor([1.0, 3.0, 5.0]), L.tensor([3.0, 6.0])),
    "searchsorted_rows": lambda L: L.searchsorted(L.tensor([[1.0, 2, 3], [2, 4, 6]]),
                                                  L.tensor([[2.0], [5.0]]), side="right"),
    "searchsorted_int32": lambda L: L.searchsorted(L.tensor([1, 3]), L.tensor([2]),
                                                   out_int32=True),
    "isin": lambda L: L.isin(L.tensor([1, 2, 3]), L.tensor([2, 5])),
    "isin_scalar": lambda L: L.isin(L.tensor([1, 2, 3]), 2),
    "isin_invert": lambda L: L.isin(L.tensor([1, 2]), L.tensor([2]), invert=True),
    "nonzero": lambda L: L.nonzero(_ints(L) > 2),
    "nonzero_tuple": lambda L: _data(L).nonzero(as_tuple=True),
    "argwhere": lambda L: L.argwhere(_data(L) < 0),
    "repeat_interleave_counts": lambda L: L.repeat_interleave(L.tensor([2, 0, 1])),
    "take_ints": lambda L: _ints(L).take(L.tensor([0, 8, -1])),
    "index_select_ints": lambda L: _ints(L).index_select(1, L.tensor([2, 0])),
    "index_add_ints": lambda L: L.zeros(3, 2, dtype=L.int64).index_add(
        0, L.tensor([0, 2, 0]), L.ones(3, 2, dtype=L.int64), alpha=2),
    "index_fill_ints": lambda L: _ints(L).index_fill(0, L.tensor([1]), -1),
    "masked_select_ints": lambda L: _ints(L).masked_select(_ints(L) > 1),
    "scatter_reduce_amax_ints": lambda L: L.zeros(3, dtype=L.int64).scatter_reduce(
        0, L.tensor([0, 1, 0]), L.tensor([5, 2, 7]), "amax"),
    "scatter_reduce_mean_exclusive": lambda L: L.full((3,), 5.0).scatter_reduce(
        0, L.tensor([0, 1, 0]), L.tensor([1.0, 2.0, 4.0]), "mean", include_self=False),
    "tril_ints": lambda L: _ints(L).tril(-1),
    "roll_flat": lambda L: _ints(L).roll(4),
    "rot90_neg": lambda L: L.rot90(_ints(L), -1),
    "diag_ints": lambda L: L.diag(L.tensor([1, 2])),
    "diagonal_offset": lambda L: _ints(L).diagonal(1),
    "tensor_split_sections": lambda L: L.tensor_split(L.arange(7), 3),
    "hsplit": lambda L: L.hsplit(L.arange(12).reshape(2, 6), 3),
    "atleast_3d": lambda L: L.atleast_3d(L.tensor([1, 2])),
    "broadcast_shapes": lambda L: L.broadcast_shapes((2, 1), (3,), (1, 1, 1)),
    "meshgrid_xy": lambda L: L.meshgrid(L.arange(3), L.arange(2), indexing="xy"),
    "cartesian_prod": lambda L: L.cartesian_prod(L.tensor([1, 2]), L.tensor([3, 4, 5])),
    "combinations_replacement": lambda L: L.combinations(L.tensor([1, 2, 3]),
                                                         with_replacement=True),
    "einsum_trace": lambda L: L.einsum("ii", L.arange(9.0).reshape(3, 3)),
    "kron_ints": lambda L: L.kron(L.tensor([[1, 2], [3, 4]]), L.tensor([[0, 1], [1, 0]])),
    "matrix_rank": lambda L: L.linalg.matrix_rank(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "cross_default_dim": lambda L: L.cross(L.eye(3), L.ones(3, 3)),
    "linalg_norm_matrix": lambda L: L.linalg.norm(L.arange(6.0).reshape(2, 3), "fro"),
    "norm_p_inf": lambda L: L.norm(_data(L), float("inf")),
    "slogdet_singular": lambda L: L.linalg.slogdet(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "det_batch": lambda L: L.linalg.det(L.eye(2).expand(3, 2, 2) * 2),
}


def _as_values(result):
    """A comparable form: tensors as (dtype name, shape, values); tuples elementwise."""
    if isinstance(result, (tuple, list)):
        return [_as_values(item) for item in result]
    if hasattr(result, "detach") and hasattr(result, "shape"):
        array = np.asarray(result.detach().numpy())
        return (str(result.dtype).split(".")[-1], tuple(result.shape), array)
    if hasattr(result, "__len__") and not isinstance(result, str):  # a torch.Size
        return tuple(result)
    return result


def _assert_same(mine, reference, where: str) -> None:
    if isinstance(reference, list):
        assert isinstance(mine, list) and len(mine) == len(reference), where
        for position, (a, b) in enumerate(zip(mine, reference)):
            _assert_same(a, b, f"{where}[{position}]")
        return
    if isinstance(reference, tuple) and len(reference) == 3 and isinstance(reference[2],
                                                                         np.ndarray):
        assert mine[0] == reference[0], f"{where}: dtype {mine[0]} != {reference[0]}"
        assert mine[1] == reference[1], f"{where}: shape {mine[1]} != {reference[1]}"
        if reference[2].dtype.kind == "f":
            np.testing.assert_allclose(mine[2], reference[2], rtol=1e-6, atol=1e-7,
                                       equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(mine[2], reference[2], err_msg=where)
        return
    assert mine == reference, where


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_value_matches_torch(name):
    torch = pytest.importorskip("torch")
    call = VALUE_CASES[name]
    with pytest.warns(UserWarning) if name.startswith("cross_default") else _nothing():
        mine = _as_values(call(tg))
    theirs = _as_values(call(torch))
    _assert_same(mine, theirs, name)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


def test_format_spec_on_a_zero_dim_tensor_is_its_number():
    assert format(tg.tensor(2.5), "+.2f") == "+2.50"
    assert f"{tg.tensor(3.0, requires_grad=True):.3f}" == "3.000"
    assert f"{tg.tensor(7):>4}" == "   7"
    assert format(tg.tensor([1.0, 2.0])) == repr(tg.tensor([1.0, 2.0]))


def test_format_spec_on_a_vector_raises_type_error_as_torch():
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        format(tg.tensor([2.5]), ".1f")


def test_augmented_floor_division_and_modulo_work_in_place():
    x = tg.tensor([7, 8, 9])
    before = x
    x //= 2
    assert x is before and x.tolist() == [3, 4, 4] and x._version == 1
    x %= 3
    assert x is before and x.tolist() == [0, 1, 1]
    assert (+x) is x


def test_round_builtin_is_not_defined_as_in_torch():
    # torch 2.13's Tensor has no __round__: round(t) is a TypeError there too
    with pytest.raises(TypeError):
        round(tg.tensor(2.5))


def test_generator_state_round_trip_and_manual_seed():
    g = tg.Generator()
    assert g.initial_seed() == tg.random.DEFAULT_SEED == 67280421310721
    g.manual_seed(123)
    state = g.get_state()
    first = tg.randn(4, generator=g)
    g.set_state(state)
    assert tg.equal(tg.randn(4, generator=g), first)
    assert g.initial_seed() == 123
    assert state.dtype == tg.uint8


def test_default_generator_is_what_manual_seed_returns_and_seeds():
    generator = tg.manual_seed(5)
    assert generator is tg.default_generator and tg.initial_seed() == 5
    a = tg.rand(3)
    tg.manual_seed(5)
    assert tg.equal(tg.rand(3), a)


def test_fork_rng_restores_the_stream():
    tg.manual_seed(1)
    with tg.random.fork_rng():
        inside = tg.randn(3)
    after = tg.randn(3)
    assert tg.equal(inside, after)


def test_generator_argument_reaches_every_random_function():
    def draws(seed):
        g = tg.Generator().manual_seed(seed)
        return [tg.rand(2, generator=g), tg.randn(2, generator=g),
                tg.randint(0, 9, (2,), generator=g), tg.randperm(5, generator=g),
                tg.normal(0.0, 1.0, (2,), generator=g),
                tg.bernoulli(tg.full((4,), 0.5), generator=g),
                tg.multinomial(tg.ones(4), 2, generator=g),
                tg.empty(3).uniform_(generator=g), tg.empty(3).normal_(generator=g),
                tg.empty(3).exponential_(generator=g)]
    for mine, again in zip(draws(9), draws(9)):
        assert tg.equal(mine, again)


def test_random_shapes_dtypes_and_ranges():
    assert tg.randint(3, (5,)).dtype == tg.int64
    values = tg.randint(3, 7, (200,))
    assert int(values.min()) >= 3 and int(values.max()) < 7
    assert tg.randint(5, (2,), dtype=tg.float32).dtype == tg.float32
    assert sorted(tg.randperm(6).tolist()) == list(range(6))
    assert tg.rand(2, 3, dtype=tg.float64).dtype == tg.float64
    counts = tg.multinomial(tg.tensor([0.0, 1.0, 0.0]), 4, replacement=True)
    assert counts.tolist() == [1, 1, 1, 1]
    assert tg.poisson(tg.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert tg.normal(tg.zeros(2, 3), tg.ones(3)).shape == (2, 3)
    assert tg.randint_like(tg.zeros(2, 2), 4).shape == (2, 2)


def test_default_dtype_and_device_follow_torchs_rules():
    assert tg.get_default_dtype() is tg.float32
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.tensor([1.5]).dtype == tg.float64 and tg.zeros(1).dtype == tg.float64
        assert tg.arange(0, 1, 0.5).dtype == tg.float64
    finally:
        tg.set_default_dtype(tg.float32)
    with pytest.raises(TypeError, match="only floating-point types are supported as the "
                                        "default type"):
        tg.set_default_dtype(tg.int64)
    assert tg.get_default_device() == tg.device("cpu")
    tg.set_default_device("cpu")
    tg.set_default_device(None)
    assert tg.get_default_device() == tg.device("cpu")


def test_randn_with_an_integer_dtype_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match='"normal_kernel_cpu" not implemented for '
                                                  "'Long'"):
        tg.randn(2, dtype=tg.int64)
