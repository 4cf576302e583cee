"""Chunked, vectorised sampling of privacy losses on a Backend.

A run draws ``n_samples`` privacy-loss samples per direction, split into chunks of
``chunk_size`` (the last one shorter). For chunk ``i`` of stream ``s`` and direction ``d`` the
random source is ``backend.rng(SeedSequence(seed, spawn_key=(s, i, code(d))))`` with
``code(REMOVE) = 0``, ``code(ADD) = 1``. The model draws one sigma-free transcript per chunk
and direction and evaluates the privacy loss for **every** sigma of the sweep on it (common
random numbers; ``model.privacy_losses``, which a model may fuse block by block), and the
engine folds each loss vector into the (sigma, direction)
:class:`~minsep.framework.montecarlo.accumulators.LossTally`.

Determinism: a run is a function of (model, sigmas, checks, seed, stream, n_samples,
chunk_size, backend); chunk results are merged in chunk order, so executors and worker counts
do not change a single bit. Streams separate independent sample sets of one seed (the pilot,
stream 0, and the verification, stream 1, never share draws). Runs with the same chunk size
are prefixes of each other: the first ``k`` chunks of a longer run are those of a shorter one.

Memory (per worker): one chunk of ``chunk_size`` samples, each costing the model's
``bytes_per_sample`` (its transcript and working arrays; :mod:`.planning` checks this against
``EngineConfig.memory_budget`` before anything is allocated), one loss vector (``chunk_size *
8`` bytes) at a time, and per (sigma, direction) the accumulators: a histogram of at most
``max_loss * 2**bin_bits`` int64 counts (2 MiB by default, usually far less since it only
grows to the largest loss seen) plus two floats per checked epsilon. A calibration sweep of
``S`` sigmas without histograms adds only ``2 * S * checks`` floats.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import BACKEND_SPECS, Backend, get_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.interrupts import INTERRUPT_SIGNALS, interrupt_handler
from minsep.framework.montecarlo.accumulators import (
    NATIVE_NAMESPACES,
    BinSpec,
    SweepTally,
    accumulate,
)
from minsep.framework.montecarlo.checkpoint import Checkpoint, Journal
from minsep.framework.montecarlo.executors import Executor, LocalExecutor
from minsep.framework.montecarlo.planning import MIN_SIGMA, chunk_size_for
from minsep.framework.montecarlo.progress import progress_bar

__all__ = [
    "BOTH",
    "MAX_SAMPLES",
    "MIN_SIGMA",
    "PILOT_STREAM",
    "VERIFY_STREAM",
    "ChunkTask",
    "EngineConfig",
    "chunk_seed",
    "engine_config",
    "sample",
    "sample_chunks",
]

#: Stream of the pilot (estimation) samples.
PILOT_STREAM = 0
#: Stream of the verification samples (independent of the pilot).
VERIFY_STREAM = 1
#: Both directions, REMOVE first.
BOTH: tuple[Direction, ...] = (Direction.REMOVE, Direction.ADD)

#: The most samples per direction one run takes: counts up to 2**53 are exact in float64 (the
#: tallies and the concentration bounds use them as floats), and 2**53 samples already take
#: centuries on one machine.
MAX_SAMPLES = 1 << 53

_DIRECTION_CODE = {Direction.REMOVE: 0, Direction.ADD: 1}


def chunk_seed(seed: int, stream: int, chunk: int, direction: Direction) -> np.random.SeedSequence:
    """The seed sequence of one chunk: ``SeedSequence(seed, spawn_key=(stream, chunk, d))``."""
    for name, value in (("seed", seed), ("stream", stream), ("chunk", chunk)):
        v.check_range("chunk_seed", name, value, low=0, integer=True)
    return np.random.SeedSequence(seed, spawn_key=(stream, chunk, _DIRECTION_CODE[direction]))


def _check_seed(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise v.fail(instance, attribute.name, value, "an integer >= 0")


def _backend_spec(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, Backend) and value not in BACKEND_SPECS:
        raise v.fail(instance, attribute.name, value, f"a Backend or one of {list(BACKEND_SPECS)}")


def _executor(instance: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, str) or not isinstance(value, Executor):
        raise v.fail(
            instance,
            attribute.name,
            value,
            "an executor object (LocalExecutor(), ProcessExecutor(workers), DaskExecutor(...)), "
            "not a name",
        )


def _of_type(kind: type, optional: bool = False) -> Any:
    def check(instance: Any, attribute: Any, value: Any) -> None:
        if not (isinstance(value, kind) or (optional and value is None)):
            allowed = f"a {kind.__name__}" + (" or None" if optional else "")
            raise v.fail(instance, attribute.name, value, allowed)

    return check


def _progress(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise v.fail(instance, attribute.name, value, "True, False or None")


def engine_config(config: Any, owner: str) -> EngineConfig:
    """``config`` when it is an :class:`EngineConfig`, the default for None; anything else is
    a ConfigurationError naming ``owner``'s ``config`` parameter."""
    if config is None:
        return EngineConfig()
    if not isinstance(config, EngineConfig):
        raise ConfigurationError(
            f"{owner}.config = {config!r} is invalid: must be an EngineConfig or None",
            parameter="config",
        )
    return config


def _positive_sigmas(instance: Any, attribute: Any, value: Any) -> None:
    if not value or not all(
        isinstance(s, float) and math.isfinite(s) and s >= MIN_SIGMA for s in value
    ):
        raise v.fail(
            instance, attribute.name, value, f"a non-empty tuple of finite numbers >= {MIN_SIGMA}"
        )


def _finite_checks(instance: Any, attribute: Any, value: Any) -> None:
    if not all(isinstance(e, float) and math.isfinite(e) and e >= 0 for e in value):
        raise v.fail(instance, attribute.name, value, "finite epsilons >= 0")


def _directions(instance: Any, attribute: Any, value: Any) -> None:
    if (
        not value
        or len(set(value)) != len(value)
        or not all(isinstance(d, Direction) for d in value)
    ):
        raise v.fail(instance, attribute.name, value, "distinct Directions (at least one)")


def _floats(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(x) for x in values)


def _tuple(values: Iterable[Direction]) -> tuple[Direction, ...]:
    # a typed converter: mypy's attrs plugin cannot solve the bare ``tuple`` converter
    return tuple(values)


@attrs.frozen
class EngineConfig:
    """How a run is computed (not what it computes): chunking, backend, executor, progress.

    Attributes:
        chunk_size: samples per chunk and direction (bounds memory; part of the determinism
            key: another chunk size gives another, equally valid, sample).
        backend: backend spec (``"numpy"``, ``"cupy"``, ``"auto"``, optionally with a kernel
            set: ``"numpy:array"``) or a Backend object (the latter only with in-process
            executors for stand-in namespaces, since those do not pickle). The spec resolved
            in the parent (kernel set included) is what worker processes rebuild.
        executor: where chunks run (``LocalExecutor``, ``ProcessExecutor``, ``DaskExecutor``
            or a plugin).
        progress: show progress: None = a tqdm bar on a terminal, else plain lines once a
            stage runs 10 s (:mod:`.progress`); True = always; False = never.
        bins: the histogram grid.
        checkpoint: save progress there and resume from it (one file per accounting
            question, one stage per :func:`sample` call, keyed by its ``description``; see
            :mod:`~minsep.framework.montecarlo.checkpoint`).
        memory_budget: bytes a worker may spend on one chunk; when set, :func:`sample`
            refuses (ConfigurationError, with the figures) a chunk size whose planned memory
            exceeds it (:func:`~minsep.framework.montecarlo.planning.chunk_size_for`). None:
            not checked.
    """

    chunk_size: int = attrs.field(default=1 << 16, validator=v.integer(low=1, high=1 << 28))
    backend: str | Backend = attrs.field(default="numpy", validator=_backend_spec)
    executor: Executor = attrs.field(factory=LocalExecutor, validator=_executor)
    progress: bool | None = attrs.field(default=None, validator=_progress)
    bins: BinSpec = attrs.field(factory=BinSpec, validator=_of_type(BinSpec))
    checkpoint: Checkpoint | None = attrs.field(
        default=None, validator=_of_type(Checkpoint, optional=True)
    )
    memory_budget: int | None = attrs.field(default=None, validator=v.optional(v.positive_int()))

    def backend_name(self) -> str:
        """The name of the backend (resolving ``"auto"``)."""
        return str(get_backend(self.backend).name)


@attrs.frozen
class ChunkTask:
    """One run's work, callable on a chunk index (picklable for process/Dask executors).

    ``task(i)`` returns the :class:`SweepTally` of chunk ``i``. :meth:`describe` gives the plain
    data that identifies the run (for checkpoints: a checkpoint is valid for a task iff the
    descriptions agree).
    """

    model: PrivacyLossModel
    sigmas: tuple[float, ...] = attrs.field(converter=_floats, validator=_positive_sigmas)
    n_samples: int = attrs.field(validator=v.integer(low=1, high=MAX_SAMPLES))
    seed: int = attrs.field(converter=v.plain_number, validator=_check_seed)
    stream: int = attrs.field(default=PILOT_STREAM, validator=v.integer(low=0))
    checks: tuple[float, ...] = attrs.field(default=(), converter=_floats, validator=_finite_checks)
    directions: tuple[Direction, ...] = attrs.field(
        default=BOTH, converter=_tuple, validator=_directions
    )
    chunk_size: int = attrs.field(default=1 << 16, validator=v.integer(low=1, high=1 << 28))
    bins: BinSpec | None = attrs.field(factory=BinSpec)
    backend: str | Backend = "numpy"

    @property
    def n_chunks(self) -> int:
        """``ceil(n_samples / chunk_size)``."""
        return -(-self.n_samples // self.chunk_size)

    def chunk_length(self, index: int) -> int:
        """Samples in chunk ``index`` (the last chunk may be shorter)."""
        if not 0 <= index < self.n_chunks:
            raise ConfigurationError(
                f"ChunkTask.index = {index!r} is invalid: must be in [0, {self.n_chunks - 1}]"
            )
        return min(self.chunk_size, self.n_samples - index * self.chunk_size)

    def empty(self) -> SweepTally:
        """An empty tally of this run's shape."""
        return SweepTally.empty(self.sigmas, self.directions, self.checks, self.bins)

    def describe(self) -> dict[str, Any]:
        """Plain data identifying the run (model by repr)."""
        return {
            "model": repr(self.model),
            "sigmas": list(self.sigmas),
            "n_samples": self.n_samples,
            "seed": self.seed,
            "stream": self.stream,
            "checks": list(self.checks),
            "directions": [d.value for d in self.directions],
            "chunk_size": self.chunk_size,
            "bins": None if self.bins is None else attrs.asdict(self.bins),
            # the name only: kernel sets agree to rounding, so a checkpoint resumes across them
            "backend": _backend_name(self.backend),
        }

    def __call__(self, index: int) -> SweepTally:
        """Draw chunk ``index`` and return its tally."""
        size = self.chunk_length(index)
        backend = get_backend(self.backend)
        out = self.empty()
        for direction in self.directions:
            rng = backend.rng(chunk_seed(self.seed, self.stream, index, direction))
            losses = self.model.privacy_losses(size, direction, rng, backend, self.sigmas)
            for i, loss in enumerate(losses):
                accumulate(out.tally(i, direction), loss, size, backend, self.bins)
        return out


def _backend_name(backend: str | Backend) -> str:
    """The backend's name without its kernel set (``"numpy:array"`` -> ``"numpy"``)."""
    return backend.partition(":")[0] if isinstance(backend, str) else backend.name


def _bar(total: int, progress: bool | None, description: str) -> Any:
    # a tqdm bar on a terminal, plain lines elsewhere (see .progress)
    return progress_bar(total, progress, description)


def sample_chunks(
    task: ChunkTask,
    indices: Sequence[int],
    config: EngineConfig,
    *,
    into: SweepTally | None = None,
    description: str = "sampling",
    stage: str | None = None,
) -> SweepTally:
    """Run ``task`` on ``indices`` with ``config.executor`` and merge in index order.

    ``into`` continues an existing tally (e.g. loaded from a checkpoint holding chunks
    ``0..k-1``; pass ``range(k, task.n_chunks)``): merging continues in chunk order, so the
    result is bit-identical to an uninterrupted run.

    With ``stage`` and ``config.checkpoint`` set, the run is checkpointed under that stage
    label: ``indices`` must be ``range(task.n_chunks)`` and ``into`` None; chunks already in
    the checkpoint are not run again, and the merged tally is saved as chunks complete.
    """
    if stage is None or config.checkpoint is None:
        return _merge_chunks(task, indices, config, into, description, None)
    if into is not None or not (isinstance(indices, range) and indices == range(task.n_chunks)):
        raise ConfigurationError(
            f"sample_chunks.indices = {indices!r} is invalid: a checkpointed run must cover "
            f"range({task.n_chunks}) with into=None"
        )
    with config.checkpoint.locked():
        journal = config.checkpoint.journal(stage, task.describe(), task.n_chunks)
        indices = range(journal.chunks_done, task.n_chunks)
        return _merge_chunks(task, indices, config, journal.tally, description, journal)


def _merge_chunks(
    task: ChunkTask,
    indices: Sequence[int],
    config: EngineConfig,
    into: SweepTally | None,
    description: str,
    journal: Journal | None,
) -> SweepTally:
    """The merge loop of :func:`sample_chunks`.

    A chunk's merge and its journal record form one step that Ctrl-C or SIGTERM cannot split
    (both are deferred across it); on KeyboardInterrupt (Terminated included) the journal
    saves the tally of the chunks merged so far before the interrupt propagates, so a rerun
    resumes from there.
    """
    total = task.empty() if into is None else into
    samples = sum(task.chunk_length(i) for i in indices)
    try:
        with _bar(samples * len(task.directions), config.progress, description) as bar:
            for index, result in zip(indices, config.executor.map(task, indices), strict=True):
                with _DeferredInterrupt():
                    total.merge(result)
                    if journal is not None:
                        journal.record(total, index + 1)
                bar.update(task.chunk_length(index) * len(task.directions))
    except KeyboardInterrupt:
        if journal is not None:
            journal.finish(total)
        raise
    if journal is not None:
        journal.finish(total)
    return total


class _DeferredInterrupt:
    """Hold back SIGINT (Ctrl-C) and SIGTERM while the block runs; raise the interrupt
    (KeyboardInterrupt, or Terminated for SIGTERM) after it.

    Only in the main thread and for a signal whose interrupt handler is installed (Python's
    default for SIGINT; :func:`~minsep.framework.interrupts.sigterm_as_interrupt` for
    SIGTERM); elsewhere a no-op.
    """

    def __init__(self) -> None:
        self._pending: type[KeyboardInterrupt] | None = None
        self._previous: dict[int, Any] = {}

    def _hold(self, signum: int, frame: Any) -> None:
        for held, kind in INTERRUPT_SIGNALS:
            if held == signum and self._pending is None:
                self._pending = kind

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, _ in INTERRUPT_SIGNALS:
            if signal.getsignal(signum) is interrupt_handler(signum):
                self._previous[signum] = signal.signal(signum, self._hold)

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if self._pending is not None and kind is None:
            raise self._pending


def sample(
    model: PrivacyLossModel,
    sigmas: Sequence[float],
    *,
    n_samples: int,
    seed: int,
    stream: int = PILOT_STREAM,
    checks: Sequence[float] = (),
    directions: Sequence[Direction] = BOTH,
    histograms: bool = True,
    config: EngineConfig | None = None,
    description: str = "sampling",
) -> SweepTally:
    """Draw ``n_samples`` losses per direction and tally them for every sigma.

    With ``config.checkpoint`` the run is a checkpoint stage labelled ``description``.

    Args:
        model: the privacy-loss model (dominating pair).
        sigmas: noise multipliers evaluated on the same draws (common random numbers).
        n_samples: samples per direction.
        seed: root entropy (int >= 0); with ``stream`` it fixes every draw.
        stream: which independent sample set of this seed (pilot 0, verification 1, ...).
        checks: epsilons at which exact sums of X and X^2 are kept.
        directions: REMOVE and/or ADD.
        histograms: keep the conservative histogram of L (needed for epsilon estimates).
        config: chunking, backend, executor, progress.
    """
    config = engine_config(config, "sample")
    backend: str | Backend = config.backend
    if isinstance(backend, str) or backend.name in NATIVE_NAMESPACES:
        # resolve "auto" and the default kernel set once, keep a picklable spec
        backend = get_backend(backend).spec
    if config.memory_budget is not None:  # refuse before allocating anything
        chunk_size_for(model, config.memory_budget, requested=config.chunk_size, backend=backend)
    task = ChunkTask(
        model,
        tuple(sigmas),
        n_samples,
        seed,
        stream,
        tuple(checks),
        tuple(directions),
        config.chunk_size,
        config.bins if histograms else None,
        backend,
    )
    return sample_chunks(
        task, range(task.n_chunks), config, description=description, stage=description
    )
