"""The PyTorch batch_sampler adapter: its logic without torch, and a DataLoader when present."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from minsep.framework.errors import BackendUnavailableError, ConfigurationError
from minsep.schemes import PADDING, BMinSep, SchemeBatchSampler, Truncated
from minsep.schemes.torch_adapter import data_loader


def test_yields_lists_of_python_ints_per_step() -> None:
    scheme = BMinSep(n_steps=7, rate=0.1, min_sep=2)
    sampler = SchemeBatchSampler(scheme=scheme, population=100, seed=3)
    batches = list(sampler)
    assert len(sampler) == len(batches) == 7
    assert all(isinstance(i, int) for batch in batches for i in batch)
    expected = list(scheme.batches(100, np.random.default_rng([3, 0])))
    assert batches == [b.tolist() for b in expected]
    assert list(sampler) == batches  # a pass is reproducible


def test_set_epoch_changes_the_pass() -> None:
    sampler = SchemeBatchSampler(scheme=BMinSep.example(), population=200, seed=1)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first
    sampler.set_epoch(0)
    assert list(sampler) == first
    with pytest.raises(ConfigurationError, match="epoch"):
        sampler.set_epoch(-1)


def test_padding_dropped_or_replaced() -> None:
    scheme = Truncated(base=BMinSep(n_steps=5, rate=0.1, min_sep=2), max_batch_size=30,
                       dataset_size=100)  # fmt: skip
    dropped = list(SchemeBatchSampler(scheme=scheme, population=100, seed=0))
    padded = list(SchemeBatchSampler(scheme=scheme, population=100, seed=0, padding_index=100))
    for short, full in zip(dropped, padded, strict=True):
        assert PADDING not in short
        assert len(full) == 30
        assert full[: len(short)] == short
        assert all(i == 100 for i in full[len(short) :])


def test_invalid_arguments() -> None:
    with pytest.raises(ConfigurationError, match="scheme"):
        SchemeBatchSampler(scheme="b_min_sep", population=10, seed=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="seed"):
        SchemeBatchSampler(scheme=BMinSep.example(), population=10, seed=-1)
    with pytest.raises(ConfigurationError, match="padding_index"):
        SchemeBatchSampler(scheme=BMinSep.example(), population=10, seed=0, padding_index=-1)


def test_data_loader_without_torch_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.utils", None)
    monkeypatch.setitem(sys.modules, "torch.utils.data", None)
    with pytest.raises(BackendUnavailableError, match=r"minsep\[torch\]"):
        data_loader(list(range(10)), BMinSep.example(), seed=0)


def test_data_loader_with_torch() -> None:
    torch = pytest.importorskip("torch")
    dataset = torch.arange(50, dtype=torch.float32).reshape(50, 1)
    scheme = BMinSep(n_steps=6, rate=0.2, min_sep=3)

    def collate(items: list) -> object:  # empty batches are real steps: keep them
        return torch.stack(items) if items else torch.empty(0, 1)

    loader = data_loader(dataset, scheme, seed=4, collate_fn=collate)
    expected = list(scheme.batches(50, np.random.default_rng([4, 0])))
    got = list(loader)
    assert len(got) == 6
    for tensor, indices in zip(got, expected, strict=True):
        assert tensor.flatten().tolist() == [float(i) for i in indices]
