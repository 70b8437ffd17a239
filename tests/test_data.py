"""tracegrad.utils.data: datasets, samplers, DataLoader and default_collate -- the same
batches, types and errors as torch.utils.data (orders drawn at random differ: torch's
generator is not NumPy's, so shuffling is checked for behaviour)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)


class Squares(Dataset):
    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        return {"x": float(index), "y": index * index, "name": f"item{index}"}


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(7))

    def __len__(self) -> int:
        return 7


def _numpy(value):
    return np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)


# -- datasets -----------------------------------------------------------------------------
def test_tensor_dataset_subset_and_concat():
    data = TensorDataset(tg.arange(10.0).view(5, 2), tg.arange(5))
    assert len(data) == 5 and data[2][0].tolist() == [4.0, 5.0] and data[2][1].item() == 2
    subset = Subset(data, [4, 0])
    assert len(subset) == 2 and subset[0][1].item() == 4
    both = data + subset
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert both[5][1].item() == 4 and both[-1][1].item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tg.zeros(3), tg.zeros(4))
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        both[-8]


def test_stack_dataset_tuples_and_dicts():
    positional = StackDataset([1, 2], ["a", "b"])
    named = StackDataset(x=[1, 2], y=["a", "b"])
    assert positional[1] == (2, "b") and named[0] == {"x": 1, "y": "a"}
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset([1], [1, 2])


def test_random_split_by_counts_and_fractions():
    parts = random_split(range(10), [3, 7], generator=tg.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    assert [len(p) for p in random_split(range(11), [0.5, 0.25, 0.25])] == [6, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    first = [list(p) for p in random_split(range(8), [4, 4], tg.Generator().manual_seed(5))]
    again = [list(p) for p in random_split(range(8), [4, 4], tg.Generator().manual_seed(5))]
    assert first == again


# -- samplers -----------------------------------------------------------------------------
def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert sorted(RandomSampler(range(6))) == list(range(6))
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=10))
    assert len(drawn) == 10 and set(drawn) <= {0, 1, 2}
    assert sorted(SubsetRandomSampler([5, 7, 9])) == [5, 7, 9]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0], 5))
    assert weighted == [1] * 5
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, drop_last=True)) == 2
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


# -- DataLoader ---------------------------------------------------------------------------
@pytest.mark.torch
@pytest.mark.parametrize("options", [{"batch_size": 2}, {"batch_size": 2, "drop_last": True},
                                     {"batch_size": None}, {"batch_size": 4}])
def test_sequential_batches_match_torch(options):
    torch = pytest.importorskip("torch")
    array = np.arange(15.0).reshape(5, 3)
    ours = list(DataLoader(TensorDataset(tg.tensor(array), tg.arange(5)), **options))
    theirs = list(torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(array), torch.arange(5)), **options))
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert type(mine) is type(reference) and len(mine) == len(reference)
        for a, b in zip(mine, reference):
            np.testing.assert_array_equal(_numpy(a), _numpy(b))
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


@pytest.mark.torch
@pytest.mark.parametrize("batch", [
    [(1, 2.5, True), (3, 4.5, False)],
    [{"a": [1, 2], "b": "x"}, {"a": [3, 4], "b": "y"}],
    [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    [np.float64(1.5), np.float64(2.5)],
    [collections.namedtuple("Point", "x y")(1, 2.0), collections.namedtuple("Point", "x y")(3,
                                                                                           4.0)],
], ids=["tuples", "dicts", "ndarrays", "numpy-scalars", "namedtuples"])
def test_default_collate_matches_torch(batch):
    torch = pytest.importorskip("torch")
    ours = default_collate(batch)
    theirs = torch.utils.data.default_collate(batch)

    def compare(mine, reference):
        if hasattr(reference, "numpy"):
            np.testing.assert_array_equal(_numpy(mine), reference.numpy())
            assert str(mine.dtype).split(".")[-1] == str(reference.dtype).split(".")[-1]
        elif isinstance(reference, dict):
            assert list(mine) == list(reference)
            for key in reference:
                compare(mine[key], reference[key])
        elif isinstance(reference, (list, tuple)):
            assert type(mine).__name__ == type(reference).__name__
            assert len(mine) == len(reference)
            for a, b in zip(mine, reference):
                compare(a, b)
        else:
            assert mine == reference

    compare(ours, theirs)


def test_shuffle_covers_every_sample_reproducibly_and_differs_between_epochs():
    data = TensorDataset(tg.arange(20))
    tg.manual_seed(3)
    loader = DataLoader(data, batch_size=6, shuffle=True)
    first = [int(v) for (batch,) in loader for v in batch]
    second = [int(v) for (batch,) in loader for v in batch]
    assert sorted(first) == sorted(second) == list(range(20)) and first != second
    tg.manual_seed(3)
    assert [int(v) for (batch,) in loader for v in batch] == first
    seeded = DataLoader(data, batch_size=6, shuffle=True, generator=tg.Generator().manual_seed(1))
    again = DataLoader(data, batch_size=6, shuffle=True, generator=tg.Generator().manual_seed(1))
    assert [b[0].tolist() for b in seeded] == [b[0].tolist() for b in again]


def test_custom_dataset_collate_fn_sampler_and_batch_sampler():
    data = Squares(5)
    batch = next(iter(DataLoader(data, batch_size=3)))
    assert batch["x"].dtype == tg.float64 and batch["y"].tolist() == [0, 1, 4]
    assert batch["name"] == ["item0", "item1", "item2"]
    names = list(DataLoader(data, batch_size=2, collate_fn=lambda s: [x["y"] for x in s]))
    assert names == [[0, 1], [4, 9], [16]]
    by_sampler = DataLoader(data, batch_size=2, sampler=[4, 3, 2])
    assert [b["y"].tolist() for b in by_sampler] == [[16, 9], [4]]
    by_batches = DataLoader(data, batch_sampler=[[0, 4], [2]])
    assert [b["y"].tolist() for b in by_batches] == [[0, 16], [4]] and len(by_batches) == 2


def test_iterable_dataset_batches_and_length():
    loader = DataLoader(Stream(), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert len(DataLoader(Stream(), batch_size=3, drop_last=True)) == 2
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_workers_run_in_process_with_a_warning():
    with pytest.warns(UserWarning, match="loads in the main process"):
        loader = DataLoader(list(range(4)), batch_size=2, num_workers=2)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]


@pytest.mark.parametrize("options, message", [
    ({"batch_size": 0}, "batch_size should be a positive integer value, but got batch_size=0"),
    ({"shuffle": True, "sampler": [0, 1]}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
    ({"num_workers": -1}, "num_workers option should be non-negative"),
    ({"batch_size": None, "drop_last": True}, "mutually exclusive with drop_last"),
])
def test_dataloader_argument_errors(options, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(list(range(4)), **options)


def test_collate_refuses_unknown_elements_and_ragged_lists():
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of "
                                           "equal size"):
        default_collate([[1, 2], [3]])


def test_unknown_names_say_tracegrad_does_not_implement_them():
    with pytest.raises(AttributeError, match="does not implement "
                                             "torch.utils.data.DistributedSampler"):
        tg.utils.data.DistributedSampler  # noqa: B018
