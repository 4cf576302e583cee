"""Timing primitives of the bench (:mod:`minsep.bench`): a timed call (wall and CPU seconds,
synchronised on a GPU), the best and median rate of repetitions, and the standard normals that
are the yardstick of every model's rate."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from minsep.bench_models import Case
from minsep.framework.backend import Backend


@attrs.frozen
class Figure:
    """Best and median of a rate (sample·steps or normals per second)."""

    best: float
    median: float

    @classmethod
    def of(cls, work: float, seconds: Sequence[float]) -> Figure:
        return cls(work / min(seconds), work / statistics.median(seconds))


def sync(backend: Backend) -> None:
    if backend.name == "cupy":  # pragma: no cover - needs a GPU
        import cupy

        cupy.cuda.Device().synchronize()


def timed(fn: Callable[[], Any], backend: Backend) -> tuple[float, float, Any]:
    """``(wall seconds, CPU seconds of this process, result)``."""
    sync(backend)
    cpu = time.process_time()
    start = time.perf_counter()
    result = fn()
    sync(backend)
    return time.perf_counter() - start, time.process_time() - cpu, result


def normal_draws(
    elements: int, backend: Backend, seed: int, compiled: bool = False
) -> Callable[[], Any]:
    """Draw ``elements`` standard normals: into a reused 2^16 buffer on the host (by numpy's
    ``standard_normal``, or with ``compiled`` by the SFC64 kernel the models draw with:
    :func:`minsep.schemes.kernels.sfc64.fill`, the same numbers), one array on a GPU."""
    if backend.name == "cupy":  # pragma: no cover - needs a GPU
        source = backend.rng(np.random.SeedSequence(seed))
        return lambda: source.standard_normal((elements,))
    from minsep.schemes.kernels import sfc64

    generator = np.random.Generator(np.random.SFC64(seed))
    buffer = np.empty(1 << 16)

    def draw() -> None:
        left = elements
        while left > 0:
            size = min(left, buffer.size)
            if compiled:
                sfc64.fill(generator, "standard_normal", buffer[:size])
            else:
                generator.standard_normal(out=buffer[:size])
            left -= size

    return draw


def measure_normals(case: Case, backend: Backend, repeats: int) -> dict[str, Figure]:
    """Normals per second (wall, and per CPU-second) of numpy's ``standard_normal`` and of the
    compiled SFC64 kernel, alternated, ``case.samples * n`` per repetition."""
    work = float(case.samples * case.n_steps)
    seconds: dict[str, list[float]] = {"numpy": [], "compiled": []}
    spent: dict[str, list[float]] = {"numpy": [], "compiled": []}
    draws = {
        "numpy": normal_draws(case.samples * case.n_steps, backend, seed=98),
        "compiled": normal_draws(case.samples * case.n_steps, backend, seed=98, compiled=True),
    }
    draws["compiled"]()  # compiles or loads the kernel
    for _ in range(repeats):
        for key, draw in draws.items():
            wall, cpu, _ = timed(draw, backend)
            seconds[key].append(wall)
            spent[key].append(cpu)
    return {
        **{key: Figure.of(work, values) for key, values in seconds.items()},
        **{f"{key}_cpu": Figure.of(work, values) for key, values in spent.items()},
    }


__all__ = ["Figure", "measure_normals", "normal_draws", "sync", "timed"]
