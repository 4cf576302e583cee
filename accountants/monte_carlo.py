"""Monte Carlo accounting by estimate-verify-release (docs/math.md §7, paper App. A).

Works with any scheme whose ``loss_model(strategy)`` returns a
:class:`~minsep.framework.interfaces.PrivacyLossModel`. Every answer carries the point
estimate, the certified bound, the verification samples ``m``, the failure probability already
folded into delta, the seed that reproduces it and the time it took. The guarantees are those
of :mod:`minsep.framework.montecarlo.evr` (epsilon, delta) and
:mod:`minsep.framework.montecarlo.calibration` (Algorithm 5).

The accountant holds the statistical question (samples, seed, proposal, bound, the
calibration sweep); how the draws run (backend, workers, executor, checkpoint, memory, time
limit, progress) is one :class:`~minsep.accountants.monte_carlo_run.RunSettings` record::

    MonteCarloAccountant(samples=100_000, seed=0, run=RunSettings(workers=4, progress=False))
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs
import numpy as np

from minsep.accountants import monte_carlo_plan as planning
from minsep.accountants import routes
from minsep.accountants.escort_engine import EscortProposal
from minsep.accountants.monte_carlo_notes import (
    calibration_notes,
    curve_note,
    estimate_index,
    fallback_note,
    finite_or_none,
    plain_after_escort,
    proposal_notes,
)
from minsep.accountants.monte_carlo_proposal import Asked, Chosen, choose_proposal
from minsep.accountants.monte_carlo_run import RunSettings, as_run_settings, shared_loss_model
from minsep.accountants.monte_carlo_sweep import CalibrationSweep, as_sweep
from minsep.accountants.routes import CANDIDATES, EscortPlanner, Route, choose_route
from minsep.accountants.truncation_route import reduce_route, reducing
from minsep.framework import validation as v
from minsep.framework.backend import get_backend, requested_kernels
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.evidence import MonteCarloEvidence
from minsep.framework.interfaces import (
    Accountant,
    AccountantKind,
    PrivacyLossModel,
    Question,
    SamplingScheme,
    Strategy,
)
from minsep.framework.methods import EpsilonBound, ProposalKind, epsilon_bound, proposal_kind
from minsep.framework.montecarlo import (
    CertifiedCurve,
    EngineConfig,
    Executor,
    RunPlan,
    base_delta,
    calibrate_sweep,
    certified_curve,
    certify_delta,
    certify_epsilon,
)
from minsep.framework.montecarlo.bounds import check_feasible_delta
from minsep.framework.montecarlo.evr import DEFAULT_LADDER
from minsep.framework.montecarlo.precision import samples_for_precision
from minsep.framework.montecarlo.sampling import MAX_SAMPLES
from minsep.framework.montecarlo.warmup import start_workers
from minsep.framework.option_groups import GROUP
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult, CurveResult, DeltaResult, EpsilonResult

__all__ = ["CalibrationSweep", "MonteCarloAccountant", "RunSettings"]

F = TypeVar("F", bound=Callable[..., Any])


def _holding_checkpoint(method: F) -> F:
    """Run an accountant question while holding its checkpoint (when one is set)."""

    @functools.wraps(method)
    def wrapper(self: MonteCarloAccountant, *args: Any, **kwargs: Any) -> Any:
        with self.run.hold_checkpoint():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


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
        proposal: what the engine samples from (docs/rdp-escort.md §8; a
            :class:`~minsep.framework.methods.ProposalKind`): ``"plain"`` (the dominating
            pair), ``"escort"`` (importance sampling from the escort R_lam for the remove
            direction, where the loss model has an escort law) or ``"auto"`` (the route
            chooser's pick); the result's ``proposal`` and notes say which ran.
        bound: how a certified epsilon is verified (docs/math.md §7, §7.2; an
            :class:`~minsep.framework.methods.EpsilonBound`): ``"betting"`` (one betting walk
            down a fine epsilon grid, one failure event: the tighter default) or ``"fact42"``
            (the pilot's candidate ladder, Fact 4.2 with a union bound); the escort and the
            delta and calibrate questions use Fact 4.2 either way.
        precision: the relative precision ``samples`` was chosen for (the CLI's
            ``--precision``; :meth:`route` sets it), or None. When set, the escort verifies
            on the fewest samples reaching it and bounds the add direction where plain add
            draws would cost more (:class:`~minsep.accountants.escort_engine.EscortProposal`),
            and a calibration may coarsen its sweep (:attr:`calibration_sweep`).
        routed: the route chooser's reason when :meth:`route` fixed ``proposal``, or None.
        add_samples: a calibration's plain add draws per sweep entry when the route sized
            ``samples`` for the escort's remove direction (None: ``samples``).
        sweep: Algorithm 5's sweep and the pilot's sigma range (:class:`CalibrationSweep`).
        run: how the draws run (:class:`RunSettings`: backend, chunk size, memory budget,
            workers, executor, scheduler, checkpoint, progress, time limit). Both accept a
            mapping of their options, also the accountant's flat options (command line).
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
    proposal: ProposalKind = attrs.field(
        default=ProposalKind.AUTO,
        converter=proposal_kind,
        validator=v.choice(ProposalKind),
    )
    precision: float | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.positive())
    )
    bound: EpsilonBound = attrs.field(
        default=EpsilonBound.BETTING,
        converter=epsilon_bound,
        validator=v.choice(EpsilonBound),
    )
    routed: str | None = None
    add_samples: int | None = attrs.field(
        default=None, converter=v.plain_number, validator=v.optional(v.integer(low=100))
    )
    sweep: CalibrationSweep = attrs.field(
        factory=CalibrationSweep,
        converter=as_sweep,
        metadata={GROUP: CalibrationSweep},
    )
    run: RunSettings = attrs.field(
        factory=RunSettings,
        converter=as_run_settings,
        metadata={GROUP: RunSettings},
    )

    @classmethod
    def example(cls) -> MonteCarloAccountant:
        """A cheap instance (20k verification samples, fixed seed) for the contract tests."""
        return cls(samples=20_000, pilot_samples=5_000, seed=20260214, run={"chunk_size": 4096})

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"samples": 0}, "samples"),
            ({"samples": 2.5}, "samples"),
            ({"samples": 10**18}, "samples"),
            ({"pilot_samples": 10}, "pilot_samples"),
            ({"seed": -1}, "seed"),
            ({"proposal": "mcmc"}, "proposal"),
            ({"bound": "hoeffding"}, "bound"),
            ({"run": {"threads": 2}}, "threads"),
            ({"run": 4}, "run"),
            *(({"run": bad}, name) for bad, name in RunSettings.invalid_examples()),
            *(({"sweep": bad}, name) for bad, name in CalibrationSweep.invalid_examples()),
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
            model = shared_loss_model(scheme, strategy)  # the escort's memos are per model
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
        checkpoint = self.run.checkpoint_file()
        if checkpoint is not None:  # resume a fresh-entropy run with its own seed
            stored = checkpoint.stored_seed()
            if stored is not None:
                return stored
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]

    def _executor(self) -> Executor:
        return self.run.executor_now()

    def _start_workers(self, model: PrivacyLossModel, sigma: float) -> None:
        """Start a process pool's workers now, warming up on ``model``, so that their
        start-up overlaps the planning and the rate probe (a no-op for other executors)."""
        start_workers(model, self._executor(), get_backend(self.run.backend).spec, sigma)

    def start_workers(self, scheme: SamplingScheme, strategy: Strategy, sigma: float = 1.0) -> None:
        """Start the process pool's workers now, warming up on the pair's model at
        ``sigma``, without waiting (nothing for other executors, nor for a pair without a
        loss model: its question reports that). The question's run then finds them warm."""
        try:
            model = shared_loss_model(scheme, strategy)  # the escort's memos are per model
        except (NotAccountableError, ConfigurationError):
            return  # the question itself reports it
        self._start_workers(model, float(sigma))

    @property
    def calibration_sweep(self) -> CalibrationSweep:
        """:attr:`sweep` as a calibration at :attr:`precision` verifies it (``for_precision``)."""
        return self.sweep.for_precision(self.precision)

    def _pilot(self) -> int:
        return self.pilot_samples or max(self.samples // 4, 1000)

    def _config(self, model: PrivacyLossModel) -> EngineConfig:
        return self.run.config(model, self._executor())

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

    def _plan(self, model: PrivacyLossModel, question: str, sigma: float, measure: bool) -> RunPlan:
        stages = planning.stages(question, self._pilot(), self.samples, self.calibration_sweep)
        executor = self._executor()
        return planning.plan_run(
            model, question, sigma, stages, self.run, executor, measure=measure
        )

    def _announce(
        self,
        model: PrivacyLossModel,
        question: str,
        sigma: float,
        proposal: EscortProposal | None = None,
        epsilon: float = 0.0,
    ) -> None:
        """Plan ``question`` by its proposal's planner (plain: the engine's stages and rate
        probe; escort: :class:`~minsep.accountants.routes.EscortPlanner`), log it and refuse
        it over ``max_seconds`` (:func:`~minsep.accountants.monte_carlo_plan.announce`)."""
        planner: planning.Planner = (
            planning.PlainPlanner(functools.partial(self._plan, model, question, sigma))
            if proposal is None
            else EscortPlanner(self, model, proposal, question, sigma, epsilon)
        )
        planning.announce(planner, self.run)

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
        scheme, numbers = reduce_route(self, scheme, strategy, question, numbers)  # §6.2
        model = self._model(scheme, strategy)
        delta = float(numbers["delta"])
        plain_m = samples_for_precision(delta, precision, candidates=CANDIDATES[question])
        sigma = float(numbers.get("sigma", 1.0))

        @functools.cache
        def plain_plan() -> RunPlan:  # measured once: its rates also time plain add draws
            plain = attrs.evolve(self, samples=plain_m, precision=precision)
            return plain.plan(scheme, strategy, question, sigma)

        asker = attrs.evolve(self, precision=precision)  # the calibration sweep that will run
        timed = (lambda: plain_plan().estimated_seconds), plain_plan
        route = choose_route(asker, model, question, numbers, precision, max_seconds, *timed)
        if route.refused:
            return self, route
        chosen = attrs.evolve(
            self,
            samples=route.samples,
            proposal=route.proposal,
            precision=route.precision,
            routed=route.reason,
            add_samples=route.add_samples,
        )
        return chosen, route

    def _provenance(self, question: Question, model: PrivacyLossModel) -> dict[str, Any]:
        return question.provenance("monte_carlo")

    def _evidence(
        self, model: PrivacyLossModel, samples: int, seed: int, **fields: Any
    ) -> MonteCarloEvidence:
        """The evidence record of an answer on ``samples`` draws from ``seed``: with the
        backend, kernel set (as seen by this process) and chunk size (the draws are seeded
        by chunk) that reproduce them, and ``fields``."""
        return MonteCarloEvidence(
            samples=samples, seed=seed, **self.run.provenance(model), **fields
        )

    def _notes(self, model: PrivacyLossModel, notes: tuple[str, ...]) -> tuple[str, ...]:
        """``notes`` and the model's kernel notes (e.g. that the slow array path ran)."""
        return (*notes, *model.kernel_notes(get_backend(self.run.backend)))

    def _proposal(
        self, model: PrivacyLossModel, sigma: float | None, delta: float | None, epsilon: float
    ) -> Chosen:
        """The escort proposal (or None: plain) for a question, and a note saying why."""
        kind, routed = ProposalKind(self.proposal), self.routed
        numbers = (model, sigma, delta, epsilon, self.add_samples)
        return choose_proposal(Asked(kind, self.samples, self.precision, routed, *numbers))

    def _pilot_for(self, proposal: EscortProposal | None) -> int:
        """Pilot samples: the escort's pilot is capped at 10,000 when sized by precision."""
        if proposal is None or self.precision is None or self.pilot_samples is not None:
            return self._pilot()
        return min(self._pilot(), routes.ESCORT_PILOT)

    # -- questions ------------------------------------------------------------------------

    @reducing
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
            why = (*why, fallback_note(exc))  # refused before any verification draw
            plain_after_escort(self.samples, float(delta), len(DEFAULT_LADDER), exc)
            cert = ask(proposal=None)
        return EpsilonResult(
            **self._provenance(question, model),
            notes=self._notes(model, (*cert.notes(), *why, *proposal_notes(cert.proposal))),
            epsilon=cert.estimate,
            certified_epsilon=cert.certified,
            delta=delta,
            sigma=sigma,
            failure_probability=cert.failure_probability,
            monte_carlo=self._evidence(
                model,
                cert.samples,
                seed,
                pilot_samples=cert.pilot_samples,
                std_error=finite_or_none(cert.std_error),
                base_delta=cert.base_delta,
                bound=cert.bound,
                proposal=None if cert.proposal is None else cert.proposal.to_dict(),
                verification=cert.evidence(),
            ),
        )

    @reducing
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
            notes=self._notes(model, (*cert.notes(), *why, *proposal_notes(cert.proposal))),
            delta=cert.estimate,
            certified_delta=cert.certified,
            epsilon=epsilon,
            sigma=sigma,
            failure_probability=cert.failure_probability,
            monte_carlo=self._evidence(
                model,
                self.samples,
                seed,
                pilot_samples=cert.pilot_samples,
                std_error=finite_or_none(cert.std_error),
                base_delta=finite_or_none(cert.base_delta),
                proposal=None if cert.proposal is None else cert.proposal.to_dict(),
                verification=cert.evidence(),
            ),
        )

    @reducing
    @_holding_checkpoint
    def _calibrate(self, question: Question) -> CalibrationResult:
        """Smallest certified sigma by Algorithm 5 over a geometric sweep.

        The pilot (stream 0) locates where ``delta_hat(epsilon)`` crosses the base delta; the
        sweep (:meth:`CalibrationSweep.points`: guard entries, then ``centre * ratio**(size //
        3 - j)``, ``j = 0..size-1``) is then verified on fresh draws (stream 1) shared by all
        sigmas. Raises CalibrationError when even the most private guard fails.
        """
        epsilon, delta = question.epsilon, question.delta
        model = self._model(question.scheme, question.strategy)
        check_feasible_delta("MonteCarloAccountant.calibrate", delta)
        seed = self._seed()
        config = self._config(model)
        proposal, why = self._proposal(model, None, delta, float(epsilon))
        self._start_workers(model, 1.0)
        self._announce(model, "calibrate", 1.0, proposal, float(epsilon))
        size = self._pilot_for(proposal)  # an escort sized by precision: capped
        pilot: dict[str, Any] = {"samples": size, "seed": seed, "config": config}
        grid = self.calibration_sweep
        centre = None if proposal is None else routes.routed_centre(self, model, float(epsilon))
        if proposal is not None and self.proposal == "auto":
            centre, failure = grid.escort_centre(
                proposal, model, epsilon, delta, self.samples, **pilot
            )
            if failure is not None:
                plain_after_escort(self.samples, float(delta), 1, failure)
                proposal, why = None, (*why, fallback_note(failure))
                pilot["samples"] = self._pilot()
        if centre is None:
            centre = grid.centre(model, epsilon, delta, proposal, self.samples, **pilot)
        sweep = grid.points(centre) if proposal is None else grid.escort_points(centre)
        at_centre = proposal is not None and routes.routed_start(self, model, float(epsilon))
        start = 0 if proposal is None else grid.walk_start(at_centre)  # entries draw afresh
        result = calibrate_sweep(
            model, sweep, epsilon, delta, samples=self.samples, seed=seed, config=config,
            proposal=proposal, start=start,
        )  # fmt: skip
        estimate = estimate_index(result.deltas, delta, result.start)
        notes = calibration_notes(result, sweep, len(grid.sweep_guards), estimate)
        notes += [*why, *proposal_notes(result.proposal)]
        return CalibrationResult(
            **self._provenance(question, model),
            notes=self._notes(model, tuple(notes)),
            sigma=result.sigma,
            epsilon=epsilon,
            delta=delta,
            certified=True,
            candidates=result.sweep,
            failure_probability=result.failure_probability,
            monte_carlo=self._evidence(
                model,
                self.samples,
                seed,
                pilot_samples=pilot["samples"],
                base_delta=result.base_delta,
                proposal=None if result.proposal is None else result.proposal.to_dict(),
                # Algorithm 5's walk, re-derived by trust.py (plain sampling)
                verification=(
                    {"rule": "algorithm5", "deltas": list(result.deltas)}
                    if result.proposal is None
                    else None
                ),
                sigma_estimate=sweep[max(estimate, result.index)],
            ),
        )

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
        with self.run.hold_checkpoint():
            return self._curve(question, epsilons, failure_probability)

    def _delta_curve(
        self, question: Question, epsilons: tuple[float, ...], failure_probability: float
    ) -> CurveResult:
        """:meth:`curve` as a :class:`CurveResult`: one verification sample bounds every grid
        point together, except with ``failure_probability`` (not folded into delta)."""
        model = self._model(question.scheme, question.strategy)
        with self.run.hold_checkpoint():
            curve = self._curve(question, epsilons, failure_probability)
        return CurveResult(
            **self._provenance(question, model),
            notes=self._notes(model, (curve_note(curve.samples, curve.failure_probability),)),
            epsilons=curve.epsilons,
            delta=tuple(min(d, 1.0) for d in curve.delta_hat),
            certified_delta=tuple(min(d, 1.0) for d in curve.delta_upper),
            sigma=curve.sigma,
            failure_probability=curve.failure_probability,
            monte_carlo=self._evidence(
                model,
                curve.samples,
                curve.seed,
                verification={"rule": "kl"},  # certified_delta: KL bounds of delta (trust.py)
            ),
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
