"""The engine figures of the bench (:mod:`minsep.bench`): ``minsep.framework.montecarlo.sample``
on warm b-min-sep in one process and on a process pool, the pool's usable cores right now, and
the CPU seconds of the pool's workers (so that scaling can be judged on a shared machine)."""

from __future__ import annotations

import functools
import os
import statistics
import time
from typing import Any

import attrs
import numpy as np

from minsep.bench_models import Case, build_model
from minsep.bench_timing import Figure, timed
from minsep.framework.backend import get_backend
from minsep.framework.interfaces import Direction


def measure_engine(
    case: Case, backend_name: str, workers: int, repeats: int, sigma: float
) -> dict[str, Any]:
    """Engine throughput (REMOVE only, histogram on) with 1 process and with a process pool."""
    from minsep.framework.montecarlo import EngineConfig, LocalExecutor, ProcessExecutor, sample

    model = build_model(case)
    work = float(case.engine_samples * case.n_steps)
    figures: dict[str, Any] = {"case": case.name, "workers": workers}
    executors: list[tuple[str, Any]] = [("local", LocalExecutor())]
    if workers > 1:
        executors.append(("pool", ProcessExecutor(max_workers=workers)))
    for label, executor in executors:
        config = EngineConfig(
            chunk_size=case.chunk_size, backend=backend_name, executor=executor, progress=False
        )

        def run(seed: int, config: EngineConfig = config, size: int = case.engine_samples) -> None:
            sample(
                model,
                [sigma],
                n_samples=size,
                seed=seed,
                directions=(Direction.REMOVE,),
                checks=(1.0,),
                config=config,
            )

        run(0, size=case.chunk_size * max(1, workers))  # start workers, compile kernels
        device = get_backend(backend_name)
        seconds, cpu = [], []
        for r in range(repeats):
            before = _cpu_seconds(executor)
            seconds.append(timed(functools.partial(run, r + 1), device)[0])
            after = _cpu_seconds(executor)
            if before is not None and after is not None:
                cpu.append(after - before)
        figures[label] = Figure.of(work, seconds)
        if cpu:
            figures[f"{label}_cpu"] = Figure.of(work, cpu)  # sample·steps per CPU-second
    if workers > 1:
        figures["capacity"] = parallel_capacity(executors[1][1], repeats)
        figures["scaling_best"] = figures["pool"].best / figures["local"].best
        figures["scaling_median"] = figures["pool"].median / figures["local"].median
        if "pool_cpu" in figures and "local_cpu" in figures:
            # CPU efficiency of the pool (1: no overhead); times workers = scaling on idle cores
            figures["efficiency"] = figures["pool_cpu"].median / figures["local_cpu"].median
    return figures


@attrs.frozen
class _NormalsTask:
    """A picklable CPU-bound task (numpy normals) for :func:`parallel_capacity`."""

    elements: int

    def __call__(self, index: int) -> int:
        generator = np.random.Generator(np.random.SFC64(index))
        buffer = np.empty(1 << 16)
        for _ in range(max(1, self.elements // buffer.size)):
            generator.standard_normal(out=buffer)
        return index


def parallel_capacity(executor: Any, repeats: int, elements: int = 1 << 24) -> float:
    """How many cores the pool can use right now: ``workers * t(1 task) / t(workers tasks)``
    for a plain CPU-bound task on the same pool (``workers`` on an idle machine, less when
    other processes hold cores). The engine's wall scaling is judged against it."""
    task = _NormalsTask(elements)
    workers = int(executor.workers)
    list(executor.map(task, range(workers)))  # every worker up
    one, many = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        list(executor.map(task, [0]))
        one.append(time.perf_counter() - start)
        start = time.perf_counter()
        list(executor.map(task, range(workers)))
        many.append(time.perf_counter() - start)
    return workers * statistics.median(one) / statistics.median(many)


def _cpu_seconds(executor: Any) -> float | None:
    """CPU seconds used so far by this process plus, for a process pool, its workers (read
    from /proc on Linux; None where unavailable). Lets the scaling be judged on a shared
    machine: wall-clock scaling needs idle cores, CPU cost per sample·step does not."""
    total = time.process_time()
    if getattr(executor, "workers", 1) == 1:
        return total
    try:
        from minsep.framework.montecarlo.executors import _default_start_method, _pool

        pool = _pool(executor.max_workers, executor.start_method or _default_start_method())
        tick = os.sysconf("SC_CLK_TCK")
        for pid in list(pool._processes or {}):
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    except (ImportError, AttributeError, OSError, ValueError, IndexError):
        return None
    return total


__all__ = ["measure_engine", "parallel_capacity"]
