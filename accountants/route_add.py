"""The add direction of an escort route: exactly 0, a bound, or plain draws (docs/rdp-escort.md
§8, routes).

The escort serves the remove direction only. Below ``ln(1 / pi(empty))`` the add direction is
certified by the deterministic bound of docs/math.md §10 where it suffices, by the sampled
block bound of §10.1, or by plain Monte Carlo draws of the add direction. An epsilon question
that needs plain add draws gains nothing from the escort (they are as many as plain sampling's
per direction). A calibration does: its remove direction costs the escort's few draws (none at
all where the order-lam bound ``s_i <= delta``), its add direction ``m_plain`` plain draws at
the few sweep entries the walk reaches (:class:`~.escort_sweep.AddDraws`), against plain
sampling's two directions at every entry of its sweep. :func:`calibration_add` says which the
route takes; every choice is made before any verification draw, so it moves only the cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from minsep.accountants.escort_add import (
    add_bound,
    add_threshold,
    chosen_add_bound,
    plain_add_cheap,
)
from minsep.accountants.escort_sweep import ADD_BATCH
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import RunPlan, Stage
from minsep.framework.montecarlo.planning import format_seconds
from minsep.framework.montecarlo.precision import BEYOND_PRECISION, samples_for_precision

__all__ = [
    "BLOCK_BOUND_AFTER",
    "WALKED_ENTRIES",
    "CalibrationAdd",
    "add_needs_sampling",
    "bound_sigma",
    "calibration_add",
    "epsilon_add",
    "plain_add_seconds",
]

#: Plain add draws estimated above this many CPU seconds: the route first asks whether the
#: sampled block bound of docs/math.md §10.1 spares them (its block draws take seconds at the
#: route's sigma, and again at every walked entry, so below this the plain draws are cheaper).
BLOCK_BOUND_AFTER = 60.0
#: Sweep entries an escort calibration typically verifies: from its start (one entry above
#: the pilot's centre, :meth:`~.monte_carlo_sweep.CalibrationSweep.walk_start`, the centre
#: being where the estimate crosses the planned base delta) to the first failure just below
#: the centre. (The route charges an add bound per entry: an over-estimate where a bound
#: settles the add direction, which the walk checks at every second entry, the first at the
#: centre, where the route's own bound is memoised.)
WALKED_ENTRIES = 3
#: :func:`bound_sigma`: the growth of sigma until §10 settles the add direction, and the
#: bisections (each one sampled block bound, seconds) between that sigma and the one before.
GROWTH = 1.25
BOUND_STEPS = 5


def epsilon_add(
    model: PrivacyLossModel,
    numbers: tuple[float, float, float],
    precision: float,
    seed: int,
    draws: tuple[int, int, int],
) -> str | None:
    """How an escort epsilon question at ``numbers = (epsilon, sigma, delta)`` settles its add
    direction, the cheapest first (the run's order, :meth:`~.escort_engine.EscortProposal.
    _add_route`): a label, or None where it needs plain sampling beyond the escort's draws.
    ``draws = (samples, pilot_samples, candidates)`` of the escort run: plain add draws on
    those samples are taken where cheap (:func:`~.escort_add.plain_add_cheap`), before the
    sampled block bound of docs/math.md §10.1 is asked for (its block draws cost seconds)."""
    epsilon, sigma, delta = numbers
    if epsilon >= add_threshold(model):
        return "exact zero"
    if not add_needs_sampling(model, epsilon, sigma, delta, precision, seed, sampled=False):
        return "bounded (§10)"
    if plain_add_cheap(model, delta, *draws):
        return f"by plain draws on the escort's {draws[0]:,} samples"
    if not add_needs_sampling(model, epsilon, sigma, delta, precision, seed):
        return "bounded (§10, §10.1)"
    return None


def add_needs_sampling(
    model: PrivacyLossModel,
    epsilon: float,
    sigma: float | None = None,
    delta: float | None = None,
    slack: float | None = None,
    seed: int = 0,
    *,
    sampled: bool = True,
) -> bool:
    """Whether the add direction at ``epsilon`` is verified by plain sampling in an escort run.

    Not at or above ``ln(1 / pi(empty))`` (exactly 0, docs/rdp-escort.md §8), nor, at a known
    ``sigma`` and ``delta``, where the bound the run would use suffices (the deterministic one
    of docs/math.md §10, else, with ``sampled``, the sampled block bound of §10.1 from
    ``seed``, :func:`~minsep.accountants.escort_add.chosen_add_bound`): its
    delta at ``epsilon`` is at most ``delta``, or its epsilon at ``delta`` is at most
    ``epsilon * (1 + slack)`` (an epsilon question releases the larger of the two directions'
    epsilons, so the bound then costs at most the ``slack`` fraction).
    """
    eps = float(epsilon)
    if eps >= add_threshold(model):
        return False
    if sigma is None or delta is None:
        return True
    if sampled:
        _, bound = chosen_add_bound(model, float(sigma), float(delta), seed, eps)
    else:
        bound = add_bound(model, float(sigma))
    if bound.delta(eps) <= float(delta):
        return False
    return slack is None or not bound.epsilon(float(delta)) <= eps * (1.0 + slack)


def plain_add_seconds(plan: Callable[[], RunPlan | None] | None, samples: int) -> float | None:
    """Estimated CPU seconds of an escort calibration's plain add draws: ``ceil(WALKED_ENTRIES
    / ADD_BATCH)`` sampling calls (one: :data:`WALKED_ENTRIES` are typical) of ``samples``
    draws of one direction, each evaluated at the sigmas of the entries it covers
    (``min(WALKED_ENTRIES, ADD_BATCH)``: a call evaluates the walk's next unsettled entries,
    and the escort's sweep ends one entry below the centre, so a typical walk's call covers
    its three entries, not ``ADD_BATCH``), at the plain engine's measured rates (None when
    not measured)."""
    measured = None if plan is None else plan()
    if measured is None:
        return None
    covered = min(WALKED_ENTRIES, ADD_BATCH)
    seconds = measured.stage_seconds(Stage("calibrate add", samples, covered, directions=1))
    return None if seconds is None else -(-WALKED_ENTRIES // ADD_BATCH) * seconds


@attrs.frozen
class CalibrationAdd:
    """An escort calibration's add direction: ``sampled`` (it needs draws or a sampled
    bound), the plain add draws per walked entry ``samples`` (None: none) and their estimated
    CPU ``seconds`` (0 without draws; None when not timed); ``centre``: where the walk should
    start when the add direction's bound binds above the remove direction's sigma (None: the
    route's own centre); ``beyond``: why that centre lies beyond the precision asked for (None:
    within it)."""

    sampled: bool
    samples: int | None
    seconds: float | None
    centre: float | None = None
    beyond: str | None = None

    def label(self, exact_zero: bool) -> str:
        """How the route names this add direction where it takes no draws: exactly 0 (at or
        past ``ln(1/pi(empty))``), else bounded, with ``beyond`` where that applies."""
        if exact_zero:
            return "exact zero"
        return " ".join(part for part in ("bounded (§10, §10.1)", self.beyond) if part)


def calibration_add(
    model: PrivacyLossModel,
    numbers: tuple[float, float, float],
    precision: float,
    seed: int,
    plain_plan: Callable[[], RunPlan | None] | None,
    top: float | None = None,
    max_seconds: float | None = None,
) -> CalibrationAdd:
    """How an escort calibration at ``numbers = (epsilon, sigma, delta)`` (sigma: where the
    route's pilot centres the sweep) certifies its add direction: not at all past
    ``ln(1/pi(empty))`` or where the §10 bound suffices; else plain add draws of
    ``samples_for_precision(delta, precision)`` (plain sampling's count for one claim) when
    estimated at most :data:`BLOCK_BOUND_AFTER` seconds (and within ``max_seconds``) or when no
    bound suffices either; else the §10.1 block bound where it settles the add direction at
    ``sigma`` (per walked entry, as before this route existed); else the block bound with the
    walk started where it settles the add direction (:func:`bound_sigma`, below ``top``),
    where that lies within the ``precision`` asked for (at most ``sigma (1 + precision)``).

    The timing (``seconds``, measured on this machine) only chooses between routes whose answers
    agree within ``precision``. A bound that settles only further up would release a sigma the
    estimate does not support (at ``minsep train``'s question, 4.37 where plain add draws
    certify 2.54, above even the deterministic RDP answer 4.32), so the route then takes the
    plain draws however long they are estimated to take, and the released sigma does not depend
    on how fast this machine is. Only a time limit trades the precision away: where the plain
    draws alone are estimated over ``max_seconds`` (or not timed under a limit), the bound's
    sigma is taken wherever it lies below ``top`` (``beyond`` then says so): a certified sigma
    larger than the estimate supports, where plain sampling would cut its samples below any
    useful precision or refuse (``compare`` at delta = 1e-6, 600 s a row).
    """
    epsilon, sigma, delta = numbers
    if not add_needs_sampling(model, epsilon, sigma, delta, sampled=False):
        return CalibrationAdd(False, None, 0.0)
    samples = samples_for_precision(delta, precision, candidates=1)
    seconds = plain_add_seconds(plain_plan, samples)
    over = max_seconds is not None and (seconds is None or seconds > max_seconds)
    if not over and seconds is not None and seconds <= BLOCK_BOUND_AFTER:
        return CalibrationAdd(True, samples, seconds)
    if not add_needs_sampling(model, epsilon, sigma, delta, seed=seed):
        return CalibrationAdd(True, None, 0.0)
    within = sigma * (1.0 + precision)
    binding = (
        None if top is None else bound_sigma(model, numbers, seed, top, None if over else within)
    )
    if binding is None:
        return CalibrationAdd(True, samples, seconds)
    beyond = None
    if binding > within:
        estimated = "not timed" if seconds is None else f"estimated {format_seconds(seconds)}"
        beyond = (
            f"from sigma {binding:.4g}, {BEYOND_PRECISION} (the estimate's sigma is "
            f"{sigma:.4g}): plain add draws, {samples:,} per walked entry, {estimated}, over "
            f"the limit of {format_seconds(max_seconds or 0.0)}"
        )
    return CalibrationAdd(True, None, 0.0, centre=binding, beyond=beyond)


def bound_sigma(
    model: PrivacyLossModel,
    numbers: tuple[float, float, float],
    seed: int,
    top: float,
    limit: float | None = None,
) -> float | None:
    """A sigma in ``(sigma, top]`` where the add bound an escort entry uses (§10, else the
    sampled block bound of §10.1 from ``seed``) settles ``epsilon`` at ``delta``: the first of
    ``sigma * GROWTH^j`` where §10 alone does, then :data:`BOUND_STEPS` bisections in
    ``ln sigma`` with the entry's bound between it and ``sigma`` (where that bound fails); the
    result always settles it by the bound at that very sigma; None when §10 does not settle
    it below ``top``, or, with a ``limit``, when the entry's bound does not settle it at
    ``limit`` (the result is then at most ``limit``: the bisection starts from it).

    Where plain add draws would take too long and the bound does not settle the add direction
    at the remove direction's sigma, an escort calibration can still certify: the entries the
    bound does not settle fail (docs/rdp-escort.md §8), so the walk releases a sigma at which
    the bound settles it, larger than the remove direction alone would need. This is where its
    walk should start. A planning rule: every entry is still verified by its own bound."""
    epsilon, sigma, delta = numbers
    low, high = sigma, sigma  # the entry's bound fails at sigma (calibration_add asked)
    while add_bound(model, high).epsilon(delta) > epsilon:
        high *= GROWTH
        if high > top:
            return None
    if limit is not None and high > limit:
        if not _settles(model, limit, numbers, seed):
            return None
        high = limit
    for _ in range(BOUND_STEPS):
        middle = math.sqrt(low * high)
        if _settles(model, middle, numbers, seed):
            high = middle
        else:
            low = middle
    return high


def _settles(
    model: PrivacyLossModel, sigma: float, numbers: tuple[float, float, float], seed: int
) -> bool:
    """Whether the add bound an escort entry at ``sigma`` uses settles ``epsilon`` at
    ``delta`` (``numbers = (epsilon, _, delta)``)."""
    epsilon, _, delta = numbers
    return chosen_add_bound(model, sigma, delta, seed, epsilon)[1].epsilon(delta) <= epsilon
