"""Shared fixtures: fixed seeds, GPU skipping."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.framework.backend import cupy_usable


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
