"""Monte Carlo accounting by estimate-verify-release (docs/math.md §7, paper App. A).

Works with any scheme whose ``loss_model(strategy)`` returns a
:class:`~minsep.framework.interfaces.PrivacyLossModel`. Every answer carries the point
estimate, the certified bound, the verification samples ``m``, the failure probability already
folded into delta, the seed that reproduces it and the time it took. The guarantees are those
of :mod:`minsep.framework.montecarlo.evr` (epsilon, delta) and
:mod:`minsep.framework.montecarlo.calibration` (Algorithm 5).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import attrs
import numpy as np

from minsep.accountants.escort_engine import EscortProposal, EscortTarget
from minsep.accountants.routes import Route, auto_proposal
from minsep.framework import validation as v
from minsep.framework.backend import BACKEND_SPECS, get_backend, requested_kernels
from minsep.framework.errors import CalibrationError, ConfigurationError, NotAccountableError
from minsep.framework.interfaces import (
    Accountant,
    AccountantKind,
    PrivacyLossModel,
    Question,
    SamplingScheme,
    Strategy,
)
from minsep.framework.montecarlo import (
    DEFAULT_MEMORY_BUDGET,
    EXECUTOR_KINDS,
    CertifiedCurve,
    Checkpoint,
    EngineConfig,
    Executor,
    RunPlan,
    Stage,
    base_delta,
    calibrate_sweep,
    certified_curve,
    certify_delta,
    certify_epsilon,
    chunk_size_for,
    geometric_sweep,
    get_executor,
    locate_sigma,
    measure_rates,
)
from minsep.framework.montecarlo.bounds import check_feasible_delta
from minsep.framework.montecarlo.checkpoint import writable_folder_problem
from minsep.framework.montecarlo.evr import DEFAULT_LADDER, EPSILON_BOUNDS
from minsep.framework.montecarlo.executors import call_on_worker
from minsep.framework.montecarlo.plain import PLAIN
from minsep.framework.montecarlo.planning import (
    available_memory,
    fixed_bytes,
    format_bytes,
    sample_bytes,
)
from minsep.framework.montecarlo.planning import logger as plan_log
from minsep.framework.montecarlo.proposals import PROPOSAL_KINDS, ProposalInfo
from minsep.framework.montecarlo.sampling import MAX_SAMPLES
from minsep.framework.montecarlo.warmup import start_workers
from minsep.framework.registries import accountants
from minsep.framework.results import (
    CalibrationResult,
    CurveResult,
    DeltaResult,
    EpsilonResult,
)
from minsep.framework.workers import MAX_WORKERS, expected_cores, resolve_workers

__all__ = ["MonteCarloAccountant"]

#: Sigmas tried per coarse and fine walk of the calibration pilot (see locate_sigma).
_FINE_STEPS = 8
#: The escort's pilot when its verification is sized by precision (it fixes the support bound).
_ESCORT_PILOT = 10_000


def _workers(value: Any) -> Any:
    """Converter: ``"auto"`` to the cores free now; other strings are refused (naming the
    field); numbers pass on to the validator."""
    value = v.plain_number(value)
    return resolve_workers(value, "MonteCarloAccountant") if isinstance(value, str) else value


def _as_tuple(values: Any) -> tuple[Any, ...]:
    # a typed converter: mypy's attrs plugin cannot solve the bare ``tuple`` converter
    return tuple(values)


def _guard_factors(instance: Any, attribute: Any, value: tuple[Any, ...]) -> None:
    ok = all(
        isinstance(g, int | float) and not isinstance(g, bool) and math.isfinite(g) and g > 1
        for g in value
    )
    if not ok or len(set(value)) != len(value):
        raise v.fail(instance, attribute.name, value, "distinct finite factors > 1")


F = TypeVar("F", bound=Callable[..., Any])


def _holding_checkpoint(method: F) -> F:
    """Run an accountant question while holding its checkpoint (when one is set)."""

    @functools.wraps(method)
    def wrapper(self: MonteCarloAccountant, *args: Any, **kwargs: Any) -> Any:
        with self._hold_checkpoint():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _path(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise v.fail(instance, attribute.name, value, "a file path (a non-empty str)")


def _proposal_notes(info: ProposalInfo | None) -> tuple[str, ...]:
    """What the escort did (order, Z, support bound, add direction); nothing for plain."""
    if info is None or info.method == "plain":
        return ()
    add = {
        "exact zero": "the add direction's delta is exactly 0 (epsilon >= ln(1/pi(empty)))",
        "deterministic": (
            "the add direction is certified deterministically by the Chernoff bound of "
            "docs/math.md §10 (no add samples drawn"
            + ("" if info.add_delta is None else f"; delta_add <= {info.add_delta:.3g}")
            + ")"
        ),
    }.get(info.add, "the add direction was verified by plain Monte Carlo")
    return (
        f"escort importance sampling: order lam = {info.order}, ln Z_lam = {info.log_z:.6g}, "
        f"weights W / s verified with support bound s = {info.support:.4g} (Fact 4.2 on W/s; "
        f"the released delta is s times the folded bound); {add}.",
    )


def _fallback_note(error: Exception) -> str:
    """The note of an ``auto`` run that chose the escort and fell back to plain sampling."""
    return (
        f"proposal: plain (auto fell back): the escort cannot run at this question ({error}); "
        "plain sampling answered it."
    )


def _plain_after_escort(samples: int, delta: float, candidates: int, error: Exception) -> None:
    """Refuse, naming both routes, when the plain fallback cannot certify ``delta`` with
    ``samples`` either (nothing is returned when it can)."""
    try:
        base_delta(samples, delta, candidates=candidates)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"MonteCarloAccountant.proposal = 'auto' chose the escort (plain sampling cannot "
            f"certify delta = {delta:.3g} with samples = {samples}: {exc}) but the escort "
            f"cannot run here ({error}); raise samples for plain sampling or use another "
            "accountant (rdp, gaussian; --accountant auto tries them in turn)",
            parameter="samples",
        ) from exc


def _estimate_index(deltas: tuple[float, ...], delta: float) -> int:
    """The last sweep index down to which every empirical delta is <= ``delta`` (-1: none):
    Algorithm 5's walk with the target delta in place of the base delta, i.e. the sigma the
    point estimate alone would select (no verification margin, no guarantee)."""
    index = -1
    for i, observed in enumerate(deltas):
        if not observed <= delta:  # NaN: an entry the walk never verified (escort)
            break
        index = i
    return index


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@accountants.register("monte_carlo")
@attrs.frozen
class MonteCarloAccountant(Accountant):
    """Monte Carlo EVR accountant for any scheme exposing a privacy-loss model.

    Attributes:
        samples: verification samples ``m`` per direction (the ``m`` of Fact 4.2), at most
            ``MAX_SAMPLES`` = 2**53.
        pilot_samples: estimation samples per direction (default ``max(samples // 4, 1000)``);
            they choose the claims but never certify them.
        seed: root seed of every stream; None draws fresh entropy, reported in the result.
        backend: ``"numpy"``, ``"cupy"`` or ``"auto"``, optionally with the kernel set of the
            loss models: ``"numpy:array"``, ``"numpy:numba"``, ``"cupy:cuda"``, ``"cupy:array"``
            (default: the fastest available; see :mod:`minsep.framework.backend`).
        chunk_size: samples per chunk; None picks ``clip(2**23 / n_steps, 1024, 65536)``,
            lowered to what ``memory_budget`` allows. Part of the reproducibility key with
            ``seed``. A chunk that does not fit the budget is refused before sampling.
        memory_budget: bytes a worker may spend on one chunk (the model's
            ``bytes_per_sample`` times the chunk size); None: 1 GiB. When not even one sample
            fits, the question is refused (ConfigurationError with both figures).
        max_seconds: refuse (ConfigurationError) a question whose estimated time exceeds
            this; None: no limit. The plan and the estimate are logged (logger
            ``minsep.plan``, INFO) before every run either way.
        workers: worker processes (1 = in-process); with ``executor="dask"`` and no
            ``scheduler``, the processes of an in-process Dask LocalCluster. ``"auto"``: the
            cores free at construction (:func:`minsep.framework.workers.resolve_workers`:
            usable CPUs less the rounded load average, at least 1; logged on
            ``minsep.plan``); the field then holds that number.
        executor: ``"local"``, ``"processes"`` or ``"dask"``; None picks ``"dask"`` when
            ``scheduler`` is set, else ``"local"`` for 1 worker and ``"processes"`` otherwise.
        scheduler: address of a running Dask scheduler (``"tcp://host:8786"``) or its
            scheduler file (``*.json``); implies ``executor="dask"``.
        checkpoint: a file where every sampling stage of a question saves its merged tally
            (stages ``pilot``/``verify``, ``pilot coarse``/``pilot fine``/``calibrate``,
            ``curve``); rerunning the same question resumes from it without redoing or
            double-counting a chunk. Another question (other parameters) with the same file is
            refused (CheckpointError). With ``seed`` None the checkpoint's seed is reused.
        checkpoint_interval: seconds between checkpoint saves (0: after every chunk).
        progress: progress bar (None: only on a terminal).
        sweep_ratio, sweep_size: Algorithm 5's geometric sweep (resolution and length).
        sweep_guards: factors g > 1 of extra, coarser sweep entries above the geometric sweep
            (``top * g``), so that a pilot that placed the sweep too low still certifies a
            (larger) sigma instead of failing; verified like every entry. ``()``: none.
        sigma_low, sigma_high: the range the calibration pilot searches.
        proposal: what the engine samples from (docs/rdp-escort.md §8): ``"plain"`` (the
            dominating pair), ``"escort"`` (importance sampling from the escort R_lam for the
            remove direction; b-min-sep BandMF only) or ``"auto"``: escort when the model
            supports it and plain sampling cannot certify the target delta with ``samples``
            (or, for a delta question, when the escort's support bound is below 1e-2, so its
            variance is 100x smaller); the result's ``proposal`` and notes say which ran.
        bound: how a certified epsilon is verified (docs/math.md §7, §7.2): ``"betting"`` (a
            walk down a fine epsilon grid with the betting test, one failure event for the
            whole grid: the tighter default) or ``"fact42"`` (the pilot's ladder of candidates
            verified by Fact 4.2 with a union bound). The result's ``bound`` says which ran;
            the escort and the delta and calibrate questions use Fact 4.2 either way.
        precision: the relative precision ``samples`` was chosen for (the CLI's
            ``--precision``; :meth:`route` sets it), or None. When set, the escort verifies
            on the fewest samples (at most ``samples``) reaching it once its pilot has fixed
            the support bound, and certifies the add direction by the deterministic bound of
            docs/math.md §10 where plain add draws at this precision would need more than
            ``samples`` or 10^7 (:class:`~minsep.accountants.escort_engine.EscortProposal`),
            with pilot ``min(pilot, 10,000)`` unless ``pilot_samples`` is given.
        routed: the route chooser's reason when :meth:`route` fixed ``proposal`` (the notes
            then say the route chose it, not the caller), or None.
    """

    kind: ClassVar[AccountantKind] = AccountantKind.MONTE_CARLO
    sound: ClassVar[bool] = True
    command_line_options: ClassVar[Mapping[str, str] | None] = {
        name: name
        for name in (
            *("samples", "pilot_samples", "seed", "backend", "workers", "executor"),
            *("scheduler", "checkpoint", "checkpoint_interval", "chunk_size", "progress"),
            *("memory_budget", "max_seconds", "proposal", "bound"),
        )
    }

    samples: int = attrs.field(
        default=1_000_000,
        converter=v.plain_number,
        validator=v.integer(low=100, high=MAX_SAMPLES),
    )
    pilot_samples: int | None = attrs.field(
        default=None,
        converter=v.plain_number,
        validator=v.optional(v.integer(low=100, high=MAX_SAMPLES)),
    )
    seed: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.integer(low=0))
    )
    backend: str = attrs.field(default="numpy", validator=v.one_of(*BACKEND_SPECS))
    chunk_size: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.integer(low=1, high=1 << 24))
    )
    workers: int = attrs.field(
        default=1, converter=_workers, validator=v.integer(low=1, high=MAX_WORKERS)
    )
    executor: str | None = attrs.field(
        default=None, validator=v.optional(v.one_of(*EXECUTOR_KINDS))
    )
    scheduler: str | None = None
    checkpoint: str | None = attrs.field(default=None, validator=v.optional(_path))
    checkpoint_interval: float = attrs.field(
        default=60.0, converter=v.plain_number, validator=v.number(low=0.0)
    )
    progress: bool | None = attrs.field(default=None, validator=v.optional(v.boolean()))
    memory_budget: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive_int())
    )
    max_seconds: float | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive())
    )
    sweep_ratio: float = attrs.field(
        default=1.01, converter=v.plain_number, validator=v.number(low=1.0, high=2.0, low_open=True)
    )
    sweep_size: int = attrs.field(
        default=24, converter=v.plain_number, validator=v.integer(low=2, high=10_000)
    )
    sweep_guards: tuple[float, ...] = attrs.field(
        default=(1.2, 1.5, 3.0), converter=_as_tuple, validator=_guard_factors
    )
    sigma_low: float = attrs.field(
        default=2.0**-4, converter=v.plain_number, validator=v.positive()
    )
    sigma_high: float = attrs.field(
        default=2.0**8, converter=v.plain_number, validator=v.positive()
    )
    proposal: str = attrs.field(default="auto", validator=v.one_of(*PROPOSAL_KINDS))
    precision: float | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive())
    )
    bound: str = attrs.field(default=EPSILON_BOUNDS[0], validator=v.one_of(*EPSILON_BOUNDS))
    routed: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.sigma_high <= self.sigma_low:
            raise v.fail(self, "sigma_high", self.sigma_high, f"> sigma_low = {self.sigma_low}")
        if self.scheduler is not None and self.executor not in (None, "dask"):
            raise v.fail(self, "scheduler", self.scheduler, f"None with executor {self.executor!r}")
        if self.executor == "local" and self.workers != 1:
            raise v.fail(self, "workers", self.workers, "1 with executor 'local'")
        if self.checkpoint is not None and not (
            self.checkpoint and Path(self.checkpoint).parent.is_dir()
        ):
            raise v.fail(self, "checkpoint", self.checkpoint, "a file path in an existing folder")
        if self.checkpoint is not None and Path(self.checkpoint).is_dir():
            raise v.fail(self, "checkpoint", self.checkpoint, "a file path, not a folder")
        if self.checkpoint is not None:
            problem = writable_folder_problem(self.checkpoint)
            if problem is not None:
                raise v.fail(
                    self, "checkpoint", self.checkpoint, f"a file in a writable folder ({problem})"
                )
        self._executor()  # validates the scheduler address; needs dask for "dask"

    @classmethod
    def example(cls) -> MonteCarloAccountant:
        """A cheap instance (20k verification samples, fixed seed) for the contract tests."""
        return cls(samples=20_000, pilot_samples=5_000, seed=20260214, chunk_size=4096)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"samples": 0}, "samples"),
            ({"samples": 2.5}, "samples"),
            ({"samples": 10**18}, "samples"),
            ({"pilot_samples": 10}, "pilot_samples"),
            ({"seed": -1}, "seed"),
            ({"backend": "tpu"}, "backend"),
            ({"chunk_size": 0}, "chunk_size"),
            ({"workers": 0}, "workers"),
            ({"executor": "mpi"}, "executor"),
            ({"executor": "local", "workers": 2}, "workers"),
            ({"executor": "processes", "scheduler": "tcp://127.0.0.1:8786"}, "scheduler"),
            ({"scheduler": "not an address"}, "scheduler"),
            ({"checkpoint": "/nonexistent-folder/run.ckpt"}, "checkpoint"),
            ({"checkpoint": "/"}, "checkpoint"),
            ({"checkpoint_interval": -1.0}, "checkpoint_interval"),
            ({"sweep_ratio": 1.0}, "sweep_ratio"),
            ({"sweep_size": 1}, "sweep_size"),
            ({"sweep_guards": (1.0,)}, "sweep_guards"),
            ({"sigma_low": 0.0}, "sigma_low"),
            ({"sigma_low": 2.0, "sigma_high": 1.0}, "sigma_high"),
            ({"memory_budget": 0}, "memory_budget"),
            ({"memory_budget": 2.5}, "memory_budget"),
            ({"max_seconds": 0.0}, "max_seconds"),
            ({"max_seconds": math.inf}, "max_seconds"),
            ({"proposal": "mcmc"}, "proposal"),
            ({"bound": "hoeffding"}, "bound"),
        ]

    # -- plumbing -------------------------------------------------------------------------

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None when ``scheme.loss_model(strategy)`` exists, else the text of the
        NotAccountableError (or ConfigurationError, e.g. bands > min-sep) it raises. An invalid
        ``MINSEP_KERNELS`` raises: it is the environment's error, not the pair's."""
        requested_kernels()
        try:
            scheme.loss_model(strategy)
        except (NotAccountableError, ConfigurationError) as exc:
            return str(exc)
        return None

    def _model(self, scheme: SamplingScheme, strategy: Strategy) -> PrivacyLossModel:
        try:
            model = scheme.loss_model(strategy)
        except (NotAccountableError, ConfigurationError):
            self.require(scheme, strategy)  # raises, naming the accountants that can
            raise
        if model.conjectured:
            warnings.warn(
                f"scheme {scheme.name!r}: its Monte Carlo accounting rests on an unproven "
                "conjecture (docs/math.md §5, Algorithm 4); the certified bounds assume it holds",
                UserWarning,
                stacklevel=3,
            )
        return model

    def _seed(self) -> int:
        if self.seed is not None:
            return self.seed
        checkpoint = self._checkpoint()
        if checkpoint is not None:  # resume a fresh-entropy run with its own seed
            stored = checkpoint.stored_seed()
            if stored is not None:
                return stored
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]

    def _executor(self) -> Executor:
        return get_executor(self.workers, self.executor, self.scheduler)

    def _start_workers(self, model: PrivacyLossModel, sigma: float) -> None:
        """Start a process pool's workers now, warming up on ``model``, so that their
        start-up overlaps the planning and the rate probe (a no-op for other executors)."""
        start_workers(model, self._executor(), get_backend(self.backend).spec, sigma)

    def start_workers(self, scheme: SamplingScheme, strategy: Strategy, sigma: float = 1.0) -> None:
        """Start the process pool's workers now, warming up on the pair's model at
        ``sigma``, without waiting (nothing for other executors, nor for a pair without a
        loss model: its question reports that). The question's run then finds them warm."""
        try:
            model = scheme.loss_model(strategy)
        except (NotAccountableError, ConfigurationError):
            return  # the question itself reports it
        self._start_workers(model, float(sigma))

    def _checkpoint(self) -> Checkpoint | None:
        if self.checkpoint is None:
            return None
        return Checkpoint(self.checkpoint, every_seconds=self.checkpoint_interval)

    def _hold_checkpoint(self) -> contextlib.AbstractContextManager[None]:
        """Hold the checkpoint's lock for a whole question (its stages, its seed lookup)."""
        checkpoint = self._checkpoint()
        return contextlib.nullcontext() if checkpoint is None else checkpoint.locked()

    def _pilot(self) -> int:
        return self.pilot_samples or max(self.samples // 4, 1000)

    def _budget(self) -> int:
        return DEFAULT_MEMORY_BUDGET if self.memory_budget is None else self.memory_budget

    def _chunk(self, model: PrivacyLossModel) -> int:
        backend = get_backend(self.backend).name
        return chunk_size_for(model, self._budget(), requested=self.chunk_size, backend=backend)

    def _config(self, model: PrivacyLossModel) -> EngineConfig:
        return EngineConfig(
            chunk_size=self._chunk(model),
            backend=get_backend(self.backend).spec,  # workers run the same kernel set
            executor=self._executor(),
            progress=self.progress,
            checkpoint=self._checkpoint(),
            memory_budget=self._budget(),
        )

    def _sweep(self, centre: float) -> tuple[float, ...]:
        """Algorithm 5's sweep around the pilot's ``centre``, most private first: the guard
        entries ``top * g`` (g in ``sweep_guards``, descending), then the fine geometric part
        ``top / ratio**j``, ``top = centre * ratio**(size // 3)``. Fixed before any
        verification draw, so one Fact 4.2 event still covers it (calibration module)."""
        above = max(self.sweep_size // 3, 1)
        top = centre * self.sweep_ratio**above
        guards = tuple(top * g for g in sorted(self.sweep_guards, reverse=True))
        return guards + geometric_sweep(top, self.sweep_ratio, self.sweep_size)

    def _stages(self, question: str) -> tuple[Stage, ...]:
        """The sampling stages ``question`` runs (see the methods below)."""
        pilot, m = self._pilot(), self.samples
        if question in ("epsilon", "delta"):
            return (Stage("pilot", pilot, 1), Stage("verify", m, 1))
        if question == "calibrate":
            coarse = round(math.log2(self.sigma_high / self.sigma_low)) + 1
            return (
                Stage("pilot coarse", max(pilot // 4, 2), coarse),
                Stage("pilot fine", pilot, _FINE_STEPS + 1, optional=True),
                Stage("calibrate", m, len(self._sweep(1.0))),
            )
        if question == "curve":
            return (Stage("curve", m, 1),)
        raise ConfigurationError(
            f"MonteCarloAccountant.plan.question = {question!r} is invalid: must be one of "
            "['epsilon', 'delta', 'calibrate', 'curve']"
        )

    def plan(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        question: str = "epsilon",
        sigma: float = 1.0,
        *,
        measure: bool = True,
    ) -> RunPlan:
        """The work ``question`` would do for this pair, without doing it: stages, samples,
        chunks, memory per worker and (with ``measure``) a time estimate from a small probe at
        ``sigma``. Raises ConfigurationError when the chunk does not fit the memory budget."""
        return self._plan(self._model(scheme, strategy), question, sigma, measure=measure)

    def _plan(
        self, model: PrivacyLossModel, question: str, sigma: float, *, measure: bool
    ) -> RunPlan:
        backend = get_backend(self.backend).name
        chunk = self._chunk(model)
        plan = RunPlan(
            question=question,
            stages=self._stages(question),
            chunk_size=chunk,
            bytes_per_sample=sample_bytes(model, backend),
            memory_budget=self._budget(),
            workers=self.workers,
            fixed_bytes=fixed_bytes(model),
            n_steps=int(model.n_steps),
            # a remote cluster's load is not known here: its workers are taken as free
            cores=None if self.scheduler is not None else expected_cores(self.workers),
        )
        if not measure:
            return plan
        # timed where the chunks run: on a warm pool worker when there is one
        probe = functools.partial(
            measure_rates, model, sigma, chunk_size=chunk, backend=get_backend(self.backend).spec
        )
        draw, evaluate = call_on_worker(self._executor(), probe)
        return attrs.evolve(plan, draw_seconds=draw, eval_seconds=evaluate)

    def _announce(
        self,
        model: PrivacyLossModel,
        question: str,
        sigma: float,
        proposal: EscortProposal | None = None,
        epsilon: float = 0.0,
    ) -> RunPlan | None:
        """Plan ``question``, log the plan (and the estimate), refuse it over ``max_seconds``;
        an escort run is planned with the escort engine's rates (:meth:`_announce_escort`)."""
        if proposal is not None:
            self._announce_escort(model, question, sigma, proposal, epsilon)
            return None
        plan = self._plan(model, question, sigma, measure=False)
        plan_log.info("plan: %s", plan.describe_work())
        free = available_memory()
        local = self.scheduler is None
        if local and free is not None and plan.chunk_bytes * self.workers > free:
            plan_log.warning(
                "plan: %d worker(s) x %s per chunk exceed the %s of memory available now; "
                "lower the memory budget or the chunk size",
                self.workers,
                format_bytes(plan.chunk_bytes),
                format_bytes(free),
            )
        if self.max_seconds is None and not plan_log.isEnabledFor(logging.INFO):
            return plan
        plan = self._plan(model, question, sigma, measure=True)
        plan_log.info("plan: %s", plan.describe_time())
        estimate = plan.estimated_seconds
        if self.max_seconds is not None and estimate is not None and estimate > self.max_seconds:
            raise ConfigurationError(
                f"MonteCarloAccountant.max_seconds = {self.max_seconds!r} is exceeded: "
                f"{plan.describe_time()}; must be >= {estimate:.3g} for this question (or use "
                "fewer samples, more workers or an exact accountant)",
                parameter="max_seconds",
            )
        return plan

    def _announce_escort(
        self,
        model: PrivacyLossModel,
        question: str,
        sigma: float,
        proposal: EscortProposal,
        epsilon: float,
    ) -> None:
        """Log an escort run's plan, timed with the escort's own rate, and refuse it over
        ``max_seconds`` (:func:`~minsep.accountants.routes.escort_plan`)."""
        from minsep.accountants.routes import escort_plan

        if self.max_seconds is None and not plan_log.isEnabledFor(logging.INFO):
            return
        text, estimate = escort_plan(self, model, proposal, question, sigma, epsilon)
        plan_log.info("plan: %s", text)
        if self.max_seconds is not None and estimate is not None and estimate > self.max_seconds:
            raise ConfigurationError(
                f"MonteCarloAccountant.max_seconds = {self.max_seconds!r} is exceeded: {text}; "
                f"must be >= {estimate:.3g} for this question (or use fewer samples or more "
                "workers)",
                parameter="max_seconds",
            )

    def route(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        question: str,
        numbers: dict[str, float],
        precision: float,
        max_seconds: float | None = None,
    ) -> tuple[MonteCarloAccountant, Route]:
        """This accountant with the proposal and samples of the cheaper sound route for
        ``question`` at ``precision`` (:func:`~minsep.accountants.routes.choose_route`), and
        the route; a refused route (over ``max_seconds``) leaves the accountant unchanged."""
        from minsep.accountants.routes import CANDIDATES, choose_route
        from minsep.framework.montecarlo.precision import samples_for_precision

        model = self._model(scheme, strategy)
        delta = float(numbers["delta"])
        plain_m = samples_for_precision(delta, precision, candidates=CANDIDATES[question])
        sigma = float(numbers.get("sigma", 1.0))

        def plain_seconds() -> float | None:
            plain = attrs.evolve(self, samples=plain_m)
            return plain.plan(scheme, strategy, question, sigma).estimated_seconds

        route = choose_route(self, model, question, numbers, precision, max_seconds, plain_seconds)
        if route.refused:
            return self, route
        chosen = attrs.evolve(
            self,
            samples=route.samples,
            proposal=route.proposal,
            precision=route.precision,
            routed=route.reason,
        )
        return chosen, route

    def _provenance(self, question: Question, model: PrivacyLossModel) -> dict[str, Any]:
        backend = get_backend(self.backend)
        return {
            **question.provenance("monte_carlo"),
            "backend": backend.name,
            "kernels": model.kernel_set(backend),  # as seen by this process
            "chunk_size": self._chunk(model),  # the draws depend on it (seeded by chunk)
        }

    def _notes(self, model: PrivacyLossModel, notes: tuple[str, ...]) -> tuple[str, ...]:
        """``notes`` and the model's kernel notes (e.g. that the slow array path ran)."""
        return (*notes, *model.kernel_notes(get_backend(self.backend)))

    def _proposal(
        self, model: PrivacyLossModel, sigma: float | None, delta: float | None, epsilon: float
    ) -> tuple[EscortProposal | None, tuple[str, ...]]:
        """The escort proposal (or None: plain) for a question, and a note saying why."""
        if self.proposal == "plain":
            return None, ()
        supported = isinstance(model, EscortTarget)
        if self.proposal == "escort":
            if not supported:
                raise ConfigurationError(
                    f"MonteCarloAccountant.proposal = 'escort' is invalid for "
                    f"{type(model).__name__}: the escort needs b-min-sep BandMF (a loss model "
                    "with participation_chain()); use proposal 'plain' or 'auto'",
                    parameter="proposal",
                )
            if self.routed is not None:
                return self._escort(), (f"proposal: escort (route): {self.routed}.",)
            return self._escort(), ("proposal: escort (requested).",)
        if not supported:
            return None, ()
        escort, note = auto_proposal(model, self.samples, sigma, delta, epsilon)
        notes = () if note is None else (note,)
        if not escort:
            return None, notes
        return (self._escort() if delta is not None else EscortProposal()), notes

    def _escort(self) -> EscortProposal:
        """The escort proposal, sized by ``precision`` when it is set."""
        return EscortProposal(precision=self.precision)

    def _pilot_for(self, proposal: EscortProposal | None) -> int:
        """Pilot samples: the escort's pilot is capped at 10,000 when sized by precision."""
        if proposal is None or self.precision is None or self.pilot_samples is not None:
            return self._pilot()
        return min(self._pilot(), _ESCORT_PILOT)

    # -- questions ------------------------------------------------------------------------

    @_holding_checkpoint
    def _epsilon(self, question: Question) -> EpsilonResult:
        """Certified epsilon at ``delta`` by EVR; ``epsilon`` is the point estimate.

        ``certified_epsilon``: the run is ``(certified_epsilon, delta)``-DP, the verification
        failure ``failure_probability`` folded into ``delta`` (``inf`` when nothing verified).
        """
        sigma, delta = question.sigma, question.delta
        model = self._model(question.scheme, question.strategy)
        check_feasible_delta("MonteCarloAccountant.epsilon", delta)
        seed = self._seed()
        proposal, why = self._proposal(model, sigma, delta, 0.0)
        if proposal is None:  # m large enough?
            base_delta(self.samples, float(delta), candidates=len(DEFAULT_LADDER))
        self._start_workers(model, float(sigma))
        self._announce(model, "epsilon", float(sigma), proposal)
        ask = functools.partial(
            certify_epsilon,
            model,
            sigma,
            delta,
            samples=self.samples,
            pilot_samples=self._pilot_for(proposal),
            seed=seed,
            config=self._config(model),
            bound=self.bound,
        )
        try:
            cert = ask(proposal=proposal)
        except ConfigurationError as exc:
            if proposal is None or self.proposal != "auto":
                raise
            why = (*why, _fallback_note(exc))  # refused before any verification draw
            _plain_after_escort(self.samples, float(delta), len(DEFAULT_LADDER), exc)
            cert = ask(proposal=None)
        return EpsilonResult(
            **self._provenance(question, model),
            notes=self._notes(model, (*cert.notes(), *why, *_proposal_notes(cert.proposal))),
            proposal=None if cert.proposal is None else cert.proposal.to_dict(),
            epsilon=cert.estimate,
            certified_epsilon=cert.certified,
            delta=delta,
            sigma=sigma,
            samples=cert.samples,
            seed=seed,
            failure_probability=cert.failure_probability,
            std_error=_finite_or_none(cert.std_error),
            base_delta=cert.base_delta,
            pilot_samples=cert.pilot_samples,
            bound=cert.bound,
            evidence=cert.evidence(),
        )

    @_holding_checkpoint
    def _delta(self, question: Question) -> DeltaResult:
        """Certified delta at ``epsilon`` by EVR; ``delta`` is the empirical estimate."""
        sigma, epsilon = question.sigma, question.epsilon
        model = self._model(question.scheme, question.strategy)
        seed = self._seed()
        proposal, why = self._proposal(model, sigma, None, float(epsilon))
        self._start_workers(model, float(sigma))
        self._announce(model, "delta", float(sigma), proposal, float(epsilon))
        cert = certify_delta(
            model,
            sigma,
            epsilon,
            samples=self.samples,
            pilot_samples=self._pilot(),
            seed=seed,
            config=self._config(model),
            proposal=proposal,
        )
        return DeltaResult(
            **self._provenance(question, model),
            notes=self._notes(model, (*cert.notes(), *why, *_proposal_notes(cert.proposal))),
            proposal=None if cert.proposal is None else cert.proposal.to_dict(),
            delta=cert.estimate,
            certified_delta=cert.certified,
            epsilon=epsilon,
            sigma=sigma,
            samples=self.samples,
            seed=seed,
            failure_probability=cert.failure_probability,
            std_error=_finite_or_none(cert.std_error),
            base_delta=_finite_or_none(cert.base_delta),
            pilot_samples=cert.pilot_samples,
            evidence=cert.evidence(),
        )

    @_holding_checkpoint
    def _calibrate(self, question: Question) -> CalibrationResult:
        """Smallest certified sigma by Algorithm 5 over a geometric sweep.

        The pilot (stream 0) locates where ``delta_hat(epsilon)`` crosses the base delta; the
        sweep (:meth:`_sweep`: guard entries, then ``centre * ratio**(size // 3 - j)``, ``j =
        0..size-1``) is then verified on fresh draws (stream 1) shared by all sigmas. Raises
        CalibrationError when even the most private guard fails.
        """
        epsilon, delta = question.epsilon, question.delta
        model = self._model(question.scheme, question.strategy)
        check_feasible_delta("MonteCarloAccountant.calibrate", delta)
        seed = self._seed()
        config = self._config(model)
        proposal, why = self._proposal(model, None, delta, float(epsilon))
        self._start_workers(model, 1.0)
        self._announce(model, "calibrate", 1.0, proposal, float(epsilon))
        centre = None
        if proposal is not None and self.proposal == "auto":
            centre, failure = self._escort_centre(model, proposal, epsilon, delta, seed, config)
            if failure is not None:
                _plain_after_escort(self.samples, float(delta), 1, failure)
                proposal, why = None, (*why, _fallback_note(failure))
        if centre is None:
            centre = self._centre(model, epsilon, delta, proposal, seed, config)
        sweep = self._sweep(centre)
        result = calibrate_sweep(
            model,
            sweep,
            epsilon,
            delta,
            samples=self.samples,
            seed=seed,
            config=config,
            proposal=proposal,
        )
        notes = [
            f"certified ({result.epsilon:.6g}, {result.delta:.6g})-DP at sigma "
            f"{result.sigma:.6g} by Algorithm 5: every sweep entry down to it had delta_hat <= "
            f"base delta {result.base_delta:.6g} in both directions on {result.samples} shared "
            f"fresh samples; the failure probability {result.failure_probability:.3g} (one Fact "
            "4.2 event, privacy being monotone in sigma) is folded into delta."
        ]
        if result.index < len(self.sweep_guards):
            fine_top = sweep[len(self.sweep_guards)]
            notes.append(
                f"the fine sweep's most private entry {fine_top:.6g} failed verification, so "
                f"the guard entry {result.sigma:.6g} (x{result.sigma / fine_top:.3g}) was "
                "released: certified but conservative; more pilot samples give a tighter sigma."
            )
        if result.at_bottom:
            notes.append(
                "every sweep entry passed: a smaller sigma may also be certifiable (lower "
                "sigma_low or widen the sweep)."
            )
        estimate = _estimate_index(result.deltas, delta)
        if estimate == len(sweep) - 1:
            notes.append(
                "the point estimate passes delta at every sweep entry: sigma_estimate is the "
                "sweep's smallest entry, an upper end of what the estimate alone would select."
            )
        notes += [*why, *_proposal_notes(result.proposal)]
        return CalibrationResult(
            **self._provenance(question, model),
            notes=self._notes(model, tuple(notes)),
            proposal=None if result.proposal is None else result.proposal.to_dict(),
            sigma=result.sigma,
            epsilon=epsilon,
            delta=delta,
            certified=True,
            candidates=result.sweep,
            samples=self.samples,
            seed=seed,
            failure_probability=result.failure_probability,
            base_delta=result.base_delta,
            pilot_samples=self._pilot(),
            sigma_estimate=sweep[max(estimate, result.index)],
        )

    def _centre(
        self,
        model: PrivacyLossModel,
        epsilon: float,
        delta: float,
        proposal: EscortProposal | None,
        seed: int,
        config: EngineConfig,
    ) -> float:
        """The sweep's centre: the proposal's pilot (plain when None) at its pilot target for
        ``delta``, on this accountant's pilot samples and sigma bracket."""
        target = (PLAIN if proposal is None else proposal).pilot_target(self.samples, delta)
        return locate_sigma(
            model,
            epsilon,
            target,
            samples=self._pilot(),
            seed=seed,
            config=config,
            low=self.sigma_low,
            high=self.sigma_high,
            proposal=proposal,
        )

    def _escort_centre(
        self,
        model: PrivacyLossModel,
        proposal: EscortProposal,
        epsilon: float,
        delta: float,
        seed: int,
        config: EngineConfig,
    ) -> tuple[float | None, Exception | None]:
        """``proposal="auto"`` chose the escort for a calibration: its pilot's centre, or the
        reason it cannot run (then the caller falls back to plain sampling). The escort is
        tried at ``sigma_high``, then its pilot centres the sweep and :meth:`~minsep.
        accountants.escort_engine.EscortProposal.sweep_plan` checks an order serves every
        entry with a support bound below 1. All of this is pilot work (stream 0); no
        verification draw is spent before the route is fixed."""
        try:
            proposal.setups(model, self.sigma_high)
            centre = self._centre(model, epsilon, delta, proposal, seed, config)
            proposal.sweep_plan(model, self._sweep(centre), float(epsilon))
        except (ConfigurationError, CalibrationError) as exc:
            return None, exc
        return centre, None

    def curve(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        sigma: float,
        epsilons: list[float] | tuple[float, ...],
        failure_probability: float = 1e-6,
    ) -> CertifiedCurve:
        """Upper bounds on delta(eps) holding simultaneously on the grid ``epsilons``."""
        question = self.ask("curve", scheme, strategy, sigma=sigma)
        with self._hold_checkpoint():
            return self._curve(question, epsilons, failure_probability)

    def _delta_curve(
        self, question: Question, epsilons: tuple[float, ...], failure_probability: float
    ) -> CurveResult:
        """:meth:`curve` as a :class:`CurveResult`: one verification sample bounds every grid
        point together, except with ``failure_probability`` (not folded into delta)."""
        model = self._model(question.scheme, question.strategy)
        with self._hold_checkpoint():
            curve = self._curve(question, epsilons, failure_probability)
        return CurveResult(
            **self._provenance(question, model),
            notes=self._notes(
                model,
                (
                    f"simultaneous KL upper confidence bounds on {curve.samples} fresh samples "
                    f"per direction; failure probability {curve.failure_probability:.3g} over "
                    "the whole grid, not folded into delta",
                ),
            ),
            epsilons=curve.epsilons,
            delta=tuple(min(d, 1.0) for d in curve.delta_hat),
            certified_delta=tuple(min(d, 1.0) for d in curve.delta_upper),
            sigma=curve.sigma,
            samples=curve.samples,
            seed=curve.seed,
            failure_probability=curve.failure_probability,
            evidence={"rule": "kl"},  # certified_delta: KL bounds of delta (trust.py)
        )

    def _curve(
        self,
        question: Question,
        epsilons: list[float] | tuple[float, ...],
        failure_probability: float,
    ) -> CertifiedCurve:
        model = self._model(question.scheme, question.strategy)
        self._start_workers(model, float(question.sigma))
        self._announce(model, "curve", question.sigma)
        return certified_curve(
            model,
            question.sigma,
            epsilons,
            samples=self.samples,
            seed=self._seed(),
            failure_probability=failure_probability,
            config=self._config(model),
        )
