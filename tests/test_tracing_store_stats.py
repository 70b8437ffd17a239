"""A trace file does not depend on whether anyone read a value's statistics before saving.

Statistics of a value whose array is stored are computed from the array when first read
(values.PendingStats); schema 5 leaves them to the array. Reading them first (a TUI, a
report, a schema-4 save) must not change the file: the numbers are stored only when the
stored array would not give them back to the bit.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

import tracegrad as tg
from tracegrad.tracing.model import Stats, Trace, Value
from tracegrad.tracing.values import PendingStats, compute_stats


def _program_trace() -> Trace:
    tg.manual_seed(0)
    x = tg.randn(4, 3)
    w = tg.randn(3, 2, requires_grad=True)
    with tg.record() as trace:
        h = x.mm(w).relu()
        loss = h.log().sum()  # log(0): Inf statistics
        loss.backward()
    return trace


def _values(trace: Trace) -> list[Value]:
    found = [value for record in trace.tensors.values() for value in (record.value, record.grad)]
    for backward_pass in trace.passes:
        for step in backward_pass.steps:
            found += [*step.grads_in, *step.grads_out, step.grad_after]
    return [value for value in found if value is not None]


def _read_all_statistics(trace: Trace) -> None:
    for value in _values(trace):
        value.stats.norm  # noqa: B018 - the first read computes them


def _stored_stats_rows(path) -> list[int]:
    with zipfile.ZipFile(path) as archive:
        stats = json.loads(archive.read("trace.json"))["values"]["columns"]["stats"]
    return stats["rows"] if "rows" in stats else list(range(stats["count"]))


def test_reading_statistics_before_saving_leaves_the_file_unchanged(tmp_path):
    untouched, read = tmp_path / "untouched.tgtrace", tmp_path / "read.tgtrace"
    _program_trace().save(untouched, timings=False)
    trace = _program_trace()
    assert any(type(value.stats) is PendingStats for value in _values(trace))
    _read_all_statistics(trace)
    assert not any(type(value.stats) is PendingStats for value in _values(trace))
    trace.save(read, timings=False)
    assert read.read_bytes() == untouched.read_bytes()
    # Every value kept its array (the trace is under its budget): no numbers stored.
    assert all(value.array is not None for value in _values(trace))
    assert _stored_stats_rows(read) == []


def test_a_loaded_trace_saves_the_same_whether_or_not_its_statistics_were_read(tmp_path):
    first, again, read = (tmp_path / name for name in ("a.tgtrace", "b.tgtrace", "c.tgtrace"))
    _program_trace().save(first, timings=False)
    tg.load_trace(first).save(again, timings=False)
    loaded = tg.load_trace(first)
    _read_all_statistics(loaded)
    loaded.save(read, timings=False)
    assert again.read_bytes() == first.read_bytes() == read.read_bytes()


def test_statistics_the_array_would_not_give_are_stored(tmp_path):
    """Numbers that differ from the array's (edited, or computed from another layout) are
    kept as they are, to the bit; F-ordered arrays are compared as stored (C order)."""
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    own = Value((2, 3), "float32", compute_stats(array), array)  # read already: settled
    other = Value((2, 3), "float32", Stats(min=-1.0, max=9.0, mean=0.5, norm=3.0), array.copy())
    fortran = np.asfortranarray(array)
    f_ordered = Value((2, 3), "float32", compute_stats(fortran), fortran)
    zero = np.zeros(2, np.float64)
    negative_zero = Value((2,), "float64", Stats(min=0.0, max=0.0, mean=-0.0, norm=0.0), zero)
    trace = Trace(metadata={})
    trace.tensors = {index: tg.tracing.model.TensorRecord(
        id=index, shape=value.shape, dtype=value.dtype, value=value)
        for index, value in enumerate((own, other, f_ordered, negative_zero))}
    path = tmp_path / "stats.tgtrace"
    trace.save(path)
    assert _stored_stats_rows(path) == [1, 3]  # own and the F-ordered one: from the arrays
    loaded = tg.load_trace(path)
    for index, value in enumerate((own, other, f_ordered, negative_zero)):
        stats = loaded.tensors[index].value.stats
        assert [np.float64(getattr(stats, name)).tobytes() for name in ("min", "max", "mean",
                                                                        "norm")] == \
            [np.float64(getattr(value.stats, name)).tobytes() for name in ("min", "max", "mean",
                                                                           "norm")]


def test_comparing_with_the_array_never_warns(tmp_path):
    """Settled statistics of a complex value are compared with its array's without the
    warning NumPy gives when complex numbers are read as real (a save must not warn)."""
    import warnings

    array = np.ones(3, np.complex64)
    value = Value((3,), "complex64", Stats(), array)
    trace = Trace(tensors={0: tg.tracing.model.TensorRecord(
        id=0, shape=(3,), dtype="complex64", value=value)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace.save(tmp_path / "complex.tgtrace")
    assert _stored_stats_rows(tmp_path / "complex.tgtrace") == [0]  # Stats() is not theirs


def _with_value_column_changed(path, out, name: str, new, row: int = 0) -> None:
    """A copy of the file whose value ``row`` has ``new`` in column ``name`` (a plain column
    or a table of strings or tuples with codes)."""
    with zipfile.ZipFile(path) as archive:
        members = {member: archive.read(member) for member in archive.namelist()}
    document = json.loads(members["trace.json"])
    column = document["values"]["columns"][name]
    if isinstance(column, dict):  # {"strings" or "tuples": [...], "codes": [...]}
        table = column["strings"] if "strings" in column else column["tuples"]
        table.append(new)
        column["codes"][row] = len(table) - 1
    else:
        column[row] = new
    members["trace.json"] = json.dumps(document).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for member, payload in members.items():
            archive.writestr(member, payload)


def test_a_stored_array_of_another_kind_than_its_value_is_named(tmp_path):
    """The loader checks each value's array against the value's shape and dtype (by the
    arrays table's kinds when it can); a file where they differ names the value."""
    import pytest

    from tracegrad.errors import TraceFileError

    path = tmp_path / "run.tgtrace"
    _program_trace().save(path)
    loaded = tg.load_trace(path)
    first = next(record.value for record in loaded.tensors.values() if record.value)
    assert first.array.shape == first.shape == (4, 3)
    for name, new, words in (
            ("dtype", "float64", "the stored array is float32 [4, 3] but the value says "
                                 "float64 [4, 3]"),
            ("shape", [3, 4], "the stored array is float32 [4, 3] but the value says "
                              "float32 [3, 4]")):
        damaged = tmp_path / f"{name}.tgtrace"
        _with_value_column_changed(path, damaged, name, new)
        with pytest.raises(TraceFileError) as info:
            tg.load_trace(damaged)
        assert "values[0].array: " + words in str(info.value), str(info.value)


def test_small_arrays_statistics_are_numpys_to_the_bit():
    """The least and greatest of a few elements come from Python floats: the same numbers
    as NumPy's reductions give, zeros of either sign included (those are left to NumPy)."""
    from tracegrad.tracing.values import _finite_min_max

    rng = np.random.default_rng(7)
    for dtype in (np.float16, np.float32, np.float64):
        info = np.finfo(dtype)
        choices = np.array([0.0, -0.0, 1.5, -1.5, info.smallest_subnormal,
                            -info.smallest_subnormal, info.max, -7.0], dtype)
        for size in (1, 2, 3, 4, 7, 16, 17, 40):
            for _ in range(40):
                flat = rng.choice(choices, size)
                expected = (float(np.minimum.reduce(flat)), float(np.maximum.reduce(flat)))
                assert tuple(map(repr, _finite_min_max(flat))) == tuple(map(repr, expected))
                stats = compute_stats(flat)
                assert (repr(stats.min), repr(stats.max)) == tuple(map(repr, expected))


def test_statistics_of_fewer_than_eight_floats_are_numpys_to_the_bit():
    """Fewer than 8 elements are summed from Python floats, one after the other, as NumPy
    sums so few: the same numbers as its float64 sum, for every float dtype, with zeros,
    subnormals and elements that cancel. A NumPy that sums them otherwise fails here."""
    from tracegrad.tracing.values import _few_stats

    rng = np.random.default_rng(11)
    for dtype in (np.float16, np.float32, np.float64):
        info = np.finfo(dtype)
        for size in range(1, 8):
            for _ in range(400):
                scales = 10.0 ** rng.integers(info.minexp // 4, info.maxexp // 4, size)
                flat = (rng.standard_normal(size) * scales).astype(dtype)
                flat[rng.random(size) < 0.2] = rng.choice([0.0, -0.0, info.smallest_subnormal])
                stats = _few_stats(flat)
                if stats is None:
                    continue  # a zero at the least or greatest: NumPy's path
                total = float(np.add.reduce(flat, None, np.float64))
                assert repr(stats.mean) == repr(total / size), flat
                assert (repr(stats.min), repr(stats.max)) == (
                    repr(float(np.minimum.reduce(flat))), repr(float(np.maximum.reduce(flat))))
                assert repr(stats.norm) == repr(float(np.sqrt(float(flat.dot(flat)))))
