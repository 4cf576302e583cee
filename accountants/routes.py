"""Which route answers a Monte Carlo question, with how many samples, in how long.

docs/rdp-escort.md §8 (routes). A certified epsilon or sigma at a target delta can be verified
by plain sampling of the dominating pair or, for the remove direction of models with a
participation chain, by importance sampling from the escort ``R_lam``. For a relative
precision ``r`` (docs/math.md §7.3: base delta ``delta**(1 + r)``) the two need

- plain: ``m_plain = min_samples(delta**(1 + r), delta, R)`` samples per direction;
- escort: ``m_escort = min_samples(delta**(1 + r) / s, delta / s, R)``, where ``s`` is the
  support bound the run will verify against (``W / s`` is the verified variable, with mean
  ``delta_remove / s``), times ``ESCORT_MARGIN`` for a calibration (one claim); an epsilon
  question (``R`` candidates) gives half of the budget to the margin and half to its ladder
  (:mod:`.escort_precision`: ``delta**(1 + r/2)`` above); nothing at all when ``s <= delta``
  (the order-lam RDP bound alone certifies);

and the add direction needs no sampling at and above ``ln(1 / pi(empty))`` (exactly 0) or
where the deterministic bound of docs/math.md §10 suffices (route ``"deterministic"``: its
delta at the answer's epsilon is at most the target delta, or for an epsilon question its
epsilon at delta is within the precision of the escort's estimate); elsewhere it is verified
by plain sampling (:func:`add_needs_sampling`). An epsilon question takes plain add draws on
the escort's own samples where they are cheap, before asking the sampled block bound of §10.1
(:func:`~.route_add.epsilon_add`); where neither suffices the escort saves nothing. A
calibration may still take it: the remove direction by the escort (or its order-lam
bound alone, ``s_i <= delta``) and the add direction by ``m_plain`` plain draws per walked
entry (``Route.add_samples``, drawn a few entries at a time:
:class:`~.escort_sweep.AddDraws`), half the directions of plain sampling and fewer sigmas,
where the estimate (escort parts plus the plain engine's rates for those add draws) is lower.
:func:`choose_route` estimates ``s`` from a small escort pilot (the estimate's epsilon, or the
sigma the escort's pilot centres a calibration sweep on), times both routes with their own
engines' rates (:func:`~minsep.accountants.escort_engine.measure_escort_seconds` for the
escort, the plain engine's probe for plain) and takes the cheaper; with a time limit the
samples are cut to fit, down to ``LOOSEST_PRECISION``, and a route that does not fit even then
is refused with its estimate. The choice is a planning rule: it is fixed before any
verification draw, so it never touches the guarantee, only the cost and the tightness.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Protocol

import attrs

from minsep.accountants.escort_engine import (
    CHUNK_ELEMENTS,
    DEFAULT_ORDERS,
    ESCORT_MARGIN,
    LOCATE_STEPS,
    EscortProposal,
    add_threshold,
    choose_setup,
    measure_escort_seconds,
)
from minsep.accountants.escort_precision import precision_samples
from minsep.accountants.escort_sampling import BATCH_BYTES
from minsep.accountants.monte_carlo_run import RunSettings
from minsep.accountants.monte_carlo_sweep import CalibrationSweep
from minsep.accountants.route_add import (
    BOUND_STEPS,
    WALKED_ENTRIES,
    add_needs_sampling,
    calibration_add,
    epsilon_add,
    plain_add_seconds,
)
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import EngineConfig, RunPlan
from minsep.framework.montecarlo.bounds import base_delta, min_samples
from minsep.framework.montecarlo.calibration import locate_sigma
from minsep.framework.montecarlo.evr import DEFAULT_LADDER
from minsep.framework.montecarlo.planning import format_seconds
from minsep.framework.montecarlo.precision import LOOSEST_PRECISION, samples_for_precision

__all__ = [
    "ESCORT_PILOT",
    "Asker",
    "EscortCosts",
    "Route",
    "add_needs_sampling",
    "auto_proposal",
    "choose_route",
    "escort_samples",
    "routed_centre",
]

#: Claims verified per question (the union bound of docs/math.md §7).
CANDIDATES = {"epsilon": len(DEFAULT_LADDER), "calibrate": 1}
#: Escort draws of the routing pilot (it only estimates; it never certifies).
ROUTE_PILOT = 1_000
#: The escort's pilot (epsilon pilot, or each locating step of a calibration) when its run is
#: sized by precision: a planning rule only (it fixes the support bound or centres the sweep).
ESCORT_PILOT = 10_000
#: The fewest escort samples a time limit may cut a run to, as a fraction of those planned.
_LOOSEST_FRACTION = 0.25
#: The costs the route last measured for a calibration (model id: the model, epsilon and the
#: costs), so that the plan line that follows reports the same estimate.
_MEASURED: dict[int, tuple[object, float, EscortCosts]] = {}


@attrs.frozen
class EscortCosts:
    """CPU seconds of an escort run's parts at order ``order`` (docs/rdp-escort.md §8, cost):
    ``fixed``, one sampling batch's fixed cost (about one forward pass), ``per_draw``
    (:func:`~.escort_engine.measure_escort_seconds`); for a calibration, the route's pilot
    work: ``locate`` (its locating pilot: ``ln Z`` passes and :data:`ROUTE_PILOT` draws per
    step), ``plan`` (the sweep plan's passes) and ``add`` (the add bounds at one sigma, paid
    per entry); ``centre``: where its pilot centred (:func:`routed_centre`), ``bound_centre``:
    that is where the add bound starts to settle it (``bound_sigma``)."""

    order: int
    fixed: float
    per_draw: float
    locate: float = 0.0
    plan: float = 0.0
    add: float = 0.0
    centre: float | None = None
    bound_centre: bool = False


class Asker(Protocol):
    """What the route chooser reads of the Monte Carlo accountant that asks (its statistical
    question, sweep and run settings, its pilot size and plain plan), so that this module
    does not import the accountant."""

    @property
    def samples(self) -> int: ...
    @property
    def pilot_samples(self) -> int | None: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def proposal(self) -> str: ...
    @property
    def routed(self) -> str | None: ...
    @property
    def add_samples(self) -> int | None: ...
    @property
    def sweep(self) -> CalibrationSweep: ...
    @property
    def calibration_sweep(self) -> CalibrationSweep: ...
    @property
    def run(self) -> RunSettings: ...

    def _pilot(self) -> int: ...

    def _plan(
        self, model: PrivacyLossModel, question: str, sigma: float, *, measure: bool
    ) -> RunPlan: ...


@attrs.frozen
class Route:
    """A chosen route: ``proposal`` (``"plain"`` or ``"escort"``), ``samples`` per direction,
    the ``precision`` they plan for, the estimated ``seconds`` (None when not timed) and the
    one-line ``reason``; ``refused`` when no route fits the time limit (``reason`` says
    what it would need); ``add_samples``: an escort calibration's plain add draws (None:
    none, or ``samples``)."""

    proposal: str
    samples: int
    precision: float
    seconds: float | None
    reason: str
    refused: bool = False
    add_samples: int | None = None


def auto_proposal(
    model: PrivacyLossModel,
    samples: int,
    sigma: float | None,
    delta: float | None,
    epsilon: float,
) -> tuple[bool, str | None]:
    """Whether ``proposal="auto"`` with ``samples`` fixed by the caller takes the escort (the
    route of a question whose samples were not chosen by :func:`choose_route`), and the note
    saying why (None: nothing to say). For an epsilon or calibrate question (``delta`` given):
    where plain sampling cannot certify ``delta`` with ``samples`` at all. For a delta question:
    where the escort's support bound at ``epsilon`` is below 1e-2 (its weights then vary far
    less than plain samples). Never where the model has no affordable escort."""
    unavailable = EscortProposal().unavailable(model)
    if unavailable is not None:
        return False, f"proposal: plain (auto): the escort cannot run here: {unavailable}."
    if delta is not None:
        try:
            base_delta(samples, float(delta), candidates=len(DEFAULT_LADDER))
        except ConfigurationError:
            return True, (
                f"proposal: escort (auto): plain Monte Carlo cannot certify delta = "
                f"{delta:.3g} with {samples} samples; importance sampling from the escort "
                "R_lam can (docs/rdp-escort.md §8)."
            )
        return False, None
    assert sigma is not None
    try:
        setups = EscortProposal().setups(model, sigma)
    except ConfigurationError:
        return False, None
    best = choose_setup(setups, epsilon)
    if best.log_support(epsilon) < math.log(1e-2):
        return True, (
            f"proposal: escort (auto): its support bound s_{best.order}(eps) = "
            f"{math.exp(best.log_support(epsilon)):.3g} < 1e-2, so its weights vary far less "
            "than plain samples."
        )
    return False, None


def escort_samples(delta: float, log_support: float, precision: float, candidates: int) -> int:
    """``m_escort`` of the module docstring (at least 100, the accountant's floor; 100 when the
    support bound alone certifies)."""
    log_ratio = math.log(delta) - log_support  # ln(delta / s)
    if log_ratio >= 0.0:
        return 100
    if candidates > 1:  # an epsilon question: margin and ladder share the budget
        return max(100, precision_samples(delta, log_support, precision, candidates))
    normalised = math.exp(min(log_ratio, math.log(0.5)))
    target = math.exp(math.log(normalised) + precision * math.log(delta))
    need = min_samples(target, normalised, candidates=candidates)
    return max(100, int(ESCORT_MARGIN * need))


def _route_seed(accountant: Asker) -> int:
    """The seed of the block bound the run would use (0 when the run draws fresh entropy: the
    route is a planning rule, any seed serves it)."""
    return accountant.seed if accountant.seed is not None else 0


def _add_reason(model: PrivacyLossModel, epsilon: float, sigma: float) -> str:
    """The route's reason when the add direction would need plain sampling."""
    return (
        f"the add direction needs plain sampling at epsilon {epsilon:.4g}, sigma {sigma:.4g} "
        f"(below ln(1/pi(empty))"
        f" = {add_threshold(model):.4g}, and neither the deterministic bound of docs/math.md "
        "§10 nor the sampled block bound of §10.1 suffices), so the escort saves nothing"
    )


def _escort_estimate(
    accountant: Asker,
    model: PrivacyLossModel,
    question: str,
    numbers: dict[str, float],
    config: EngineConfig,
    precision: float,
) -> tuple[float, float, float, EscortCosts]:
    """``(sigma, epsilon, ln s, costs)`` the escort run would see, from a small escort pilot
    on its own seed (stream 0 of seed + 1: never a run's draws); a calibration's pilot work is
    timed (CPU) for :func:`_escort_seconds`."""
    proposal = EscortProposal(precision=precision)
    delta = float(numbers["delta"])
    seed = 0 if accountant.seed is None else accountant.seed + 1
    if question == "epsilon":
        sigma = float(numbers["sigma"])
        setups = proposal.setups(model, sigma)
        setup = min(setups, key=lambda s: s.epsilon_at(math.log(delta)))
        _, _, epsilon = proposal._pilot(model, setup, delta, ROUTE_PILOT, seed, config, " route")
        setup = choose_setup(setups, epsilon)
        log_support = setup.log_support(epsilon)
        costs = EscortCosts(setup.order, *measure_escort_seconds(model, setup))
        return sigma, epsilon, log_support, costs
    epsilon = float(numbers["epsilon"])
    began = time.process_time()
    centre = locate_sigma(
        model,
        epsilon,
        proposal.pilot_target(ROUTE_PILOT, delta),
        samples=ROUTE_PILOT,
        seed=seed,
        config=config,
        low=accountant.sweep.sigma_low,
        high=accountant.sweep.sigma_high,
        proposal=proposal,
        steps=LOCATE_STEPS,
    )
    located = time.process_time()
    sweep = accountant.calibration_sweep.escort_points(centre)
    escorts = proposal.sweep_plan(model, sweep, epsilon)
    planned = time.process_time() - located
    rates = measure_escort_seconds(model, escorts.smallest)
    costs = EscortCosts(escorts.order, *rates, locate=located - began, plan=planned)
    return centre, epsilon, escorts.log_scale, costs


def _sweep_support(
    accountant: Asker, model: PrivacyLossModel, centre: float, numbers: dict[str, float]
) -> float:
    """``ln s*`` of an escort calibration's sweep centred at ``centre`` (the run's
    :meth:`~.escort_engine.EscortProposal.sweep_plan` over its escort points)."""
    sweep = accountant.calibration_sweep.escort_points(centre)
    return EscortProposal().sweep_plan(model, sweep, float(numbers["epsilon"])).log_scale


def _batches(accountant: Asker, model: PrivacyLossModel, size: int) -> int:
    """Sampling batches of an escort call of ``size`` draws: its chunks, grouped as
    :meth:`~.escort_sampling.EscortChunkTask._counts` groups them (one recomputation of the
    forward messages each)."""
    n = max(model.n_steps, 1)
    chunk = max(1, min(accountant.run.chunk(model), CHUNK_ELEMENTS // n))
    width = max(1, BATCH_BYTES // (chunk * n))
    chunks = -(-size // chunk)
    return -(-chunks // width)


def _escort_stages(question: str, samples: int, pilot: int) -> list[int]:
    """Draws of each escort sampling call of a run: pilot and verification (a calibration:
    a :data:`~.escort_engine.LOCATE_STEPS`-step locating pilot, one call per step and at the
    top, then ``WALKED_ENTRIES`` sweep entries of ``samples`` each)."""
    if question == "calibrate":
        return [pilot] * (LOCATE_STEPS + 1) + [samples] * WALKED_ENTRIES
    return [pilot, samples]


def _escort_seconds(
    accountant: Asker,
    model: PrivacyLossModel,
    question: str,
    samples: int,
    pilot: int,
    costs: EscortCosts,
) -> float:
    """Estimated CPU seconds of an escort run: every sampling batch of every call pays
    ``costs.fixed``, every draw ``costs.per_draw``, shared among the workers; in the calling
    process the ``ln Z`` passes: an epsilon question's for every order (about half a batch's
    fixed cost each); a calibration's as the route measured them: its locating pilot again
    (``costs.locate``, less the route's own draws), the sweep plan (``costs.plan``) and, per
    walked entry, one pass of the chosen order and the add direction's bounds (``costs.add``)."""
    sampled = sum(
        _batches(accountant, model, size) * costs.fixed + size * costs.per_draw
        for size in _escort_stages(question, samples, pilot)
    )
    workers = max(accountant.run.workers, 1)
    if question != "calibrate":
        return sampled / workers + len(DEFAULT_ORDERS) * costs.fixed / 2
    steps = LOCATE_STEPS + 1
    pilot_work = max(costs.locate - steps * ROUTE_PILOT * costs.per_draw, 0.0)
    entries = WALKED_ENTRIES * (costs.fixed + costs.add)
    return sampled / workers + pilot_work + costs.plan + entries


def measured_costs(model: PrivacyLossModel, epsilon: float) -> EscortCosts | None:
    """The costs the route last measured for a calibration of ``model`` at ``epsilon``."""
    kept = _MEASURED.get(id(model))
    if kept is None or kept[0] is not model or kept[1] != epsilon:
        return None
    return kept[2]


def routed_start(accountant: Asker, model: PrivacyLossModel, epsilon: float) -> bool:
    """Whether a routed escort calibration's walk begins at its centre: where the add bound
    starts to settle it there (``bound_sigma``; entries above only cost draws). Planning."""
    costs = measured_costs(model, float(epsilon)) if accountant.routed is not None else None
    return costs is not None and costs.bound_centre


def routed_centre(accountant: Asker, model: PrivacyLossModel, epsilon: float) -> float | None:
    """Where an escort calibration that :func:`choose_route` routed centres its sweep: the
    sigma the route's own locating pilot found for this model and epsilon (stream 0 of seed
    + 1, :data:`ROUTE_PILOT` escort draws per bisection step, the run's pilot target and
    range), so the run does not repeat that pilot (at n = 1024, 8 bands, precision 0.01 it
    was a fifth of the calibration) and its sweep plan finds the same forward passes cached.
    None when the accountant was not routed or the route measured another question. A
    planning rule: the centre is fixed before any verification draw (docs/math.md §7)."""
    if accountant.routed is None:
        return None
    costs = measured_costs(model, float(epsilon))
    return None if costs is None else costs.centre


def choose_route(
    accountant: Asker,
    model: PrivacyLossModel,
    question: str,
    numbers: dict[str, float],
    precision: float,
    max_seconds: float | None,
    plain_seconds: Callable[[], float | None],
    plain_plan: Callable[[], RunPlan | None] | None = None,
) -> Route:
    """The cheaper sound route for ``question`` (``"epsilon"`` or ``"calibrate"``) at
    ``precision`` (module docstring). ``plain_seconds`` gives the plain engine's estimate for
    ``m_plain`` samples (None when not timed), asked only when the escort is an option; the
    escort is timed here with its own rate, and a calibration's plain add draws with the rates
    of ``plain_plan`` (the plain engine's measured plan; None: not timed, so the escort is not
    preferred).
    """
    delta = float(numbers["delta"])
    candidates = CANDIDATES[question]
    plain_m = samples_for_precision(delta, precision, candidates=candidates)
    plain = Route("plain", plain_m, precision, None, "plain sampling")
    why_not = None
    escort: Route | None = None
    if accountant.proposal == "plain":
        why_not = "proposal 'plain' was asked for"
    else:
        why_not = EscortProposal().unavailable(model)
    if why_not is None:
        try:
            config = EngineConfig(progress=False)
            sigma, epsilon, log_s, costs = _escort_estimate(
                accountant, model, question, numbers, config, precision
            )
        except (ConfigurationError, CalibrationError) as exc:
            why_not = f"the escort cannot run here ({exc})"
        else:
            seed = _route_seed(accountant)
            began = time.process_time()
            m = escort_samples(delta, log_s, precision, candidates)
            pilot = accountant.pilot_samples or min(max(m // 4, 1000), ESCORT_PILOT)
            add_m, add, bounds = None, None, 1  # bounds: add bounds the check computed
            extra: float | None = 0.0
            if question == "calibrate":  # the add direction by a bound or plain draws
                top = accountant.sweep.sigma_high
                entry = accountant.calibration_sweep.centre_entry(sigma)  # the walk's float
                plan = calibration_add(
                    model, (epsilon, entry, delta), precision, seed, plain_plan, top, max_seconds
                )
                add_m, extra = plan.samples, plan.seconds
                add = plan.label(exact_zero=epsilon >= add_threshold(model))
                if plan.centre is not None:  # the walk moves up: its support bound shrinks
                    bounds = BOUND_STEPS + 1  # the entries pay one bound each
                    sigma = plan.centre
                    log_s = _sweep_support(accountant, model, sigma, numbers)
                    m = escort_samples(delta, log_s, precision, candidates)
                    pilot = accountant.pilot_samples or min(max(m // 4, 1000), ESCORT_PILOT)
            else:
                numbers3 = (epsilon, sigma, delta)
                add = epsilon_add(model, numbers3, precision, seed, (m, pilot, candidates))
            costs = attrs.evolve(costs, add=(time.process_time() - began) / bounds)
            if add is None:
                why_not = _add_reason(model, epsilon, sigma)
            else:
                seconds: float | None = _escort_seconds(
                    accountant, model, question, m, pilot, costs
                )
                if add_m is not None:  # timed by the plain engine's rates
                    add = f"by plain draws, {add_m:,} per walked entry"
                    seconds = None if seconds is None or extra is None else seconds + extra
                if question == "calibrate":
                    _MEASURED.clear()
                    routed = attrs.evolve(costs, centre=sigma, bound_centre=bounds > 1)
                    _MEASURED[id(model)] = (model, epsilon, routed)
                escort = Route(
                    "escort",
                    m,
                    precision,
                    seconds,
                    f"escort (support bound s = {math.exp(log_s):.3g} = "
                    f"{math.exp(log_s) / delta:.3g} x delta at sigma {sigma:.4g}, epsilon "
                    f"{epsilon:.4g}; add direction {add})",
                    add_samples=add_m,
                )
    if accountant.proposal == "escort" and escort is None:
        raise ConfigurationError(
            f"MonteCarloAccountant.proposal = 'escort' is invalid here: {why_not}; use "
            "proposal 'plain' or 'auto'",
            parameter="proposal",
        )
    if escort is not None and escort.add_samples is not None and not _fits(escort, max_seconds):
        escort = None  # its plain add draws are not cut to fit (_fit cuts the escort's samples)
    best = plain if escort is None else escort
    if escort is not None and accountant.proposal == "auto":
        plain = attrs.evolve(plain, seconds=plain_seconds())
        best = min((plain, escort), key=_cost)
    if why_not is not None:
        best = attrs.evolve(best, reason=f"{best.reason}, not the escort: {why_not}")
    return _fit(best, delta, candidates, max_seconds)


def _fits(route: Route, max_seconds: float | None) -> bool:
    """Whether ``route``'s estimate is within ``max_seconds`` (always without a limit)."""
    if max_seconds is None:
        return True
    return route.seconds is not None and route.seconds <= max_seconds


def _cost(route: Route) -> tuple[float, int]:
    """Estimated seconds, then samples (a route not timed compares by samples)."""
    return (math.inf if route.seconds is None else route.seconds, route.samples)


def _fit(route: Route, delta: float, candidates: int, max_seconds: float | None) -> Route:
    """``route`` with its samples cut to fit ``max_seconds`` (down to ``LOOSEST_PRECISION``),
    or refused with the time it would need."""
    if max_seconds is None or route.seconds is None or route.seconds <= max_seconds:
        return route
    per_sample = route.seconds / route.samples
    fitted = int(max_seconds / per_sample)
    fewest = max(100, int(route.samples * _LOOSEST_FRACTION))
    if route.proposal == "plain":
        fewest = samples_for_precision(delta, LOOSEST_PRECISION, candidates=candidates)
    if fitted < fewest:
        need = fewest * per_sample
        return attrs.evolve(
            route,
            refused=True,
            reason=(
                f"{route.reason}: estimated {format_seconds(route.seconds)} for "
                f"{route.samples:,} samples per direction, and {format_seconds(need)} even at "
                f"precision {LOOSEST_PRECISION:g}; over the limit of {format_seconds(max_seconds)}"
            ),
        )
    return attrs.evolve(
        route,
        samples=fitted,
        seconds=fitted * per_sample,
        reason=(
            f"{route.reason}: cut to {fitted:,} samples to fit {format_seconds(max_seconds)} "
            f"(estimated {format_seconds(route.seconds)} for {route.samples:,})"
        ),
    )


def escort_plan(
    accountant: Asker,
    model: PrivacyLossModel,
    proposal: EscortProposal,
    question: str,
    sigma: float,
    epsilon: float,
) -> tuple[str, float | None]:
    """The plan line of an escort run and its estimated seconds (None when the escort cannot
    be timed at ``sigma``), from the escort engine's own rate
    (:func:`~minsep.accountants.escort_engine.measure_escort_seconds`), with the plain add
    direction's draws when :func:`add_needs_sampling` (timed by the plain probe) unless the
    route chooser already found it needs none."""
    samples, pilot = accountant.samples, accountant._pilot()
    if proposal.precision is not None and accountant.pilot_samples is None:
        pilot = min(pilot, ESCORT_PILOT)  # as the run caps it (precision-sized escort runs)
    costs = measured_costs(model, float(epsilon)) if question == "calibrate" else None
    if costs is None:  # not routed: the rates of the best order at sigma
        try:
            setup = choose_setup(proposal.setups(model, sigma), epsilon)
        except ConfigurationError as exc:
            return f"{question} (escort): time not estimated ({exc})", None
        rates = measure_escort_seconds(model, setup, max_states=proposal.max_states)
        costs = EscortCosts(setup.order, *rates)
    seconds = _escort_seconds(accountant, model, question, samples, pilot, costs)
    draws = sum(_escort_stages(question, samples, pilot))
    text = (
        f"{question} (escort, order {costs.order}): estimated {format_seconds(seconds)} CPU "
        f"for about {draws:,} escort draws (measured on one worker: {costs.fixed:.3g} s per "
        f"batch's forward messages, {1.0 / max(costs.per_draw, 1e-12):,.0f} draws/s"
    )
    if question == "calibrate":
        text += f"; a calibration verifies about {WALKED_ENTRIES} sweep entries"
    if question == "calibrate" and accountant.add_samples is not None:  # routed plain add draws
        measured = functools.partial(accountant._plan, model, question, sigma, measure=True)
        add_seconds = plain_add_seconds(measured, accountant.add_samples)
        if add_seconds is not None:
            seconds += add_seconds
            text += (
                f"; plus the add direction by plain draws ({accountant.add_samples:,} per "
                f"walked entry), {format_seconds(add_seconds)}"
            )
        return text + ")", seconds
    threshold = add_threshold(model)
    routed = accountant.routed is not None  # the route found the add direction needs no draw
    if not routed and (question == "epsilon" or add_needs_sampling(model, epsilon)):
        plain = accountant._plan(model, question, sigma, measure=True)
        add = None if plain.estimated_seconds is None else plain.estimated_seconds / 2
        if add is not None:
            when = ""
            if question == "epsilon":  # epsilon is known after the pilot only
                when = (
                    f"if epsilon < ln(1/pi(empty)) = {threshold:.4g} and the bound of "
                    "docs/math.md §10 does not suffice, "
                )
            else:
                seconds += add
            text += f"; plus, {when}the add direction by plain sampling, {format_seconds(add)}"
    return text + ")", seconds


@attrs.frozen
class EscortPlanner:
    """The escort's :class:`~minsep.accountants.monte_carlo_plan.Planner`: no chunked plan to
    describe untimed; its timed line is :func:`escort_plan` (the escort engine's own rates)."""

    accountant: Asker
    model: PrivacyLossModel
    proposal: EscortProposal
    question: str
    sigma: float
    epsilon: float
    advice: str = "fewer samples or more workers"

    def work(self) -> None:
        """None: an escort run is described by its timed line only."""
        return None

    def timed(self) -> tuple[str, float | None]:
        """:func:`escort_plan`'s line and estimate."""
        return escort_plan(
            self.accountant, self.model, self.proposal, self.question, self.sigma, self.epsilon
        )
