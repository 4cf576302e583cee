"""Benchmarks of the banded Toeplitz optimiser (caches bypassed).

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_strategies.py --benchmark-only``.
Targets (issue 3): n = 1024, bands = 8 under 5 s; n = 7200, bands = 256 under 60 s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.strategies import BandedToeplitz


@pytest.mark.parametrize(("n_steps", "bands"), [(1024, 8), (7200, 256)])
@pytest.mark.parametrize("objective", ["mean", "max"])
def test_bench_optimal(benchmark: Any, n_steps: int, bands: int, objective: str) -> None:
    strategy = benchmark(BandedToeplitz.optimal, n_steps, bands, objective, cache=False)
    assert strategy.bands == bands


def test_bench_noise_stream(benchmark: Any) -> None:
    strategy = BandedToeplitz.optimal(1024, 64, cache=False)
    backend = numpy_backend()

    def run() -> None:
        rng = backend.rng(np.random.SeedSequence(0))
        for _ in strategy.noise((10_000,), 1024, rng, backend):
            pass

    benchmark.pedantic(run, rounds=3, iterations=1)


def test_bench_sensitivity(benchmark: Any) -> None:
    strategy = BandedToeplitz.optimal(7200, 256, cache=False)
    value = benchmark(strategy.sensitivity, 7200, 16, 450)
    assert value > 0
