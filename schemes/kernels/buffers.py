"""Reusable host arrays for the fused kernels: one pool per thread, no fresh mapping per chunk.

A chunk's transcript (64 MiB at 8192 samples of n = 1024) lies above the allocator's mmap
threshold, so a fresh array is mapped and zero-filled page by page by the kernel on every
chunk (a measurable share of a draw's CPU time went to system time: docs/performance.md).
:func:`reusable` hands out an array of the pool that **nothing else references any more**
(CPython's reference count: the pool's own reference only; a transcript, a view or a variable
holding the array keeps it out of reach), and allocates a new one otherwise, so a kept
transcript is never overwritten.

Pools are per thread (a Dask worker's threads each have theirs; processes never share one)
and keep at most :data:`POOL_SIZE` arrays, least recently used dropped first (a dropped array
lives on while it is referenced). A request the pool cannot serve first drops the free arrays
of the same role, so the pool never raises the peak memory of a run (the last, shorter chunk
of a run does not find the full-size arrays still held); between runs it keeps the last run's
arrays until :func:`release`. Where reference counts do not say who holds an array
(free-threaded CPython, other interpreters) every call allocates. Results never depend on the
pool: arrays are handed out uninitialised either way, and every caller overwrites them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

#: Arrays each thread's pool keeps (a chunk's draw uses about ten: two transcripts, steps,
#: normals and correlation scratch, evaluation rows).
POOL_SIZE = 16

_local = threading.local()


def _counts_references() -> bool:
    """True where ``sys.getrefcount`` is exact (CPython with the GIL)."""
    if sys.implementation.name != "cpython":
        return False
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return gil_enabled is None or bool(gil_enabled())


ENABLED = _counts_references()


def _pool() -> list[tuple[str, np.ndarray]]:
    pool: list[tuple[str, np.ndarray]] | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = []
    return pool


def _free(pool: list[tuple[str, np.ndarray]], index: int) -> bool:
    # references: the pool's tuple and getrefcount's argument, nothing else
    return sys.getrefcount(pool[index][1]) == 2


def reusable(shape: tuple[int, ...], dtype: Any = np.float64, *, role: str = "") -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` that no one else holds:
    a pooled one of the same ``role`` when free, else a new one (then pooled).

    ``role`` names what the array is for (``"noise"``, ``"fft-spectrum"``, ...): a miss drops
    the free arrays of the same role (stale shapes: the full-size chunk arrays when the last,
    shorter chunk comes), so the pool never raises the peak memory of a run, while arrays of
    other roles stay pooled."""
    dtype = np.dtype(dtype)
    if not ENABLED:
        return np.empty(shape, dtype=dtype)
    pool = _pool()
    for index in range(len(pool) - 1, -1, -1):
        kind, array = pool[index]
        if kind == role and array.shape == shape and array.dtype == dtype:
            del array  # a local reference would count as a holder
            if _free(pool, index):
                entry = pool.pop(index)
                pool.append(entry)  # most recently used last
                return entry[1]
        else:
            del array
    stale = [pool[i][0] == role and _free(pool, i) for i in range(len(pool))]
    pool[:] = [entry for entry, drop in zip(pool, stale, strict=True) if not drop]
    fresh = np.empty(shape, dtype=dtype)
    pool.append((role, fresh))
    if len(pool) > POOL_SIZE:
        free = [i for i in range(len(pool)) if _free(pool, i)]
        del pool[free[0] if free else 0]  # the least recently used, a free one if any
    return fresh


def release() -> None:
    """Forget this thread's pool (its arrays are freed once nothing else holds them)."""
    _pool().clear()
