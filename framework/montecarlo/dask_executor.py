"""Run the chunks of a Monte Carlo run on a Dask cluster (``pip install 'minsep[dist]'``).

:class:`DaskExecutor` implements the :class:`~minsep.framework.montecarlo.executors.Executor`
contract on ``distributed``: it connects to a running scheduler (``scheduler="tcp://host:8786"``,
or the path of a scheduler file written by ``dask scheduler --scheduler-file``), or starts an
in-process ``LocalCluster`` of ``n_workers`` worker **processes** (the losses are CPU-bound
numpy/numba code; threads would serialise on the GIL), and closes the clusters it started.

Chunks are submitted as futures, at most ``ahead * threads`` of them in flight or waiting to be
yielded (a run of millions of chunks never holds millions of futures), completed futures are
collected with ``as_completed`` and **yielded in index order**: results that complete early
wait in a buffer until their predecessors are in. Each chunk's randomness depends only on
(seed, stream, chunk index) and the engine merges in chunk order, so a result is bit-identical
to the local executor's whatever the number of workers, their speed, or their failures.

Fault tolerance: when a worker dies, the scheduler reruns the chunks it was running or whose
results it held (a chunk is a pure function of its index, so a rerun returns the same bits);
a chunk that raises is retried ``retries`` times before the error reaches the caller. A chunk
that kills ``distributed.scheduler.allowed-failures`` (default 3) workers in a row is given
up, and so is a run whose scheduler is lost: both raise WorkersLostError (one line; the
command line exits with status 2), after the client is closed without Dask's reconnection
tracebacks. Losing the client process itself (the one merging) is what
checkpoints (:mod:`~minsep.framework.montecarlo.checkpoint`) are for.

The client and the cluster are started on first use and shared by every DaskExecutor with the
same settings in this process (so the pilot and the verification of one question pay the start
once); :func:`shutdown_clusters` (also run at interpreter exit) closes them.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import importlib.util
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from minsep.framework import validation as v
from minsep.framework.errors import MinsepError, SchedulerUnreachableError, WorkersLostError

__all__ = ["DaskExecutor", "DaskUnavailableError", "require_dask", "shutdown_clusters"]

T = TypeVar("T")

#: How often (seconds) the in-flight window follows the cluster's thread count (adaptive
#: clusters grow and shrink).
_RESIZE_SECONDS = 10.0


class DaskUnavailableError(MinsepError, ImportError):
    """``dask.distributed`` is not installed."""


def require_dask() -> None:
    """Raise DaskUnavailableError (naming the install command) unless distributed imports."""
    if importlib.util.find_spec("distributed") is None:
        raise DaskUnavailableError(
            "the Dask executor needs dask.distributed, which is not installed: "
            "pip install 'minsep[dist]'"
        )


def _distributed() -> Any:
    """The ``distributed`` module, imported on first use (typed Any: it ships no stubs)."""
    require_dask()
    return importlib.import_module("distributed")


def _scheduler_address(instance: Any, attribute: Any, value: Any) -> None:
    """A scheduler file that exists, or an address ``[protocol://]host:port``."""
    if value is None:
        return
    problem = scheduler_problem(value)
    if problem is not None:
        raise v.fail(instance, attribute.name, value, problem)


def scheduler_problem(value: Any) -> str | None:
    """None when ``value`` is a usable scheduler address or file, else what it must be.

    Checked before connecting, so that a missing scheduler file or an address without a port
    fails at once rather than after the connect timeout.
    """
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        return "a scheduler address such as 'tcp://host:8786' or a scheduler file '*.json'"
    if value.endswith(".json"):
        path = Path(value).expanduser()
        if not path.is_file():
            return (
                "an existing scheduler file: there is no file at this path (start the "
                "scheduler first, e.g. dask scheduler --scheduler-file FILE)"
            )
        return _scheduler_file_problem(path)
    protocol, _, location = value.rpartition("://")
    if protocol == "inproc":
        return None
    host, _, port = location.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return (
            "a scheduler address with a port, such as 'tcp://host:8786', or a scheduler file "
            "'*.json'"
        )
    return None


def _scheduler_file_problem(path: Path) -> str | None:
    """None when ``path`` holds a scheduler file's JSON object with an ``address`` (what
    ``dask scheduler --scheduler-file`` writes; distributed asserts on anything else)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"a scheduler file holding JSON (this one cannot be read as JSON: {exc})"
    address = data.get("address") if isinstance(data, dict) else None
    if not isinstance(address, str) or scheduler_problem(address) is not None:
        return (
            "a scheduler file written by 'dask scheduler --scheduler-file FILE': a JSON object "
            f"whose 'address' is the scheduler's, e.g. 'tcp://host:8786' (this one has "
            f"{'no address' if address is None else f'address {address!r}'})"
        )
    return None


_CLUSTERS: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # key -> (client, cluster or None)
_CLUSTERS_LOCK = threading.Lock()


def shutdown_clusters() -> None:
    """Close every shared client, and the local clusters started for them.

    The client closes before its cluster (no reconnection attempts), and Dask's own loggers
    are held at CRITICAL meanwhile (:func:`_quietly`): at interpreter exit their warnings
    would be the last lines a user sees.
    """
    with _CLUSTERS_LOCK:
        entries = list(_CLUSTERS.values())
        _CLUSTERS.clear()
    if entries:
        _quietly(_close_all, entries)


def _close_all(entries: list[tuple[Any, Any]]) -> None:
    for client, cluster in entries:
        _close(client, cluster)


def _quietly(fn: Callable[..., None], *args: Any) -> None:
    """``fn(*args)`` with Dask's own loggers held at CRITICAL: a worker, nanny or client
    stopping on request (or reconnecting to a scheduler known dead) is not news."""
    loggers = [logging.getLogger(name) for name in _QUIET_AT_CLOSE]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        fn(*args)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


#: Loggers whose warnings a requested shutdown produces (nanny restarts, closing comms).
_QUIET_AT_CLOSE = (
    "distributed",
    "distributed.client",
    "distributed.nanny",
    "distributed.worker",
    "tornado",
)


def _drop_lost_connection_tracebacks(record: logging.LogRecord) -> bool:
    """A logging filter of the client's Dask loggers (:data:`_FILTERED`): drops the tracebacks
    a client logs when its scheduler goes away, which the run reports in one line instead
    (:func:`_lost`): its reconnection attempts cancelled by closing it
    (``asyncio.CancelledError``, ``distributed.client``), and its batched stream to the
    scheduler found closed (``CommClosedError``, ``distributed.batched``, logged at INFO with
    the traceback)."""
    error = record.exc_info[1] if record.exc_info else None
    if error is None:
        return True
    return not (_comm_closed(error) or isinstance(error, asyncio.CancelledError))


def _comm_closed(error: BaseException) -> bool:
    """Whether ``error`` is Distributed's ``CommClosedError`` or a subclass (matched by name:
    ``distributed`` is an optional extra, imported only once a cluster is used)."""
    return any(kind.__name__ == "CommClosedError" for kind in type(error).__mro__)


#: The client-side loggers :func:`_drop_lost_connection_tracebacks` filters.
_FILTERED = ("distributed.client", "distributed.batched")


def _close(client: Any, cluster: Any) -> None:
    for thing in (client, cluster):
        if thing is None:
            continue
        try:
            thing.close()
        except Exception:  # closing is best effort (interpreter exit, a dead event loop)
            logging.getLogger(__name__).debug("closing %r failed", thing, exc_info=True)


atexit.register(shutdown_clusters)


@attrs.frozen
class DaskExecutor:
    """Chunks on a Dask cluster, yielded in index order (module docstring).

    Attributes:
        scheduler: address of a running scheduler (``"tcp://host:8786"``) or path of its
            scheduler file (``*.json``); None starts an in-process ``LocalCluster``.
        n_workers: worker processes of the LocalCluster (ignored with ``scheduler``).
        threads_per_worker: threads per LocalCluster worker (1 suits CPU-bound chunks).
        ahead: chunks in flight or buffered per worker thread. Results are yielded in order,
            so once ``ahead * threads`` chunks are out the workers wait for the oldest one; 4
            lets fast workers run ahead of a slow one. Memory: the client holds up to that many
            chunk tallies (a sparse histogram per sigma and direction, usually tens of kB);
            queued chunks hold no transcript.
        retries: reruns of a chunk that raised before the error is reported.
        memory_limit: per-worker memory limit of the LocalCluster (Dask's syntax, e.g.
            ``"4GiB"``; ``"auto"`` = system memory / workers). Size ``chunk_size`` so that one
            chunk's transcript fits (see :mod:`~minsep.framework.montecarlo.sampling`).
        connect_timeout: seconds to wait for the scheduler at ``scheduler`` before raising
            SchedulerUnreachableError (the address and the file's existence are checked at
            construction, before any connection).
    """

    scheduler: str | None = attrs.field(default=None, validator=_scheduler_address)
    n_workers: int = attrs.field(default=2, validator=v.integer(low=1, high=4096))
    threads_per_worker: int = attrs.field(default=1, validator=v.integer(low=1, high=1024))
    ahead: int = attrs.field(default=4, validator=v.integer(low=1, high=1024))
    retries: int = attrs.field(default=3, validator=v.integer(low=0, high=100))
    memory_limit: str = "auto"
    connect_timeout: float = attrs.field(
        default=10.0, converter=v.plain_number, validator=v.positive()
    )

    def __attrs_post_init__(self) -> None:
        require_dask()

    # -- the cluster ----------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        if self.scheduler is not None:
            return ("remote", self.scheduler)
        return ("local", self.n_workers, self.threads_per_worker, self.memory_limit)

    def client(self) -> Any:
        """The shared ``distributed.Client`` of this configuration (started on first use)."""
        key = self._key()
        with _CLUSTERS_LOCK:
            entry = _CLUSTERS.get(key)
            if entry is not None and entry[0].status == "running":
                return entry[0]
            if entry is not None:
                _close(*entry)
            entry = self._start()
            _CLUSTERS[key] = entry
            return entry[0]

    def _start(self) -> tuple[Any, Any]:
        dist = _distributed()
        for name in _FILTERED:
            log = logging.getLogger(name)
            if _drop_lost_connection_tracebacks not in log.filters:
                log.addFilter(_drop_lost_connection_tracebacks)
        if self.scheduler is not None:
            return self._connect(dist), None
        cluster = dist.LocalCluster(
            n_workers=self.n_workers,
            threads_per_worker=self.threads_per_worker,
            processes=True,
            memory_limit=self.memory_limit,
            dashboard_address=None,  # no dashboard; its HTTP endpoint on a free local port:
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.WARNING,
        )
        try:
            return dist.Client(cluster), cluster
        except Exception:
            cluster.close()
            raise

    def _connect(self, dist: Any) -> Any:
        """A client of the scheduler at ``scheduler``, or SchedulerUnreachableError after at
        most ``connect_timeout`` seconds."""
        assert self.scheduler is not None
        try:
            if self.scheduler.endswith(".json"):
                path = str(Path(self.scheduler).expanduser())
                return dist.Client(scheduler_file=path, timeout=self.connect_timeout)
            return dist.Client(self.scheduler, timeout=self.connect_timeout)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SchedulerUnreachableError(
                f"cannot reach the Dask scheduler at scheduler = {self.scheduler!r} (CLI: "
                f"--scheduler) within {self.connect_timeout:g} s: {exc}. Check that the "
                "scheduler is running and that the address or scheduler file is current."
            ) from None

    def close(self) -> None:
        """Close this configuration's client (and its LocalCluster, if this started one)."""
        with _CLUSTERS_LOCK:
            entry = _CLUSTERS.pop(self._key(), None)
        if entry is not None:
            _quietly(_close_all, [entry])

    @property
    def workers(self) -> int:
        """Worker threads: ``n_workers * threads_per_worker`` for a LocalCluster, the
        connected cluster's current thread count (at least 1) for a scheduler address."""
        if self.scheduler is None:
            return self.n_workers * self.threads_per_worker
        return _threads(self.client())

    # -- the work -------------------------------------------------------------------------

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        """``task(i)`` for each index on the cluster, yielded in the order of ``indices``.

        At most ``ahead * threads`` chunks are submitted or buffered at once; earlier chunks
        get higher scheduling priority; futures still pending when the consumer stops (or
        fails) are cancelled.
        """
        if len(indices) == 0:
            return
        client = self.client()
        run = uuid.uuid4().hex[:12]
        limit = self.ahead * _threads(client)
        resized = time.monotonic()
        queue = iter(enumerate(indices))
        pending: dict[str, tuple[int, Any]] = {}  # future key -> (position, future)
        ready: dict[int, T] = {}  # completed out of order, waiting for their predecessors
        completed = _distributed().as_completed(loop=client.loop)
        head = 0  # position of the next result to yield

        def refill() -> None:
            while len(pending) + len(ready) < limit:
                item = next(queue, None)
                if item is None:
                    return
                position, index = item
                future = client.submit(
                    task,
                    index,
                    key=f"minsep-chunk-{run}-{position}",
                    retries=self.retries,
                    pure=False,
                    priority=-position,
                )
                pending[future.key] = (position, future)
                completed.add(future)

        lost: WorkersLostError | None = None
        try:
            refill()
            while pending:
                future = next(completed)
                position, _ = pending.pop(future.key)
                ready[position] = future.result()
                future.release()
                while head in ready:
                    yield ready.pop(head)
                    head += 1
                if time.monotonic() - resized > _RESIZE_SECONDS:
                    limit, resized = self.ahead * _threads(client), time.monotonic()
                refill()  # the head chunk is always pending: none pending = all yielded
        except Exception as exc:
            lost = _lost(self, client, exc)
            if lost is None:
                raise
        finally:
            if lost is None:
                for _, future in pending.values():
                    future.cancel()
            completed.clear()
        if lost is not None:
            self.close()  # a client reconnecting to a dead scheduler would log tracebacks
            raise lost


def _lost(executor: DaskExecutor, client: Any, exc: Exception) -> WorkersLostError | None:
    """The one-line error for a cluster lost while ``client`` waited for results (the
    scheduler gone, or a chunk that killed ``allowed-failures`` workers); None for an error
    of the chunk itself, which reaches the caller unchanged."""
    where = executor.scheduler or "the local cluster"
    if type(exc).__name__ == "KilledWorker":
        return WorkersLostError(
            f"the Dask workers running a chunk were lost repeatedly at {where} ({exc}): "
            "lower --chunk-size, give the workers more memory, or resume from the checkpoint"
        )
    if isinstance(exc, concurrent.futures.CancelledError) or _comm_closed(exc):
        pass  # cancelled for "scheduler-connection-lost", or the client's comm closed
    elif client.status == "running" or not isinstance(exc, OSError | TimeoutError):
        return None
    return WorkersLostError(
        f"lost the Dask scheduler at {where} ({type(exc).__name__}): restart the "
        "scheduler and rerun the command (with --checkpoint it resumes where it stopped)"
    )


def _threads(client: Any) -> int:
    """Total worker threads of the client's cluster (1 while none has joined)."""
    threads: dict[str, int] = client.nthreads()
    return max(sum(threads.values()), 1)
