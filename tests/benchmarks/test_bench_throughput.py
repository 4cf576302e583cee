"""Throughput of the b-min-sep loss model (issue 7), in sample·steps per second.

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_throughput.py --benchmark-only``
(``python -m minsep.bench`` prints the same figures as a table). Each case records
``extra_info['sample_steps_per_second']`` and, for comparison under the same load, numpy's raw
normal rate ``extra_info['normals_per_second']`` measured just before it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from minsep.bench import FULL, build_model
from minsep.framework.backend import get_backend, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo import EngineConfig, LocalExecutor, ProcessExecutor, sample

CASES = {"n1024_k8": FULL[0], "n7200_k256": FULL[1]}


def _normal_rate(elements: int) -> float:
    generator = np.random.Generator(np.random.SFC64(0))
    buffer = np.empty(1 << 16)
    start = time.perf_counter()
    for _ in range(max(1, elements // buffer.size)):
        generator.standard_normal(out=buffer)
    return max(1, elements // buffer.size) * buffer.size / (time.perf_counter() - start)


def _record(benchmark: Any, work: float, elements: int) -> None:
    benchmark.extra_info["sample_steps_per_second"] = work / benchmark.stats.stats.min
    benchmark.extra_info["normals_per_second"] = _normal_rate(elements)


@pytest.mark.parametrize("case", list(CASES))
def test_fresh_draw_and_log_ratio(benchmark: Any, case: str) -> None:
    spec = CASES[case]
    model = build_model(spec)
    backend = numpy_backend()
    seeds = iter(range(1, 1000))

    def run() -> Any:
        rng = backend.rng(np.random.SeedSequence(next(seeds)))
        transcript = model.draw(spec.samples, Direction.REMOVE, rng, backend)
        return model.log_ratio(transcript, 1.0)

    run()
    benchmark.pedantic(run, rounds=5, iterations=1)
    _record(benchmark, spec.samples * spec.n_steps, spec.samples * spec.n_steps)


@pytest.mark.parametrize("case", list(CASES))
def test_log_ratio_on_kept_transcripts(benchmark: Any, case: str) -> None:
    spec = CASES[case]
    model = build_model(spec)
    backend = numpy_backend()
    transcript = model.draw(
        spec.samples, Direction.REMOVE, backend.rng(np.random.SeedSequence(0)), backend
    )
    sigmas = iter(np.linspace(0.8, 1.2, 1000))
    model.log_ratio(transcript, 1.0)
    benchmark.pedantic(lambda: model.log_ratio(transcript, float(next(sigmas))), rounds=5)
    _record(benchmark, spec.samples * spec.n_steps, spec.samples * spec.n_steps)


def test_numpy_normals(benchmark: Any) -> None:
    generator = np.random.Generator(np.random.SFC64(0))
    buffer = np.empty(1 << 16)
    benchmark(generator.standard_normal, out=buffer)
    benchmark.extra_info["normals_per_second"] = buffer.size / benchmark.stats.stats.min


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_engine_process_scaling(benchmark: Any, case: str, workers: int) -> None:
    spec = CASES[case]
    model = build_model(spec)
    executor = LocalExecutor() if workers == 1 else ProcessExecutor(max_workers=workers)
    config = EngineConfig(chunk_size=spec.chunk_size, executor=executor, progress=False)
    seeds = iter(range(1, 1000))

    def run(size: int = spec.engine_samples) -> None:
        sample(model, [1.0], n_samples=size, seed=next(seeds), directions=(Direction.REMOVE,),
               checks=(1.0,), config=config)  # fmt: skip

    run(spec.chunk_size * workers)  # start the pool, compile the kernels
    benchmark.pedantic(run, rounds=3, iterations=1)
    _record(benchmark, spec.engine_samples * spec.n_steps, spec.engine_samples * spec.n_steps)


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_gpu_fresh_draw_and_log_ratio(benchmark: Any, case: str) -> None:
    import cupy

    spec = CASES[case]
    model = build_model(spec)
    backend = get_backend("cupy")
    samples = 1 << 16
    seeds = iter(range(1, 1000))

    def run() -> Any:
        rng = backend.rng(np.random.SeedSequence(next(seeds)))
        transcript = model.draw(samples, Direction.REMOVE, rng, backend)
        loss = model.log_ratio(transcript, 1.0)
        cupy.cuda.Device().synchronize()
        return loss

    run()
    benchmark.pedantic(run, rounds=5, iterations=1)
    benchmark.extra_info["sample_steps_per_second"] = (
        samples * spec.n_steps / benchmark.stats.stats.min
    )
