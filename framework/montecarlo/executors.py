"""Executors: where the chunks of a Monte Carlo run are computed.

An :class:`Executor` applies a picklable chunk task (a callable ``task(index) -> result``) to a
sequence of chunk indices and yields the results **in the order of the indices**. The engine
merges results in that order, and each chunk's randomness depends only on (seed, stream, chunk
index), so a run gives bit-identical results on any executor and any number of workers.

Plugging in another executor means implementing ``map`` with that contract (as
:class:`~minsep.framework.montecarlo.dask_executor.DaskExecutor` does for Dask); the task objects
are plain attrs instances (model, sigmas, directions, chunk size, seed, backend name) and
pickle.

An executor may also offer ``prepare(warm_up)``: start its workers now and have each run the
picklable ``warm_up()`` once (import the model's modules, load its compiled kernels), without
waiting. The engine calls it through :func:`prepare_executor` at the start of a question (the
command line before its first answer), so that worker start-up overlaps the parent's own
set-up (the first answer, building the model, planning). It may offer ``call(fn)`` too: run
one picklable ``fn()`` on a worker (:func:`call_on_worker`); the plan's rate probe runs there,
on a worker that has loaded the kernels already, while the parent never loads them.

Start method. :class:`ProcessExecutor` uses ``forkserver`` on POSIX (``spawn`` elsewhere), not
``fork``: the parent holds threads by the time it samples (the BLAS pool, tqdm's monitor, the
pool's own manager thread, Dask's), and a forked child inherits their locks in whatever state
they were (Python 3.12 warns, 3.14 made forkserver the POSIX default for this reason). The
forkserver imports the heavy modules once (:func:`_preload_modules`: numpy, scipy.special,
numba, the engine and every scheme plugin) and forks each worker from that warm image, so a
worker's own start-up is loading the model's compiled kernels from numba's on-disk cache; its
malloc settings (:data:`WORKER_MALLOC`) let workers reuse freed chunk memory.
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import concurrent.futures.process
import importlib.metadata
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, cast, runtime_checkable

import attrs

from minsep.framework import validation as v
from minsep.framework.errors import ConfigurationError, WorkersLostError
from minsep.framework.montecarlo import lifeline

__all__ = [
    "EXECUTOR_KINDS",
    "WORKER_MALLOC",
    "Executor",
    "LocalExecutor",
    "ProcessExecutor",
    "call_on_worker",
    "get_executor",
    "prepare_executor",
    "shutdown_pools",
    "terminate_pools",
]

#: Names accepted by :func:`get_executor` (and ``--executor``).
EXECUTOR_KINDS = ("local", "processes", "dask")

T = TypeVar("T")

#: The CLI prints this logger's records on stderr as ``minsep: ...`` lines.
_log = logging.getLogger("minsep.plan")


@runtime_checkable
class Executor(Protocol):
    """Maps a chunk task over chunk indices, yielding results in index order."""

    @property
    def workers(self) -> int:
        """Degree of parallelism (1 for in-process)."""

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        """``task(i)`` for each ``i`` of ``indices``, yielded in the order of ``indices``.

        Implementations may compute out of order and in parallel but must yield in order; they
        should keep at most a bounded number of results waiting (memory).
        """


@attrs.frozen
class LocalExecutor:
    """Runs every chunk in the calling process, one after the other."""

    @property
    def workers(self) -> int:
        """Always 1."""
        return 1

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        """``task(i)`` for each index, lazily and in order."""
        for i in indices:
            yield task(i)


def _default_start_method() -> str:
    # fork is fast but unsafe once threads exist (BLAS pools, tqdm's monitor, Dask);
    # forkserver is the safe POSIX choice, spawn the only one on Windows.
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


#: glibc malloc settings of the forkserver, hence of every worker forked from it: keep freed
#: blocks in the heap (no mmap for large arrays, no trimming) so that the next chunk reuses the
#: previous chunk's pages instead of faulting in freshly zeroed ones; that kernel work was a
#: quarter of a worker's CPU time with the default chunks (tens of MiB per array). A worker's
#: heap then stays at its largest chunk, which the memory budget bounds. Variables the user
#: set win; other C libraries ignore them.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 32), "MALLOC_TRIM_THRESHOLD_": str(1 << 32)}

_POOLS: dict[tuple[int, str], concurrent.futures.ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
#: Threads of :meth:`ProcessExecutor.prepare` still queueing a pool's warm-ups (see there).
_STARTING: dict[tuple[int, str], threading.Thread] = {}
#: Modules the forkserver imports once, so that workers start without re-importing them.
#: The lifeline comes first: a forkserver whose run is killed while it imports dies too.
_PRELOAD = [
    "minsep.framework.montecarlo.lifeline",
    "numpy",
    "scipy.special",
    "scipy.fft",
    "minsep.framework.montecarlo",
]


def _preload_modules() -> list[str]:
    """The fixed preloads, numba when the host kernels use it (importing it is most of a
    worker's start-up otherwise), and every registered scheme plugin's module (where the
    loss models live), found through the entry points so the framework names no project
    package."""
    from minsep.framework.backend import numba_unavailable_reason

    modules = list(_PRELOAD)
    if numba_unavailable_reason() is None:
        modules.append("numba")
    for ep in importlib.metadata.entry_points(group="minsep.schemes"):
        if ep.module not in modules:
            modules.append(ep.module)
    return modules


def _start_forkserver() -> None:
    """Start the forkserver (if not yet running) with :data:`WORKER_MALLOC` in its
    environment, and, from the main thread, this process's id as its lifeline parent
    (:mod:`.lifeline`); this process's own environment is left as it was."""
    from multiprocessing import forkserver

    added = {k: v for k, v in WORKER_MALLOC.items() if k not in os.environ}
    if threading.current_thread() is threading.main_thread():
        added[lifeline.PARENT_ENV] = str(os.getpid())
    os.environ.update(added)
    try:
        forkserver.ensure_running()
    finally:
        for key in added:
            os.environ.pop(key, None)


def _pool(workers: int, method: str) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool shared by every executor of the same size and start method."""
    with _POOLS_LOCK:
        pool = _POOLS.get((workers, method))
        if pool is None:
            context = multiprocessing.get_context(method)
            if method == "forkserver":
                context.set_forkserver_preload(_preload_modules())
                _start_forkserver()
            pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=lifeline.init_worker,
                initargs=(os.getpid(), method == "forkserver"),
            )
            _POOLS[(workers, method)] = pool
        return pool


def _queue_warm_ups(
    pool: concurrent.futures.ProcessPoolExecutor, warm_up: Callable[[], object], count: int
) -> None:
    """Submit ``warm_up`` ``count`` times (each submission may start a worker); a pool shut
    down or broken meanwhile gets nothing more (its next real chunk reports why)."""
    try:
        for _ in range(count):
            pool.submit(warm_up)
    except (RuntimeError, concurrent.futures.process.BrokenProcessPool):
        pass


def _wait_started(key: tuple[int, str]) -> None:
    """Wait for :meth:`ProcessExecutor.prepare`'s thread of pool ``key``, if any."""
    with _POOLS_LOCK:
        thread = _STARTING.pop(key, None)
    if thread is not None:
        thread.join()


def prepare_executor(executor: Executor, warm_up: Callable[[], object]) -> None:
    """Have ``executor`` start its workers now and run ``warm_up()`` once in each, without
    waiting, when it offers ``prepare`` (a process pool does); otherwise nothing. Results and
    errors of the warm-up are dropped: a real chunk that fails the same way reports it."""
    prepare = getattr(executor, "prepare", None)
    if callable(prepare):
        prepare(warm_up)


def call_on_worker(executor: Executor, fn: Callable[[], T]) -> T:
    """``fn()`` on one of ``executor``'s workers when it offers ``call`` (a process pool: a
    worker warmed by :func:`prepare_executor`, which holds the model's compiled kernels
    already), else in this process."""
    call = getattr(executor, "call", None)
    return cast("T", call(fn)) if callable(call) else fn()


def shutdown_pools() -> None:
    """Shut down the shared worker pools (they are also shut down at interpreter exit)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
        starting = list(_STARTING.values())
        _STARTING.clear()
    for thread in starting:
        thread.join()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_pools)


def terminate_pools() -> None:
    """Kill the shared pools' workers now and forget the pools (after an interrupt, once the
    checkpoint is saved: the chunks still running are not needed, and a process stopped by
    SIGTERM must not wait for them)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
        _STARTING.clear()
    for pool in pools:
        # concurrent.futures offers no public kill; its process table is stable since 3.7
        processes = getattr(pool, "_processes", None) or {}
        for process in list(processes.values()):
            process.kill()
        pool.shutdown(wait=False, cancel_futures=True)


@attrs.frozen
class ProcessExecutor:
    """Chunks on a ``concurrent.futures`` process pool.

    The pool is created on first use and shared by every ProcessExecutor with the same
    ``max_workers`` and start method, so its start-up cost (importing numpy and minsep in the
    workers, about a second) is paid once per process; :func:`shutdown_pools` releases it.
    ``ahead`` bounds the results in flight to ``ahead * workers`` (memory); results are yielded
    in index order. ``retries``: how many times one :meth:`map` call starts a fresh pool after
    losing a worker (see there). The task must be picklable (use a named backend, not a
    custom namespace, and a model defined in an importable module).
    """

    max_workers: int = attrs.field(default=2, validator=v.positive_int())
    ahead: int = attrs.field(default=2, validator=v.positive_int())
    start_method: str | None = attrs.field(
        default=None, validator=v.optional(v.one_of("fork", "forkserver", "spawn"))
    )
    retries: int = attrs.field(default=3, validator=v.integer(low=0, high=100))

    @property
    def workers(self) -> int:
        """``max_workers``."""
        return self.max_workers

    def prepare(self, warm_up: Callable[[], object]) -> None:
        """Start the pool (if not yet running) and queue ``warm_up`` once per worker; returns
        at once. A pool that already ran a chunk is warm and gets nothing.

        Queueing blocks until the forkserver has imported its preloads and forked a worker
        (about a second), so a background thread queues while the parent goes on with its
        own set-up; :meth:`map` waits for that thread before its first submission, so the
        warm-ups stay ahead of every chunk in the queue."""
        method = self.start_method or _default_start_method()
        key = (self.max_workers, method)
        with _POOLS_LOCK:
            fresh = key not in _POOLS
        if fresh:
            pool = _pool(self.max_workers, method)
            thread = threading.Thread(
                target=_queue_warm_ups,
                args=(pool, warm_up, self.max_workers),
                name="minsep-pool-start",
                daemon=True,
            )
            with _POOLS_LOCK:
                _STARTING[key] = thread
            thread.start()

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` on a worker of the pool, queued behind the warm-ups of :meth:`prepare`."""
        return cast("T", next(iter(self.map(_Call(fn), [0]))))

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        """Submit chunks to the pool, at most ``ahead * workers`` pending, yield in order.

        A lost worker (killed, or ended by the operating system for lack of memory) breaks
        the pool: the chunks it had not returned are submitted again, in order, to a fresh
        pool (a chunk is a pure function of its index, so the results are the same bits), at
        most ``retries`` times per call; then WorkersLostError."""
        if not indices:
            return
        method = self.start_method or _default_start_method()
        key = (self.max_workers, method)
        _wait_started(key)
        pool = _pool(self.max_workers, method)
        limit = self.ahead * self.max_workers
        pending: collections.deque[tuple[int, concurrent.futures.Future[T]]] = collections.deque()
        queue = iter(indices)
        losses = 0
        try:
            for i in queue:
                pending.append((i, _submit(pool, task, i)))
                if len(pending) >= limit:
                    break
            while pending:
                index, future = pending[0]
                try:
                    result = future.result()
                except concurrent.futures.process.BrokenProcessPool as exc:
                    losses += 1
                    _forget(key, pool)
                    if losses > self.retries:
                        raise WorkersLostError(
                            f"a worker process was lost {losses} times (killed, or ended by "
                            f"the operating system, e.g. out of memory); the chunks from {index} "
                            f"on were computed again on fresh workers {self.retries} times and the "
                            "run gives up: lower --chunk-size or --workers, or resume from "
                            f"the checkpoint ({exc})"
                        ) from None
                    _log.warning(
                        "warning: a worker process was lost (%s): recomputing %d chunks from "
                        "chunk %d on fresh workers (retry %d of %d)",
                        exc, len(pending), index, losses, self.retries,
                    )  # fmt: skip
                    pool = _pool(self.max_workers, method)
                    pending = collections.deque(
                        (i, f if _succeeded(f) else _submit(pool, task, i)) for i, f in pending
                    )
                    continue
                pending.popleft()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.append((nxt, _submit(pool, task, nxt)))
                yield result
        finally:
            for _, future in pending:
                future.cancel()


@attrs.frozen
class _Call:
    """``fn()`` as a chunk task (for :meth:`ProcessExecutor.call`, retried like a chunk)."""

    fn: Callable[[], object]

    def __call__(self, index: int) -> object:
        return self.fn()


def _submit(
    pool: concurrent.futures.ProcessPoolExecutor, task: Callable[[int], T], index: int
) -> concurrent.futures.Future[T]:
    """``pool.submit(task, index)``; a pool already broken gives a future holding that
    error (handled where the result is read, like a worker lost later)."""
    try:
        return pool.submit(task, index)
    except concurrent.futures.process.BrokenProcessPool as exc:
        failed: concurrent.futures.Future[T] = concurrent.futures.Future()
        failed.set_exception(exc)
        return failed


def _succeeded(future: concurrent.futures.Future[T]) -> bool:
    """True when ``future`` holds a result (not an error, not pending)."""
    return future.done() and not future.cancelled() and future.exception() is None


def _forget(key: tuple[int, str], pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Drop the broken ``pool`` from the shared pools, so the next use starts a fresh one."""
    with _POOLS_LOCK:
        if _POOLS.get(key) is pool:
            del _POOLS[key]
    pool.shutdown(wait=False, cancel_futures=True)


def get_executor(
    workers: int | None = 1, kind: str | None = None, scheduler: str | None = None
) -> Executor:
    """An executor by name.

    ``kind`` None (automatic): ``DaskExecutor`` when ``scheduler`` is given, else
    ``LocalExecutor`` for 1 worker and a ``ProcessExecutor`` otherwise (``workers`` None: all
    CPUs). ``"local"`` (1 worker only), ``"processes"`` and ``"dask"`` (a LocalCluster of
    ``workers`` processes, or the cluster at ``scheduler``) choose explicitly.
    """
    count = (os.cpu_count() or 1) if workers is None else workers
    v.check_range("get_executor", "workers", count, low=1, integer=True)
    if kind is None:
        kind = "dask" if scheduler is not None else "local" if count == 1 else "processes"
    if kind not in EXECUTOR_KINDS:
        raise ConfigurationError(
            f"get_executor.kind = {kind!r} is invalid: must be one of {list(EXECUTOR_KINDS)}"
        )
    if scheduler is not None and kind != "dask":
        raise ConfigurationError(
            f"get_executor.scheduler = {scheduler!r} is invalid: a scheduler address needs "
            f"the 'dask' executor, not {kind!r}"
        )
    if kind == "dask":
        from minsep.framework.montecarlo.dask_executor import DaskExecutor

        return DaskExecutor(scheduler=scheduler, n_workers=count)
    if kind == "local":
        if count != 1:
            raise ConfigurationError(
                f"get_executor.workers = {count!r} is invalid: must be 1 for the 'local' "
                "executor (use 'processes' or 'dask' for more)"
            )
        return LocalExecutor()
    return ProcessExecutor(max_workers=count)
