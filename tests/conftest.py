"""Shared fixtures: fixed seeds, GPU skipping, benchmarks only under --benchmark-only."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

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


def _stand_in_possible() -> bool:
    from minsep.testing.host_device import cxx_compiler

    return cxx_compiler() is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect_benchmarks(config, items)
    if cupy_usable() or _stand_in_possible():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU with cupy, or a C++ compiler")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def _host_device_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("host_device")


@pytest.fixture(autouse=True)
def _gpu_tests_on_the_host_stand_in(
    request: pytest.FixtureRequest, _host_device_folder: Path
) -> Iterator[None]:
    """Without a usable GPU, a test marked ``gpu`` runs on the host stand-in of one
    (minsep/testing/host_device.py: numpy as cupy, the CUDA kernels compiled for the host, one
    call per thread), so that the GPU test suite runs in every ``make test``; with a GPU it runs
    on the device."""
    if request.node.get_closest_marker("gpu") is None or cupy_usable():
        yield
        return
    from minsep.testing.host_device import host_device

    with host_device(_host_device_folder):
        yield


@pytest.fixture
def rng() -> np.random.Generator:
    """A fixed-seed host generator."""
    return np.random.default_rng(20260214)


@pytest.fixture(autouse=True)
def _fresh_add_bound_memo() -> None:
    """Each test starts without the add bounds an earlier test memoised (a test may patch the
    law that computes them); cleared only where the module is already loaded."""
    escort_add = sys.modules.get("minsep.accountants.escort_add")
    if escort_add is not None:
        escort_add._CHOSEN.clear()


@pytest.fixture(autouse=True)
def _private_answer_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each test gets an empty answer cache (never the user's), so that a seeded command
    answers by computing unless the test repeats it on purpose. Only the answers' folder moves:
    the strategy coefficients stay cached. Its own patch context, so that a test's
    ``monkeypatch.undo()`` keeps it."""
    from minsep.framework.montecarlo import cache

    folder = tmp_path_factory.mktemp("answers")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cache, "cache_folder", lambda: folder)
        yield
