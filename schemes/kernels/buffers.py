"""Reusable host arrays for the fused kernels: one pool per thread, no fresh mapping per chunk.

A chunk's transcript (64 MiB at 8192 samples of n = 1024) lies above the allocator's mmap
threshold, so a fresh array is mapped and zero-filled page by page by the kernel on every
chunk (10-17 % of the CPU time of a draw was system time). :func:`reusable` hands out an array
of the pool that **nothing else references any more** (CPython's reference count: the pool's
own reference only; a transcript, a view or a variable holding the array keeps it out of
reach), and allocates a new one otherwise, so a kept transcript is never overwritten.

Pools are per thread (a Dask worker's threads each have theirs; processes never share one)
and keep at most :data:`POOL_SIZE` arrays, least recently used dropped first (a dropped array
lives on while it is referenced). A request the pool cannot serve first drops every free
array, so the pool never raises the peak memory of a run (the last, shorter chunk of a run
does not find the full-size arrays still held); between runs it keeps the last run's arrays
until :func:`release` or the next miss. Where reference counts do not say who holds an array
(free-threaded CPython, other interpreters) every call allocates. Results never depend on the
pool: arrays are handed out uninitialised either way, and every caller overwrites them.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

#: Arrays each thread's pool keeps (a chunk holds at most two transcripts at once: REMOVE and
#: ADD, each noise and steps).
POOL_SIZE = 6

_local = threading.local()


def _counts_references() -> bool:
    """True where ``sys.getrefcount`` is exact (CPython with the GIL)."""
    if sys.implementation.name != "cpython":
        return False
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return gil_enabled is None or bool(gil_enabled())


ENABLED = _counts_references()


def _pool() -> list[np.ndarray]:
    pool: list[np.ndarray] | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = []
    return pool


def _free(pool: list[np.ndarray], index: int) -> bool:
    # references: the pool's list and getrefcount's argument, nothing else
    return sys.getrefcount(pool[index]) == 2


def reusable(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` that no one else holds:
    a pooled one when free, else a new one (then pooled)."""
    dtype = np.dtype(dtype)
    if not ENABLED:
        return np.empty(shape, dtype=dtype)
    pool = _pool()
    for index in range(len(pool) - 1, -1, -1):
        if pool[index].shape == shape and pool[index].dtype == dtype and _free(pool, index):
            array = pool.pop(index)
            pool.append(array)  # most recently used last
            return array
    # a miss drops every free array first: the pool never adds to the peak memory of a run
    held = [not _free(pool, index) for index in range(len(pool))]
    pool[:] = [array for array, keep in zip(pool, held, strict=True) if keep]
    array = np.empty(shape, dtype=dtype)
    pool.append(array)
    if len(pool) > POOL_SIZE:
        del pool[0]
    return array


def release() -> None:
    """Forget this thread's pool (its arrays are freed once nothing else holds them)."""
    _pool().clear()
