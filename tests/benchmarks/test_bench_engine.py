"""Benchmarks of the Monte Carlo engine's own overhead, with a toy model (cheap losses).

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_engine.py --benchmark-only``.
The toy model costs O(1) per sample, so these time the engine: seeding, drawing, exact sums at
the checked epsilons, histogram binning and merging. Throughput is reported in
``extra_info['samples_per_second']`` (loss samples, both directions, all sigmas).
"""

from __future__ import annotations

from typing import Any

import pytest

from minsep.framework.montecarlo import (
    EngineConfig,
    ProcessExecutor,
    calibrate_sweep,
    geometric_sweep,
    sample,
)
from tests.unit.montecarlo_toys import SubsampledGaussianToy

N = 1_000_000


@pytest.mark.parametrize("histograms", [True, False])
@pytest.mark.parametrize("chunk_size", [1 << 14, 1 << 17])
def test_bench_sample(benchmark: Any, histograms: bool, chunk_size: int) -> None:
    model = SubsampledGaussianToy(rate=0.2)
    config = EngineConfig(chunk_size=chunk_size, progress=False)

    def run() -> None:
        sample(model, [1.0], n_samples=N, seed=1, checks=(1.0,), histograms=histograms,
               config=config)  # fmt: skip

    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["samples_per_second"] = 2 * N / benchmark.stats.stats.mean


def test_bench_sweep_of_16_sigmas(benchmark: Any) -> None:
    model = SubsampledGaussianToy(rate=0.2)
    sweep = geometric_sweep(2.0, 1.02, 16)
    config = EngineConfig(chunk_size=1 << 16, progress=False)

    def run() -> None:
        calibrate_sweep(model, sweep, 2.0, 1e-3, samples=N // 4, seed=1, config=config)

    benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["samples_per_second"] = 2 * 16 * (N // 4) / benchmark.stats.stats.mean


@pytest.mark.parametrize("workers", [1, 2])
def test_bench_process_scaling(benchmark: Any, workers: int) -> None:
    model = SubsampledGaussianToy(rate=0.2)
    executor = ProcessExecutor(max_workers=workers)
    config = EngineConfig(chunk_size=1 << 16, executor=executor, progress=False)
    sample(model, [1.0], n_samples=1 << 16, seed=0, config=config)  # warm the pool

    def run() -> None:
        sample(model, [1.0], n_samples=4 * N, seed=1, checks=(1.0,), config=config)

    benchmark.pedantic(run, rounds=2, iterations=1)
    benchmark.extra_info["samples_per_second"] = 8 * N / benchmark.stats.stats.mean
