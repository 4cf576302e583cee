"""Scaling of the Monte Carlo engine over executors: local vs a 2-process pool vs Dask.

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_scaling.py --benchmark-only``
(about 2 minutes on 2 cores). The workload is the b-min-sep loss model (n = 1024 steps, 16
bands, min-sep 16) at ``N`` samples per direction in chunks of 4096: about 10 s on one core,
so the per-chunk overhead of the pool and of Dask (milliseconds) is negligible and the speed-up
measures the parallel part. Throughput is ``extra_info['samples_per_second']`` (loss samples,
both directions); every executor's tally is checked bit-identical to the local one. Worker
start-up (pool or LocalCluster, and numba's first call in each worker) is excluded by a warm-up
run. On a shared machine the figures follow the load: report ``os.getloadavg()`` with them
(``extra_info['load']``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import (
    DaskExecutor,
    EngineConfig,
    Executor,
    LocalExecutor,
    ProcessExecutor,
    SweepTally,
    sample,
    shutdown_clusters,
)
from minsep.framework.registries import schemes, strategies

N = 150_000
CHUNK = 4096
STEPS, BANDS = 1024, 16
EXECUTORS: dict[str, Any] = {
    "local": LocalExecutor,
    "processes-2": lambda: ProcessExecutor(max_workers=2),
    "dask-2": lambda: DaskExecutor(n_workers=2),
}
_REFERENCE: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module")
def model() -> Iterator[PrivacyLossModel]:
    scheme = schemes.get("b_min_sep").from_rate(STEPS, 1 / (2 * BANDS), min_sep=BANDS)
    strategy = strategies.get("banded_toeplitz").for_steps(STEPS, bands=BANDS)
    yield scheme.loss_model(strategy)
    shutdown_clusters()


def _run(model: PrivacyLossModel, executor: Executor, n: int) -> SweepTally:
    config = EngineConfig(chunk_size=CHUNK, executor=executor, progress=False)
    return sample(model, [1.0], n_samples=n, seed=1, checks=(1.0,), config=config)


@pytest.mark.parametrize("name", list(EXECUTORS))
def test_bench_executor_scaling(benchmark: Any, model: PrivacyLossModel, name: str) -> None:
    executor = EXECUTORS[name]()
    _run(model, executor, 4 * CHUNK)  # warm up: workers, imports, numba's first call
    result: dict[str, SweepTally] = {}

    def run() -> None:
        result["tally"] = _run(model, executor, N)

    benchmark.pedantic(run, rounds=3, iterations=1)
    data = result["tally"].to_dict()
    reference = _REFERENCE.setdefault("tally", data)
    assert data == reference, f"{name} differs from the first executor run"
    benchmark.extra_info["samples_per_second"] = 2 * N / benchmark.stats.stats.min
    benchmark.extra_info["workers"] = executor.workers
    benchmark.extra_info["load"] = os.getloadavg()[0]
