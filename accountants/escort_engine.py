"""Escort importance sampling in the Monte Carlo engine (docs/rdp-escort.md §8).

The remove direction ``delta_remove(eps) = E_{R_lam}[W]`` is estimated and verified on exact
draws from the escort ``R_lam`` (:mod:`minsep.accountants.escort`), with ``0 <= W <= s_lam(eps)``
pointwise. Every check divides W by one support bound ``s*`` fixed before the verification
draws, so ``X = W / s*`` lies in [0, 1] and Fact 4.2 applies to it unchanged: accepting at base
``x_b`` with ``m`` samples certifies ``delta_remove <= s* overall_delta(m, x_b)`` (the failure
folded in; with probability at most ``q`` a wrong candidate passes, and then still
``delta_remove <= s*``, so the folded bound is ``s* (tau x_b + q (1 - tau x_b))``). A weight
above its bound is refused (:class:`SupportBoundError`), never clipped.

The add direction, deterministically first: ``u >= pi(empty)``, so ``delta_add(eps) = 0``
exactly when ``eps >= ln(1 / pi(empty))`` (docs/rdp-escort.md §5, route ``"exact zero"``);
below it the Chernoff bound of docs/math.md §10 (route ``"deterministic"``) certifies the add
direction without a sample wherever it is at most delta (epsilon questions: when its epsilon is
below every candidate, when plain add draws could not certify delta with the samples given, or
when a precision-sized run would need more than PLAIN_ADD_LIMIT of them or more than the
samples given (a route sized them for the escort), the candidates being raised to its epsilon;
delta questions: where it is at most the remove direction's release; calibration: per sweep
entry, entries it does not settle failing where plain add draws do not fit). Only where it is
not enough is the add direction verified by plain Monte Carlo on its own draws (route
``"plain"``). A claim fails if one direction fails: the release is the larger direction's bound.

:class:`EscortProposal` is a proposal of :mod:`minsep.framework.montecarlo.proposals`: it
plans each question on its pilot (order, ``ln Z``, support bound, add-direction route) and the
engine's one verifier (:mod:`~minsep.framework.montecarlo.evr`,
:mod:`~minsep.framework.montecarlo.calibration`) verifies and releases. The parts live in
small modules: :mod:`.escort_setup` (order, ``ln Z``, support bound), :mod:`.escort_add` (the
add-direction routes), :mod:`.escort_sampling` (chunk task, sampler, rate probe) and
:mod:`.escort_sweep` (the sweep plan of Algorithm 5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from minsep.accountants import rdp_moments as moments
from minsep.accountants.escort_add import (
    PLAIN_ADD_LIMIT,
    add_bound,
    add_delta_ceiling,
    add_sampler,
    add_threshold,
    chosen_add_bound,
    plain_add_first,
    plain_add_fits,
    plain_add_route,
)
from minsep.accountants.escort_precision import precision_ladder, precision_samples
from minsep.accountants.escort_sampling import (
    CHUNK_ELEMENTS,
    EscortChunkTask,
    EscortSampler,
    escort_sample,
    measure_escort_seconds,
)
from minsep.accountants.escort_setup import (
    DEFAULT_ORDERS,
    EscortSetup,
    EscortTarget,
    best_setup,
    choose_setup,
    escort_base_delta,
    escort_setups,
    law_or_reason,
    locate_setup,
    support_scale,
)
from minsep.accountants.escort_sweep import EscortSweep, SweepEscorts, escort_sweep
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.accumulators import SweepTally
from minsep.framework.montecarlo.bounds import base_delta
from minsep.framework.montecarlo.certificates import ProposalInfo
from minsep.framework.montecarlo.estimates import Estimate, estimate_delta
from minsep.framework.montecarlo.proposals import (
    DeltaCheck,
    DeltaPlan,
    EpsilonPlan,
    EpsilonQuestion,
    SigmaPilot,
    SweepQuestion,
    Verification,
)
from minsep.framework.montecarlo.sampling import PILOT_STREAM, EngineConfig
from minsep.framework.montecarlo.sweeps import FALLBACK
from minsep.framework.validation import check_range

__all__ = [
    "CHUNK_ELEMENTS",
    "DEFAULT_ORDERS",
    "ESCORT_MARGIN",
    "LOCATE_STEPS",
    "PLAIN_ADD_LIMIT",
    "EscortChunkTask",
    "EscortProposal",
    "EscortSetup",
    "EscortTarget",
    "add_bound",
    "add_threshold",
    "choose_setup",
    "escort_sample",
    "escort_setups",
    "measure_escort_seconds",
]

#: Pilot grid of epsilons (candidates are grid points; resolution eps_max / (size - 1)).
PILOT_GRID = 2001
#: Bisection steps of the escort's sweep-centring pilot (:meth:`EscortProposal.locate`): on
#: the default range ``[2^-4, 2^8]`` ten halvings of ``ln sigma`` leave a bracket of width
#: ``ln(4096) / 2^10 = 0.0081``, below one step ``ln 1.01`` of the default sweep; each step is
#: a sampling call, and finer placement is lost in the pilot's noise. A planning rule only.
LOCATE_STEPS = 10
#: A calibration's escort sized by precision takes this multiple of ``min_samples(delta^(1 +
#: r) / s, delta / s, 1)`` (the pilot's noise; docs/rdp-escort.md §8, cost); epsilon
#: questions split the budget between margin and ladder instead (:mod:`.escort_precision`).
ESCORT_MARGIN = 3


@attrs.frozen
class EscortProposal:
    """Importance sampling from the escort ``R_lam`` for the remove direction.

    Attributes:
        order: the Renyi order lam, or None to choose per question (smallest support bound
            ``s_lam(eps)`` among ``orders``, eps from a pilot).
        orders: the orders the automatic choice considers.
        max_states: memory budget of the forward pass (entries of its state array).
        precision: when set, an epsilon question verifies on the samples (at most
            ``samples``) that reach this relative precision once the pilot has fixed the
            support bound ``s = s_lam(eps_hat)`` (:meth:`sized_samples`), on the
            candidate ladder of :func:`~.escort_precision.precision_ladder`; chosen
            before any verification draw, so Fact 4.2 holds.
            When such a run would sample the add direction on more than
            :data:`PLAIN_ADD_LIMIT` draws or more than ``samples``, the bound of docs/math.md
            §10 certifies it instead and may then bind (the candidates are raised to its
            epsilon; the notes give the add bound).
        add_samples: a calibration's plain add draws (None: ``samples``; routes, §8).
    """

    betting = False

    order: int | None = attrs.field(default=None)
    orders: tuple[int, ...] = attrs.field(default=DEFAULT_ORDERS, converter=tuple)
    max_states: int = moments.DEFAULT_MAX_STATES
    precision: float | None = None
    add_samples: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.precision is not None:
            check_range("EscortProposal", "precision", self.precision, low=0.0, low_open=True)
        if self.order is not None:
            moments.check_order("EscortProposal", self.order)
        for lam in self.orders:
            moments.check_order("EscortProposal", lam)
        check_range("EscortProposal", "max_states", self.max_states, low=1, integer=True)

    def setups(self, model: PrivacyLossModel, sigma: float) -> list[EscortSetup]:
        """The affordable escorts at ``sigma`` (just ``order`` when it is fixed)."""
        orders = self.orders if self.order is None else (self.order,)
        return escort_setups(model, sigma, orders, self.max_states)

    def plain_add_fits(self, samples: int, delta: float, candidates: int) -> bool:
        """:func:`~.escort_add.plain_add_fits` at this proposal's ``precision``."""
        return plain_add_fits(samples, delta, candidates, self.precision)

    def unavailable(self, model: PrivacyLossModel) -> str | None:
        """Why this escort cannot serve ``model`` at any sigma (None when it may): it has no
        escort law or refuses it (:func:`.law_or_reason`), or no order fits ``max_states``;
        sigma-dependent refusals are found by :meth:`setups`, :meth:`sweep_plan`."""
        law = law_or_reason(model)
        if isinstance(law, str):
            return law
        orders = self.orders if self.order is None else (self.order,)
        if not any(law.affordable(lam, self.max_states) for lam in orders):
            return (
                f"no order of {tuple(orders)} fits max_states = {self.max_states} at "
                f"{law.budget_note}"
            )
        return None

    # -- epsilon -------------------------------------------------------------------------

    def check_epsilon(
        self, sigma: float, delta: float, samples: int, pilot_samples: int, seed: int
    ) -> None:
        owner = "EscortProposal.certify_epsilon"
        check_range(owner, "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_range(owner, "samples", samples, low=2, integer=True)
        check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)

    def plan_epsilon(self, model: PrivacyLossModel, question: EpsilonQuestion) -> EpsilonPlan:
        """Plan an epsilon question: escort draws for the remove direction.

        Pilot (stream 0) on a grid of epsilons up to the order's RDP bound; the verification
        samples (:meth:`sized_samples`; all of ``samples`` when the add direction needs plain
        draws); candidates at ``kappa_r`` times the base delta of those samples
        (:class:`_Placement`), raised to what the add direction's route needs
        (:meth:`_add_route`); one scale ``s* = s_lam(smallest candidate)``; the remove route
        accepts candidate r iff the mean of ``W / s*`` is at most ``x_b = base_delta(samples,
        delta / s*, R)`` (no draws when ``s* <= delta``: the RDP bound alone certifies).
        """
        sigma, delta, fractions = question.sigma, question.delta, question.fractions
        samples, pilot_samples, seed = question.samples, question.pilot_samples, question.seed
        config, count = question.config, len(question.fractions)
        if self.precision is not None:  # the ladder this precision's budget affords
            fractions = precision_ladder(delta, self.precision, count)
        setups = self.setups(model, sigma)
        setup = min(setups, key=lambda s: s.epsilon_at(math.log(delta)))
        grid, means, estimate = self._pilot(model, setup, delta, pilot_samples, seed, config, "")
        best = choose_setup(setups, estimate)
        if best.order != setup.order:
            setup = best
            grid, means, estimate = self._pilot(
                model, setup, delta, pilot_samples, seed, config, " 2"
            )
        log_guess = setup.log_support(estimate)
        sized = self.sized_samples(samples, pilot_samples, delta, log_guess, count)
        place = _Placement(grid, means, fractions, delta, log_guess, count)
        first = sized if log_guess > math.log(delta) else samples  # s <= delta: no draws
        add, proposed, add_check, add_limit = self._add_route(
            model, question, place.candidates(first), fractions
        )
        if add == "plain" and first != samples:  # plain add draws verify on all the samples
            add, proposed, add_check, add_limit = self._add_route(
                model, question, place.candidates(samples), fractions
            )
        if add != "plain":
            samples = sized
        candidates = tuple(float(x) for x in np.maximum.accumulate(proposed) if math.isfinite(x))
        log_scale = setup.log_support(candidates[0]) if candidates else 0.0
        scale = support_scale(log_scale, setup.order, candidates[0] if candidates else math.nan)
        remove = Verification(scale, 1.0)  # scale <= delta: the order-lam RDP bound certifies
        if scale > delta:
            sampler = EscortSampler(model, setup, log_scale, config, self.max_states)
            x_b = escort_base_delta(samples, delta / scale, delta, scale, candidates=count)
            remove = Verification(scale, x_b, sampler, "escort verify")
        return EpsilonPlan(
            candidates,
            samples,
            (remove,) if add_check is None else (remove, add_check),
            count,
            estimate=Estimate(estimate, math.nan, pilot_samples),
            info=ProposalInfo("escort", setup.order, setup.log_z, scale, add),
            add_delta=add_limit,
            failed_reason=(
                f"none of {len(candidates)} candidate epsilons passed verification with "
                f"{samples} escort samples (order {setup.order}, support bound {scale:.3g} = "
                f"{scale / delta:.3g} x delta); more samples may certify it."
            ),
        )

    def sized_samples(
        self, samples: int, pilot_samples: int, delta: float, log_support: float, count: int
    ) -> int:
        """The verification samples of an epsilon question whose remove direction is verified
        against the support bound ``s = e^log_support``: ``samples`` without a ``precision``,
        else :func:`~.escort_precision.precision_samples` (at most ``samples``, at least
        ``pilot_samples``; docs/rdp-escort.md §8); ``pilot_samples`` when ``s <= delta`` (the
        order-lam RDP bound alone certifies, no draws). A planning rule: it never enters the
        guarantee."""
        if self.precision is None:
            return samples
        wanted = precision_samples(delta, log_support, self.precision, count)
        return max(min(samples, wanted), pilot_samples, 2)

    def _add_route(
        self,
        model: PrivacyLossModel,
        question: EpsilonQuestion,
        candidates: list[float],
        fractions: tuple[float, ...],
    ) -> tuple[str, list[float], Verification | None, Callable[[float], float] | None]:
        """The add direction's route for an epsilon question (module docstring), the
        candidates raised to what it needs, its verification (route ``"plain"``) and its
        released delta as a function of epsilon (the bound routes).

        ``"exact zero"`` when the smallest candidate is at least ``ln(1/pi(empty))``;
        ``"deterministic"`` (§10) when its epsilon is below the smallest candidate; then
        ``"plain"`` (:func:`~.escort_add.plain_add_route`) when its draws are cheap
        (:func:`~.escort_add.plain_add_first`) and its pilot raises no candidate; else the
        chosen bound (§10 or the block bound of §10.1, :func:`chosen_add_bound`) where it
        costs nothing or plain add draws do not fit (:meth:`plain_add_fits`), the candidates
        raised to it; else ``"plain"``.
        """
        sigma, delta, count = question.sigma, question.delta, len(question.fractions)
        if candidates[0] >= add_threshold(model):
            return "exact zero", candidates, None, None
        deterministic = add_bound(model, sigma)
        if deterministic.epsilon(delta) <= candidates[0]:
            return "deterministic", candidates, None, deterministic.delta
        plain = None
        if plain_add_first(model, question):
            plain = plain_add_route(model, question, candidates, fractions)
            if plain[0][0] <= candidates[0]:  # the add direction does not bind
                return "plain", plain[0], plain[1], None
        route, bound = chosen_add_bound(model, sigma, delta, question.seed, candidates[0])
        add_epsilon = bound.epsilon(delta)
        if math.isfinite(add_epsilon) and (
            add_epsilon <= candidates[0] or not self.plain_add_fits(question.samples, delta, count)
        ):
            raised = [max(c, add_epsilon) for c in candidates]
            return route, raised, None, bound.delta
        raised, verify = plain or plain_add_route(model, question, candidates, fractions)
        return "plain", raised, verify, None

    def _pilot(
        self,
        model: PrivacyLossModel,
        setup: EscortSetup,
        delta: float,
        pilot_samples: int,
        seed: int,
        config: EngineConfig,
        label: str,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Escort pilot (stream 0) on a grid of epsilons: ``(grid, delta_hat, eps_hat(delta))``.

        The grid ends where the order's RDP bound alone gives ``delta / 100`` (so every
        candidate is on it); X is normalised by ``s_lam(0)``, which bounds W on the grid.
        """
        top = setup.epsilon_at(math.log(delta / 100.0))
        grid = np.linspace(0.0, max(top, 1e-3), PILOT_GRID)
        log_scale = setup.log_support(0.0)
        tally = escort_sample(
            model,
            setup,
            grid.tolist(),
            log_scale,
            n_samples=pilot_samples,
            seed=seed,
            stream=PILOT_STREAM,
            config=config,
            description=f"escort pilot{label}",
            max_states=self.max_states,
        )
        remove = tally.tally(0, Direction.REMOVE)
        with np.errstate(divide="ignore"):
            means = np.exp(np.log(remove.sum_x / remove.count) + log_scale)
        return grid, means, _first_below(grid, means, delta)

    # -- delta ---------------------------------------------------------------------------

    def check_delta(
        self, sigma: float, epsilon: float, samples: int, pilot_samples: int, seed: int
    ) -> None:
        owner = "EscortProposal.certify_delta"
        check_range(owner, "epsilon", epsilon, low=0.0)
        check_range(owner, "samples", samples, low=2, integer=True)
        check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)

    def plan_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        config: EngineConfig,
        seed: int = 0,
    ) -> DeltaPlan:
        """Plan a delta question: escort verification of ``W / s`` with ``s = s_lam(eps)``
        for the remove direction (``s`` itself, the RDP bound, when no threshold passes); the
        add direction is 0 at or above ``ln(1/pi(empty))``, else the §10 bound, or the block
        bound of docs/math.md §10.1 from ``seed`` where smaller (:func:`add_delta_ceiling`),
        where it is at most the remove direction's release, else plain draws capped by it."""
        eps = float(epsilon)
        setup = choose_setup(self.setups(model, sigma), eps)
        log_scale = setup.log_support(eps)
        scale = support_scale(log_scale, setup.order, eps)
        remove = DeltaCheck(
            EscortSampler(model, setup, log_scale, config, self.max_states),
            "escort pilot",
            "escort verify",
        )
        route, ceiling = "exact zero", 0.0
        if eps < add_threshold(model):  # remove expected well below its bound s
            expected = min(max(scale / 100.0, 1e-300), 0.5)
            route, ceiling = add_delta_ceiling(model, sigma, eps, expected, seed)
        add = DeltaCheck(
            add_sampler(model, sigma, config),
            "pilot add",
            "verify add",
            ceiling=ceiling,
            skip_route=route,
        )

        def info(routes: Sequence[str], released: Sequence[float]) -> ProposalInfo:
            fixed = released[1] if routes[1] in ("deterministic", "block bound") else None
            return ProposalInfo("escort", setup.order, setup.log_z, scale, routes[1], fixed)

        return DeltaPlan((remove, add), info)

    # -- calibration ---------------------------------------------------------------------

    def plan_sweep(self, model: PrivacyLossModel, question: SweepQuestion) -> EscortSweep:
        """Algorithm 5 with escort draws.

        The sweep's entries from the first whose sigma no affordable order can run on (the
        forward pass overflows at small sigma) count as failing, as if the sweep ended there.
        One order (:meth:`sweep_order`: the smallest largest support bound over the runnable
        entries) and one scale ``s* = max_i s_lam(sigma_i, eps)`` for every entry, so
        ``E[W_i / s*] = delta_i / s*`` is non-increasing along the sweep and one Fact 4.2 event
        covers it (module docstring of :mod:`~minsep.framework.montecarlo.calibration`).
        Entries whose bound ``s_i <= delta`` pass without sampling (they form a prefix). Each
        sampled entry has its own draws (``R_lam`` depends on sigma), stage ``escort calibrate
        i``. The add direction: ``"exact zero"``, else per entry the §10 bound, else plain add
        draws (``add_samples``, as the walk reaches entries); entries no route settles fail.
        """
        escorts = self.sweep_plan(model, question.sweep, float(question.epsilon))
        add = question.samples if self.add_samples is None else self.add_samples
        fits = self.plain_add_fits(add, question.delta, 1)
        return escort_sweep(model, question, escorts, fits, add)

    def pilot_target(self, samples: int, delta: float) -> float:
        """Where the pilot centres a calibration: the remove estimate crosses ``delta**(1 + r)``
        (the base delta ``precision`` r plans for, docs/math.md §7.3); without r, delta / 2."""
        return delta / 2.0 if self.precision is None else delta ** (1.0 + self.precision)

    def runnable(self, model: PrivacyLossModel, sweep: Sequence[float]) -> list[float]:
        """The leading entries of ``sweep`` (most private first) where some affordable order
        runs: a small sigma can overflow the forward pass, and that entry and every one after
        it count as failing verification, as if the sweep were shorter. ConfigurationError
        (naming the orders and the sigma) when not even the first entry can run."""
        values = [float(s) for s in sweep]
        orders = sorted(self.orders if self.order is None else (self.order,))
        runnable: list[float] = []
        for sigma in values:  # some order runs: tried cheapest first, stopping at one that does
            if not any(self._runs(model, sigma, lam) for lam in orders):
                break
            runnable.append(sigma)
        if not runnable:
            self.setups(model, values[0])  # raises, naming the orders and the sigma
        return runnable

    def _runs(self, model: PrivacyLossModel, sigma: float, order: int) -> bool:
        """Whether ``order`` is affordable and its forward pass runs at ``sigma``."""
        try:
            escort_setups(model, sigma, (order,), self.max_states)
        except ConfigurationError:
            return False
        return True

    def sweep_order(self, model: PrivacyLossModel, sweep: Sequence[float], epsilon: float) -> int:
        """The order minimising the largest support bound ``max_i s_lam(sigma_i, eps)`` over
        the :meth:`runnable` entries of ``sweep`` (docs/rdp-escort.md §8, calibration).

        ``Z_lam`` is non-increasing in sigma (adding independent Gaussian noise is one Markov
        kernel applied to both P and Q, so the Renyi divergence cannot grow), hence the largest
        bound of an order is its bound at the smallest runnable sigma; orders are compared
        there (ties: the smaller order, :func:`~.escort_setup.choose_setup`). So whenever some
        order's bound is at most 1 at every runnable entry, the chosen order's is too, and no
        entry is refused for it. The choice only affects cost, never soundness: every entry
        the walk samples has its bound checked against the scale (:class:`~.escort_sweep.
        SweepEscorts`).
        """
        return self._order_setup(model, min(self.runnable(model, sweep)), float(epsilon)).order

    def _order_setup(self, model: PrivacyLossModel, sigma: float, eps: float) -> EscortSetup:
        """The best escort at ``sigma`` (:func:`~.escort_setup.best_setup`: convex in lam)."""
        orders = self.orders if self.order is None else (self.order,)
        return best_setup(model, sigma, eps, orders, self.max_states)

    def sweep_plan(
        self, model: PrivacyLossModel, sweep: Sequence[float], epsilon: float
    ) -> SweepEscorts:
        """The escorts of a calibration sweep's :meth:`runnable` entries at :meth:`sweep_order`'s
        order (the entries after them count as failing) and the common ``ln s* = max_i ln
        s_lam(sigma_i, eps)``, the bound at the smallest runnable sigma (``Z_lam`` is
        non-increasing in sigma); fixed before any draw, each entry's escort computed when the
        walk reaches it (:class:`~.escort_sweep.SweepEscorts`). ConfigurationError when no
        order runs at the first entry or ``s* > 1`` (the escort cannot beat plain sampling
        there)."""
        eps = float(epsilon)
        runnable = self.runnable(model, sweep)
        smallest = self._order_setup(model, min(runnable), eps)
        log_scale = smallest.log_support(eps)
        support_scale(log_scale, smallest.order, eps)
        return SweepEscorts(model, tuple(runnable), smallest, log_scale, self.max_states)

    def _tally(
        self,
        model: PrivacyLossModel,
        setup: EscortSetup,
        log_scale: float,
        epsilon: float,
        samples: int,
        seed: int,
        stream: int,
        config: EngineConfig | None,
        description: str,
    ) -> SweepTally:
        """Escort draws of ``W / e^log_scale`` at ``epsilon`` alone (a pilot's estimate)."""
        sampler = EscortSampler(model, setup, log_scale, config, self.max_states)
        return sampler.tally(
            (epsilon,), n_samples=samples, seed=seed, stream=stream, description=description
        )

    def locate(self, model: PrivacyLossModel, pilot: SigmaPilot) -> float:
        """Pilot (stream 0): bisection on ``ln sigma`` for ``delta_hat_remove(eps) = target``
        (``steps`` halvings, :data:`LOCATE_STEPS` by default): the middle of the last bracket
        in ``ln sigma`` (its top, half a bracket high on average, when no step failed).

        No guarantee; it only centres the sweep that Algorithm 5 verifies. Each step's escort
        is :func:`~.escort_setup.locate_setup`'s (a cheap order where it is precise enough). A
        sigma too small for every affordable order, or where the best one's support bound is
        above 1 (the escort says nothing there), counts as failing. Raises CalibrationError
        when even ``high`` fails.
        """
        epsilon, target, samples, seed = pilot.epsilon, pilot.target, pilot.samples, pilot.seed
        config, low, high = pilot.config, pilot.low, pilot.high
        steps = LOCATE_STEPS if pilot.steps is None else pilot.steps

        orders = self.orders if self.order is None else (self.order,)

        def passes(sigma: float, step: int) -> bool:
            try:
                setup = locate_setup(model, sigma, float(epsilon), target, orders, self.max_states)
            except ConfigurationError:
                return False
            log_scale = setup.log_support(float(epsilon))
            if log_scale <= math.log(target):
                return True
            if log_scale > 0.0:  # s > 1 (e^log_scale may overflow): counts as failing
                return False
            tally = self._tally(
                model, setup, log_scale, float(epsilon), samples, seed, PILOT_STREAM, config,
                f"escort locate {step}",
            )  # fmt: skip
            mean = tally.delta(0, 0)
            return mean == 0.0 or math.log(mean) + log_scale <= math.log(target)

        if not passes(high, 0):
            raise CalibrationError(
                f"escort pilot: even sigma = {high:g} has delta_hat > {target:.3g} at epsilon "
                f"{epsilon:g}; raise sigma_high, or {FALLBACK}"
            )
        lo, hi = math.log(low), math.log(high)
        for step in range(1, steps + 1):
            mid = 0.5 * (lo + hi)
            if passes(math.exp(mid), step):
                hi = mid
            else:
                lo = mid
        return math.exp(0.5 * (lo + hi)) if lo > math.log(low) else math.exp(hi)

    def estimate_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        samples: int,
        seed: int,
        config: EngineConfig | None = None,
        stream: int = PILOT_STREAM,
    ) -> tuple[float, float, EscortSetup]:
        """Importance-sampling estimate of ``delta_remove(eps)`` and its standard error (no
        guarantee; used to locate sigma and in the cost report)."""
        setup = choose_setup(self.setups(model, sigma), float(epsilon))
        log_scale = setup.log_support(float(epsilon))
        tally = self._tally(
            model, setup, log_scale, float(epsilon), samples, seed, stream, config,
            "escort estimate",
        )  # fmt: skip
        pooled = estimate_delta(tally, float(epsilon))
        mean, se = pooled.value, pooled.std_error
        scale = support_scale(log_scale, setup.order, float(epsilon))
        return mean * scale, se * scale, setup


@attrs.frozen
class _Placement:
    """Where an epsilon question's remove candidates go, from the escort pilot's estimates
    ``means`` on ``grid``: candidate r is the first grid epsilon whose estimate is at most
    ``kappa_r`` times the base delta that ``samples`` verification draws will accept at,
    ``base_delta(samples, delta / s, R) s`` with ``s = e^log_support`` the pilot's support
    bound. The samples must be those the verification uses: candidates placed for more draws
    than are then drawn sit above the acceptance level and fail."""

    grid: np.ndarray
    means: np.ndarray
    fractions: tuple[float, ...]
    delta: float
    log_support: float
    count: int

    def candidates(self, samples: int) -> list[float]:
        norm = min(self.delta * math.exp(-self.log_support), 0.5)
        target = base_delta(samples, norm, candidates=self.count) * math.exp(self.log_support)
        return [_first_below(self.grid, self.means, k * target) for k in self.fractions]


def _first_below(grid: np.ndarray, means: np.ndarray, level: float) -> float:
    """Smallest grid epsilon whose estimate is ``<= level`` (the last point when none)."""
    hits = np.flatnonzero(means <= level)
    return float(grid[hits[0]]) if hits.size else float(grid[-1])
