"""Certified delta(eps) curves as dominating pairs dp_accounting composes (docs/math.md §7.1).

A curve ``{(eps_i, delta_i)}`` that holds for a mechanism in both directions (each ``delta_i``
an upper bound on ``delta(eps_i)``, together except with a failure probability ``beta``) says
nothing about the mechanism between the grid points, yet real pipelines compose training with
other releases. :func:`dominating_pair` builds the tightest pair of distributions that every
mechanism satisfying the whole curve is dominated by: its privacy profile, as a function of
``x = e^eps``, is the lower convex envelope of the profiles of the single ``(eps_i, delta_i)``
guarantees (Doroshenko et al. 2022's "connect the dots", here from upper bounds). The envelope
is computed in exact rational arithmetic from ``e^eps_i`` rounded up (a weaker guarantee), so
its privacy losses are the grid's ``+-eps_i`` and its masses are never negative.

:meth:`DominatingPair.to_pld` gives it as a pessimistic dp_accounting
``PrivacyLossDistribution``; :class:`CertifiedPLD` keeps the failure probability next to it,
adds it to every delta it reports and sums it over compositions, so that the (epsilon, delta)
it answers holds for the composed pipeline.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_INTERVAL",
    "CertifiedPLD",
    "DominatingPair",
    "check_epsilon_grid",
    "dominating_pair",
]

#: dp_accounting's default value discretisation interval (that of ``from_gaussian_mechanism``),
#: so that the PLD composes with dp_accounting's PLDs built with their defaults.
DEFAULT_INTERVAL = 1e-4
#: Largest grid epsilon accepted (e^eps must stay a finite float).
MAX_EPSILON = 500.0


def check_epsilon_grid(owner: str, epsilons: Any) -> tuple[float, ...]:
    """``epsilons`` as a tuple of distinct finite values in [0, MAX_EPSILON], increasing."""
    try:
        grid = tuple(float(e) for e in epsilons)
    except (TypeError, ValueError):
        grid = ()
    if (
        not grid
        or any(not (0.0 <= e <= MAX_EPSILON) for e in grid)
        or list(grid) != sorted(set(grid))
    ):
        raise ConfigurationError(
            f"{owner}.epsilons = {epsilons!r} is invalid: must be distinct numbers in "
            f"[0, {MAX_EPSILON:g}] in increasing order (at least one)",
            parameter="epsilons",
        )
    return grid


def _exp_up(value: float) -> Fraction:
    """A rational >= e^value (the float exp nudged up two ulps, then exact)."""
    return Fraction(_up(math.exp(value)))


def _profile(x: Fraction, ex: Fraction, delta: Fraction) -> Fraction:
    """The privacy profile H_x of the pair of one (eps, delta) guarantee, ``ex >= e^eps``:
    ``max(delta, delta + (1 - delta) (ex - x) / (1 + ex), 1 - (1 - delta) x)``."""
    return max(delta, delta + (1 - delta) * (ex - x) / (1 + ex), 1 - (1 - delta) * x)


def _lowest_profile(
    x: Fraction, kept: list[tuple[Fraction, Fraction]], ex: np.ndarray, d: np.ndarray
) -> Fraction:
    """``min_i _profile(x, *kept[i])``, exactly: a float pass (``ex``, ``d``: ``kept`` as
    floats) finds the few guarantees within 1e-9 of the minimum (float error is about 1e-16
    of it), the exact pass compares those."""
    xf = float(x)
    values = np.maximum(np.maximum(d, d + (1 - d) * (ex - xf) / (1 + ex)), 1 - (1 - d) * xf)
    close = np.flatnonzero(values <= values.min() * (1 + 1e-9) + 1e-300)
    return min(_profile(x, *kept[i]) for i in close)


def _lower_hull(points: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction]]:
    """The vertices of the lower convex hull of ``points`` (sorted by x, distinct x)."""
    hull: list[tuple[Fraction, Fraction]] = []
    for p in points:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:
                hull.pop()  # hull[-1] lies on or above the chord from hull[-2] to p
            else:
                break
        hull.append(p)
    return hull


def _up(value: float) -> float:
    """``value`` two ulps up (covers the rounding of one float operation, with room)."""
    return math.nextafter(math.nextafter(value, math.inf), math.inf)


def _round_down(value: Fraction) -> float:
    result = float(value)
    return math.nextafter(result, -math.inf) if Fraction(result) > value else result


def _as_tuple(values: Any) -> tuple[float, ...]:
    return tuple(values)


@attrs.frozen
class DominatingPair:
    """A privacy loss distribution: mass ``masses[k]`` at loss ``losses[k]`` and
    ``infinity_mass`` at +inf, under P; the same in both directions (symmetric).

    Its privacy profile is ``delta(eps) = infinity_mass + sum_k masses[k] (1 - e^(eps -
    losses[k]))_+`` (docs/math.md §7.1).
    """

    losses: tuple[float, ...] = attrs.field(converter=_as_tuple)
    masses: tuple[float, ...] = attrs.field(converter=_as_tuple)
    infinity_mass: float = attrs.field()

    def __attrs_post_init__(self) -> None:
        owner = "DominatingPair"
        for loss in self.losses:
            check_range(owner, "losses", loss)
        for mass in self.masses:
            check_range(owner, "masses", mass, low=0.0, high=1.0)
        check_range(owner, "infinity_mass", self.infinity_mass, low=0.0, high=1.0)
        if len(self.masses) != len(self.losses):
            raise ConfigurationError(
                f"{owner}.masses has {len(self.masses)} values; must have one per loss "
                f"({len(self.losses)})",
                parameter="masses",
            )
        total = math.fsum(self.masses) + self.infinity_mass
        if total > 1 + 1e-9:
            raise ConfigurationError(
                f"{owner}.masses = {self.masses!r} is invalid: with infinity_mass they sum to "
                f"{total!r}; must sum to at most 1",
                parameter="masses",
            )

    def delta(self, epsilon: float) -> float:
        """The hockey-stick divergence H_{e^eps} of the pair (both directions)."""
        total = self.infinity_mass
        for loss, mass in zip(self.losses, self.masses, strict=True):
            if loss > epsilon:
                total += mass * -math.expm1(epsilon - loss)
        return min(total, 1.0)

    def epsilon(self, delta: float) -> float:
        """The smallest eps >= 0 with ``self.delta(eps) <= delta`` (to 1e-12 relative, rounded
        up: bisection returning a point where the inequality was checked); inf when ``delta``
        is below ``infinity_mass``."""
        check_range("DominatingPair.epsilon", "delta", delta, low=0.0, high=1.0)
        if self.delta(0.0) <= delta:
            return 0.0
        hi = max(self.losses, default=0.0)
        if self.delta(hi) > delta:
            return math.inf
        lo = 0.0
        while hi - lo > 1e-12 * max(hi, 1.0):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi

    def to_pld(
        self, value_discretization_interval: float = DEFAULT_INTERVAL
    ) -> pld_lib.PrivacyLossDistribution:
        """The pair as a pessimistic, symmetric dp_accounting PLD: every loss rounded up to a
        multiple of ``value_discretization_interval`` (compose only with PLDs of the same
        interval)."""
        h = check_range(
            "DominatingPair.to_pld",
            "value_discretization_interval",
            value_discretization_interval,
            low=0.0,
            high=1.0,
            low_open=True,
        )
        rounded: dict[int, float] = {}
        for loss, mass in zip(self.losses, self.masses, strict=True):
            key = math.ceil(loss / h)
            while key * h < loss:
                key += 1
            rounded[key] = rounded.get(key, 0.0) + mass
        if not rounded:  # nothing but the infinite loss (a vacuous curve)
            rounded[0] = 0.0
        return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
            rounded, self.infinity_mass, h, pessimistic_estimate=True
        )


def dominating_pair(epsilons: Sequence[float], deltas: Sequence[float]) -> DominatingPair:
    """The tightest symmetric pair dominating every mechanism that is (eps_i, delta_i)-DP in
    both directions for all i (docs/math.md §7.1).

    Its profile in ``x = e^eps`` is the lower convex envelope of ``min_i g_i`` (``g_i`` the
    profile of the single guarantee i) through (0, 1), constant ``min_i delta_i`` beyond the
    largest ``e^eps_i``. At each grid point its delta is ``<= delta_i`` (equal when the points
    are in convex position, e.g. exact values), and it is never below the profile of a
    mechanism meeting the curve. Points with ``delta_i >= 1`` say nothing and are skipped.
    """
    grid = check_epsilon_grid("dominating_pair", epsilons)
    values = tuple(deltas)
    if len(values) != len(grid):
        raise ConfigurationError(
            f"dominating_pair.deltas has {len(values)} values; must have one per epsilon "
            f"({len(grid)})",
            parameter="deltas",
        )
    for value in values:
        check_range("dominating_pair", "deltas", value, low=0.0, high=1.0)
    guarantees = [(e, _exp_up(e), Fraction(float(d))) for e, d in zip(grid, values, strict=True)]
    kept = [(ex, d) for _, ex, d in guarantees if d < 1]
    if not kept:
        return DominatingPair(losses=(), masses=(), infinity_mass=1.0)
    # The kinks x = e^(+-eps_i), each labelled with its loss +-eps_i.
    labels = {Fraction(0): -math.inf}
    for eps, ex, d in guarantees:
        if d < 1:
            labels[ex], labels[1 / ex] = eps, -eps
    ex_floats = np.array([float(e) for e, _ in kept])
    d_floats = np.array([float(v) for _, v in kept])
    points = [(x, _lowest_profile(x, kept, ex_floats, d_floats)) for x in sorted(labels)]
    hull = _lower_hull(points)
    slopes = [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in itertools.pairwise(hull)]
    slopes.append(Fraction(0))  # flat beyond the last vertex
    losses, masses = [], []
    for k in range(1, len(hull)):
        x = hull[k][0]
        jump = slopes[k] - slopes[k - 1]  # >= 0: the envelope is convex
        if jump > 0:
            # The pair's profile has a kink of slope jump c at x = e^loss from mass c x there.
            losses.append(labels[x])
            masses.append(_round_down(jump * x))
    infinity = max(_up(1.0 - math.fsum(masses)), _up(float(hull[-1][1])))
    return DominatingPair(
        losses=tuple(losses), masses=tuple(masses), infinity_mass=min(infinity, 1.0)
    )


def _failure(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_range(type(instance).__name__, attribute.name, value, low=0.0, high=1.0)


@attrs.frozen
class CertifiedPLD:
    """A pessimistic dp_accounting PLD that holds except with ``failure_probability``.

    The delta it reports adds ``failure_probability`` (docs/math.md §7.1): the PLD dominates
    the mechanism unless the certificate failed, an event of probability at most beta over
    the accountant's randomness, independent of the data. Composing adds the failure
    probabilities (union bound). ``pld`` is the bare PLD for code that does its own folding.
    """

    pld: pld_lib.PrivacyLossDistribution
    failure_probability: float = attrs.field(default=0.0, validator=_failure)

    def compose(
        self, other: CertifiedPLD | pld_lib.PrivacyLossDistribution | dp_event.DpEvent
    ) -> CertifiedPLD:
        """The composition with another (certified) PLD of the same discretisation interval,
        or with a dp_accounting event (``GaussianDpEvent(2.0)``, ...), whose pessimistic PLD
        is built here at this PLD's interval by dp_accounting's ``PLDAccountant``.

        Raises ConfigurationError naming ``other`` for anything else (and for an event the
        PLD accountant does not support)."""
        if isinstance(other, dp_event.DpEvent):
            pld, beta = _event_pld(other, _interval(self.pld)), 0.0
        elif isinstance(other, CertifiedPLD):
            pld, beta = other.pld, other.failure_probability
        elif isinstance(other, pld_lib.PrivacyLossDistribution):
            pld, beta = other, 0.0
        else:
            raise ConfigurationError(
                f"CertifiedPLD.compose other = {other!r} is invalid: must be a CertifiedPLD, a "
                "dp_accounting PrivacyLossDistribution or a dp_accounting DpEvent",
                parameter="other",
            )
        try:
            composed = self.pld.compose(pld)
        except ValueError as exc:
            raise ConfigurationError(
                f"CertifiedPLD.compose other = {other!r} is invalid: {exc}", parameter="other"
            ) from None
        return CertifiedPLD(composed, min(self.failure_probability + beta, 1.0))

    def get_delta_for_epsilon(self, epsilon: float) -> float:
        """delta(eps) of the PLD plus the failure probability (at most 1)."""
        check_range("CertifiedPLD", "epsilon", epsilon, low=0.0)
        return min(float(self.pld.get_delta_for_epsilon(epsilon)) + self.failure_probability, 1.0)

    def get_epsilon_for_delta(self, delta: float) -> float:
        """The smallest eps with PLD delta(eps) + failure probability <= ``delta`` (inf when
        ``delta`` does not exceed the failure probability)."""
        check_range("CertifiedPLD", "delta", delta, low=0.0, high=1.0, low_open=True)
        rest = delta - self.failure_probability
        if rest <= 0:
            return math.inf
        return float(self.pld.get_epsilon_for_delta(rest))


def _interval(pld: pld_lib.PrivacyLossDistribution) -> float:
    """The PLD's value discretisation interval (dp_accounting keeps it on its PMFs)."""
    pmf = getattr(pld, "_pmf_remove", None)
    return float(getattr(pmf, "_discretization", DEFAULT_INTERVAL))


def _event_pld(event: dp_event.DpEvent, interval: float) -> pld_lib.PrivacyLossDistribution:
    """The pessimistic PLD dp_accounting's PLD accountant builds for ``event``."""
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    if not accountant.supports(event):
        raise ConfigurationError(
            f"CertifiedPLD.compose other = {event!r} is invalid: dp_accounting's PLD accountant "
            "does not support this event",
            parameter="other",
        )
    accountant.compose(event)
    pld: pld_lib.PrivacyLossDistribution = accountant._pld
    return pld
