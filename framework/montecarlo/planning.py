"""Plan a Monte Carlo run before it allocates or spends anything: memory, chunks and time.

Memory. A worker holds one chunk at a time: ``chunk_size * bytes_per_sample + fixed_bytes``
bytes (``fixed_bytes``: ``FIXED_ROWS`` rows of n for the kernels' per-evaluation tables), where
``bytes_per_sample`` is the largest :meth:`~minsep.framework.interfaces.PrivacyLossModel.
bytes_per_sample` over the directions drawn plus ``ENGINE_BYTES_PER_SAMPLE`` for the engine's
own per-sample vectors (the loss, the hockey-stick terms, the bin indices). Given a budget per
worker (default ``DEFAULT_MEMORY_BUDGET``, fixed so that default chunk sizes, and hence results,
do not depend on the machine), :func:`chunk_size_for` picks the chunk size or refuses, with the
figures, before a single array is allocated. Fixed per-chunk scratch (the kernels' blocks,
histograms) is not counted; it is a few MiB.

Time. :func:`measure_rates` times a small probe (a few samples per direction, on separate
seeds, so the run's draws are untouched) and :class:`RunPlan` extrapolates: a stage of ``m``
samples per direction and ``S`` sigmas costs ``m (t_draw + S t_eval)`` per direction, divided
by the number of workers (an optimistic reading of parallel speed-up). An estimate, not a
promise: the first call of a compiled kernel, other load on the machine and the scheduler's
overhead are not in it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.framework.backend import Backend, get_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "ENGINE_BYTES_PER_SAMPLE",
    "MIN_SIGMA",
    "RunPlan",
    "Stage",
    "available_memory",
    "chunk_size_for",
    "default_chunk_size",
    "fixed_bytes",
    "format_bytes",
    "measure_rates",
    "sample_bytes",
]

#: The smallest noise multiplier the Monte Carlo engine takes (its runs and its rate probe). The
#: loss models scale signals by 1/sigma^2, which overflows below about 1e-154; 1e-100 keeps that
#: factor (1e200) times any signal of a realistic run finite. Far below it epsilon is
#: astronomically large anyway.
MIN_SIGMA = 1e-100

#: Memory a worker may spend on one chunk unless told otherwise (1 GiB).
DEFAULT_MEMORY_BUDGET = 1 << 30
#: The engine's own per-sample vectors (loss, hockey-stick terms, bin indices), with margin.
ENGINE_BYTES_PER_SAMPLE = 64
#: Rows of n float64 a chunk needs whatever its size (the tables of n values the kernels build
#: per evaluation: tail norms, their prefix sums, signal tables; measured about 14).
FIXED_ROWS = 16
#: Preferred float64 values per transcript array of a chunk (chunk ~ this / n_steps).
PREFERRED_VALUES_PER_CHUNK = 1 << 23
#: Preferred chunk sizes are clipped to this range, then to what the memory budget allows.
PREFERRED_CHUNK_RANGE = (1024, 65536)
#: Most sample-steps timed per direction by :func:`measure_rates` (about 0.05 s here).
PROBE_SAMPLE_STEPS = 1 << 21
#: A probe that takes this long is long enough to time (seconds).
PROBE_SECONDS = 0.05
#: A warm-up this slow is kept as the measurement instead of being repeated (seconds).
WARM_UP_SECONDS = 1.0

#: Logger of the plans (the CLI prints its INFO records on stderr).
logger = logging.getLogger("minsep.plan")


def format_bytes(count: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def format_seconds(seconds: float) -> str:
    """``5400`` -> ``'1.5 h'``."""
    if not math.isfinite(seconds):
        return "unbounded"
    for limit, unit in ((60.0, "s"), (3600.0, "min"), (86400.0, "h"), (86400.0 * 365, "days")):
        scale = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}[unit]
        if seconds < limit:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / (86400.0 * 365):.3g} years"


def available_memory() -> int | None:
    """MemAvailable of this machine in bytes (Linux ``/proc/meminfo``), else None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def sample_bytes(
    model: PrivacyLossModel,
    backend: str | Backend = "numpy",
    directions: Sequence[Direction] = (Direction.REMOVE, Direction.ADD),
) -> int:
    """Peak bytes one sample of a chunk costs a worker: the model's largest
    ``bytes_per_sample`` over ``directions`` plus ``ENGINE_BYTES_PER_SAMPLE``."""
    resolved = get_backend(backend)
    declared = max(int(model.bytes_per_sample(d, resolved)) for d in directions)
    return declared + ENGINE_BYTES_PER_SAMPLE


def fixed_bytes(model: PrivacyLossModel) -> int:
    """Bytes a chunk needs whatever its size: ``FIXED_ROWS`` rows of ``n_steps`` float64."""
    return 8 * FIXED_ROWS * max(int(model.n_steps), 1)


def default_chunk_size(n_steps: int) -> int:
    """``clip(2**23 // n_steps, 1024, 65536)``: the preferred chunk before the memory cap."""
    low, high = PREFERRED_CHUNK_RANGE
    return int(min(max(PREFERRED_VALUES_PER_CHUNK // max(n_steps, 1), low), high))


def chunk_size_for(
    model: PrivacyLossModel,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    *,
    requested: int | None = None,
    backend: str | Backend = "numpy",
) -> int:
    """The chunk size of a run whose workers may each spend ``memory_budget`` bytes on a chunk.

    With ``requested`` None: ``min(default_chunk_size(n), (memory_budget - fixed_bytes) //
    sample_bytes)``
    (the preferred floor of 1024 gives way to the budget for long runs). With ``requested``:
    that size if it fits. Raises ConfigurationError, with bytes needed against the budget,
    when the requested chunk does not fit or not even one sample does.
    """
    if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 1:
        raise ConfigurationError(
            f"memory_budget = {memory_budget!r} is invalid: must be an integer number of bytes >= 1"
        )
    per_sample = sample_bytes(model, backend)
    fixed = fixed_bytes(model)
    fits = max(memory_budget - fixed, 0) // per_sample
    if fits < 1:
        need = fixed + per_sample
        raise ConfigurationError(
            f"memory_budget = {memory_budget} bytes ({format_bytes(memory_budget)}) is too "
            f"small: one Monte Carlo sample of {type(model).__name__} with n_steps = "
            f"{model.n_steps} needs {need} bytes ({format_bytes(need)}: {per_sample} per "
            f"sample and {fixed} per chunk) per worker; must be >= {need} (raise the memory "
            "budget or use fewer steps)"
        )
    if requested is None:
        return min(default_chunk_size(model.n_steps), fits)
    if requested > fits:
        raise ConfigurationError(
            f"chunk_size = {requested} is invalid: {requested} samples x {per_sample} bytes + "
            f"{fixed} bytes per chunk = {format_bytes(requested * per_sample + fixed)} per "
            "worker exceed the memory budget of "
            f"{format_bytes(memory_budget)} ({memory_budget} bytes); must be <= {fits} (or "
            "raise the memory budget)"
        )
    return requested


@attrs.frozen
class Stage:
    """One sampling stage: ``samples`` per direction, each evaluated at ``sigmas`` sigmas."""

    name: str
    samples: int
    sigmas: int
    directions: int = 2
    optional: bool = False


@attrs.frozen
class RunPlan:
    """The work of one accounting question, known before it starts (module docstring).

    Attributes:
        question: what is asked (``"epsilon"``, ``"calibrate"``, ...).
        stages: the sampling stages, in order (``optional`` ones run only when needed).
        chunk_size: samples per chunk and direction.
        bytes_per_sample: peak bytes per sample of a chunk (:func:`sample_bytes`).
        fixed_bytes: bytes a chunk needs whatever its size (:func:`fixed_bytes`).
        memory_budget: bytes a worker may spend on a chunk.
        workers: workers sharing the chunks.
        draw_seconds: measured seconds to draw one sample (one direction), or None.
        eval_seconds: measured seconds to evaluate one sample at one sigma, or None.
        n_steps: steps n of one sample (throughput is then also given in sample·steps/s, the
            unit every command reports), or None.
    """

    question: str
    stages: tuple[Stage, ...]
    chunk_size: int
    bytes_per_sample: int
    memory_budget: int
    workers: int = 1
    fixed_bytes: int = 0
    draw_seconds: float | None = None
    eval_seconds: float | None = None
    n_steps: int | None = None
    #: cores the run can expect (:func:`~minsep.framework.workers.expected_cores`: the
    #: workers' fair share of the CPUs under the current load); None: ``workers``
    cores: float | None = None

    def chunks(self, stage: Stage) -> int:
        """``ceil(samples / chunk_size)`` chunks per direction."""
        return -(-stage.samples // self.chunk_size)

    @property
    def chunk_bytes(self) -> int:
        """Peak bytes of one chunk on a worker."""
        return self.chunk_size * self.bytes_per_sample + self.fixed_bytes

    @property
    def total_samples(self) -> int:
        """Samples drawn over every stage and direction (optional stages included)."""
        return sum(s.samples * s.directions for s in self.stages)

    def stage_seconds(self, stage: Stage) -> float | None:
        """Estimated seconds of ``stage`` (None until rates are measured)."""
        if self.draw_seconds is None or self.eval_seconds is None:
            return None
        per_sample = self.draw_seconds + stage.sigmas * self.eval_seconds
        cores = self.workers if self.cores is None else self.cores
        return stage.samples * stage.directions * per_sample / max(cores, 1e-3)

    @property
    def estimated_seconds(self) -> float | None:
        """Estimated seconds of every stage together (optional ones included), or None."""
        times = [self.stage_seconds(s) for s in self.stages]
        if any(t is None for t in times):
            return None
        return float(sum(t for t in times if t is not None))

    def describe_work(self) -> str:
        """One line: stages, samples, chunks and memory."""
        parts = []
        for stage in self.stages:
            text = (
                f"{stage.name} {stage.samples:,} samples x {stage.directions} directions x "
                f"{stage.sigmas} sigma{'s' if stage.sigmas != 1 else ''} "
                f"({self.chunks(stage):,} chunk{'s' if self.chunks(stage) != 1 else ''})"
            )
            parts.append(text + (" if needed" if stage.optional else ""))
        return (
            f"{self.question}: {len(self.stages)} stages: {'; '.join(parts)}; chunk "
            f"{self.chunk_size:,} samples = {format_bytes(self.chunk_bytes)} per worker "
            f"(budget {format_bytes(self.memory_budget)}, {self.bytes_per_sample:,} bytes per "
            f"sample), {self.workers} worker{'s' if self.workers != 1 else ''}"
        )

    def describe_time(self) -> str:
        """One line: the time estimate and the measured rates it rests on."""
        total = self.estimated_seconds
        if total is None or self.draw_seconds is None or self.eval_seconds is None:
            return f"{self.question}: time not estimated"
        unit, scale = ("samples/s", 1) if self.n_steps is None else ("sample·steps/s", self.n_steps)
        if self.cores is None:
            share = ", assuming the workers run in parallel" if self.workers > 1 else ""
        else:
            share = (
                f", at the {self.cores:.2g} core{'s' if self.cores != 1 else ''} the "
                f"{self.workers} worker{'s' if self.workers != 1 else ''} can expect under "
                "the current load"
            )
        return (
            f"{self.question}: estimated {format_seconds(total)} for "
            f"{self.total_samples:,} samples (measured on one worker, per CPU second: drawing "
            f"{_rate(self.draw_seconds / scale)} {unit}, evaluating "
            f"{_rate(self.eval_seconds / scale)} {unit} per sigma{share})"
        )


def _rate(seconds: float) -> str:
    rate = 1.0 / max(seconds, 1e-12)
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def _probe_samples(model: PrivacyLossModel, chunk_size: int) -> int:
    return max(1, min(chunk_size, PROBE_SAMPLE_STEPS // max(model.n_steps, 1)))


def measure_rates(
    model: PrivacyLossModel,
    sigma: float,
    *,
    chunk_size: int,
    backend: str | Backend = "numpy",
    seed: int = 0,
) -> tuple[float, float]:
    """``(draw, evaluation)`` seconds per sample and direction, timed on a small probe: CPU
    seconds of this process on the host backends (other work on the machine does not inflate
    them; :class:`RunPlan` divides by the cores the run can expect), wall seconds on a GPU.

    Per direction: two one-sample warm-ups (the first compiles kernels and is never used; the
    second is used as the measurement when it takes ``WARM_UP_SECONDS`` or more), then probes
    of 1, 8, 64, ...
    samples (``draw``, then one ``privacy_loss`` plus tally at ``sigma``) until one takes
    ``PROBE_SECONDS`` or reaches ``min(chunk, 2**21 / n)`` samples; the last one is used. A
    costly model (e.g. large k_u) is thus timed on a single sample. The probe draws on its own
    seed sequence (spawn key ``(2**31, direction)``), never from a run's streams.
    """
    from minsep.framework.montecarlo.accumulators import BinSpec, LossTally, accumulate

    # the probe runs before the question's own checks: refuse a sigma the engine refuses
    check_range("measure_rates", "sigma", sigma, low=MIN_SIGMA)
    resolved = get_backend(backend)
    clock = time.process_time if resolved.name == "numpy" else time.perf_counter
    largest = _probe_samples(model, chunk_size)
    draw_total = eval_total = 0.0
    directions = (Direction.REMOVE, Direction.ADD)
    for code, direction in enumerate(directions):
        rngs = iter(np.random.SeedSequence(seed, spawn_key=(1 << 31, code)).spawn(64))
        size, warm_ups = 1, 2
        while True:
            start = clock()
            transcript = model.draw(size, direction, resolved.rng(next(rngs)), resolved)
            middle = clock()
            loss = model.privacy_loss(transcript, sigma)
            accumulate(LossTally.empty((1.0,), BinSpec()), loss, size, resolved, BinSpec())
            end = clock()
            if warm_ups:  # the first call compiles kernels: time a second one-sample call
                warm_ups -= 1
                if warm_ups or end - start < WARM_UP_SECONDS:
                    continue
            if end - start >= PROBE_SECONDS or size >= largest:
                break
            size = min(8 * size, largest)
        draw_total += (middle - start) / size
        eval_total += (end - middle) / size
    return draw_total / len(directions), eval_total / len(directions)
