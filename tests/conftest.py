"""Shared fixtures: fixed seeds, GPU skipping, benchmarks only under --benchmark-only."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.framework.backend import cupy_usable


def _deselect_benchmarks(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep tests using the ``benchmark`` fixture only under ``--benchmark-only`` (make bench).

    Deselected rather than skipped: a skip per benchmark would fill every ``-ra`` summary.
    """
    if config.getoption("benchmark_only", default=False):
        return
    benchmarks = [item for item in items if "benchmark" in getattr(item, "fixturenames", ())]
    if benchmarks:
        config.hook.pytest_deselected(items=benchmarks)
        dropped = set(benchmarks)
        items[:] = [item for item in items if item not in dropped]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect_benchmarks(config, items)
    if cupy_usable():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU with cupy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def rng() -> np.random.Generator:
    """A fixed-seed host generator."""
    return np.random.default_rng(20260214)
