"""Exact accounting through dp_accounting's privacy loss distributions (docs/math.md §4, §6).

A scheme with an exact route answers :meth:`~minsep.framework.interfaces.SamplingScheme.dp_event`
with a dp_accounting event, e.g.

- Poisson DP-SGD: the n-fold composition of the Poisson-subsampled Gaussian at rate p0;
- cyclic Poisson BandMF: the ceil(n/b)-fold composition at rate q = b p0 (docs/math.md §4);
- truncated (cyclic) Poisson: ``TruncatedSubsampledGaussianDpEvent`` with the (group) dataset
  size (Ganesh 2025; docs/math.md §6).

:class:`PLDAccountant` composes that event with dp_accounting's PLD accountant under the
add-or-remove relation, which for these events is the zero-out pair (P, Q) of docs/math.md §1 in
both directions. The PLDs are pessimistic (``pessimistic_estimate=True``, dp_accounting's
default for every mechanism it builds): discretisation only ever rounds privacy losses up, so
the reported epsilon and delta are upper bounds, tight to about the discretisation interval.
Which schemes it accounts is decided by the scheme's hook alone: no dispatch on scheme types.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from minsep.accountants.pld_cost import PLDCost, estimate_cost
from minsep.framework.errors import (
    CalibrationError,
    ConfigurationError,
    MinsepError,
    NotAccountableError,
)
from minsep.framework.interfaces import (
    Accountant,
    AccountantKind,
    Question,
    SamplingScheme,
    Strategy,
)
from minsep.framework.registries import accountants
from minsep.framework.results import (
    EXACT,
    UPPER_BOUND,
    CalibrationResult,
    CurveResult,
    DeltaResult,
    EpsilonResult,
)
from minsep.framework.validation import check_range, number

if TYPE_CHECKING:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

__all__ = [
    "PLDAccountant",
    "check_delta",
    "check_epsilon",
    "check_sigma",
    "conservative_sigma",
]


def __getattr__(name: str) -> Any:
    """``NEIGHBOURING``: dp_accounting's ``ADD_OR_REMOVE_ONE``, the zero-out adjacency of
    docs/math.md §1 for Poisson-type events, both directions (resolved on first use, so that
    importing the accountants does not import dp_accounting)."""
    if name == "NEIGHBOURING":
        # lazy: dp_accounting imports scipy.stats (about a second)
        from dp_accounting import NeighboringRelation

        return NeighboringRelation.ADD_OR_REMOVE_ONE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Default PLD grid step. At the demo's questions (n = 1024, p0 = 1/256, delta = 1e-3,
#: epsilon ~ 2; DP-SGD and cyclic Poisson with 4-16 bands) it is within 0.005 % of the
#: epsilon at a 1e-5 grid (1e-3 was within 0.016 %) for about 1.8x the time of 1e-3.
DEFAULT_INTERVAL = 5e-4

#: The probe noise multiplier used to ask a scheme whether it has an exact event.
_PROBE_SIGMA = 1.0
#: Where :meth:`PLDAccountant.sigma_floor` searches, and calibration's default search range.
_FLOOR_RANGE = (1e-6, 1e6)
_SIGMA_MIN, _SIGMA_MAX = 1e-4, 1e5


def pld_method(scheme: SamplingScheme, strategy: Strategy) -> str:
    """``"exact"`` when the scheme's event is exact, else ``"upper bound"`` (e.g. the
    fixed-partition event of random-phase cyclic Poisson): a bound is called a bound."""
    return EXACT if scheme.dp_event_is_exact(strategy) else UPPER_BOUND


def check_sigma(owner: str, sigma: float) -> None:
    """Refuse a noise multiplier that is not a finite number > 0."""
    check_range(owner, "sigma", sigma, low=0.0, low_open=True)


def check_delta(owner: str, delta: float) -> None:
    """Refuse a delta outside (0, 1)."""
    check_range(owner, "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)


def check_epsilon(owner: str, epsilon: float) -> None:
    """Refuse an epsilon that is not a finite number >= 0."""
    check_range(owner, "epsilon", epsilon, low=0.0)


def conservative_sigma(
    epsilon_at: Callable[[float], float],
    target: float,
    *,
    rtol: float,
    guess: float = 1.0,
    sigma_min: float = 1e-4,
    sigma_max: float = 1e5,
) -> tuple[float, float, tuple[float, ...]]:
    """The smallest sigma (to a factor ``1 + rtol``) with ``epsilon_at(sigma) <= target``.

    Brackets geometrically from ``guess``, then shrinks the bracket ``[lo, hi]`` (``epsilon(lo)
    > target >= epsilon(hi)``) until ``hi / lo <= 1 + rtol`` by the Illinois method on log
    epsilon against log sigma, with a bisection step whenever a step fails to halve the
    bracket. The returned sigma is always one at which
    ``epsilon_at`` was *evaluated* and found ``<= target``, so the answer is conservative
    whatever the numerical behaviour of ``epsilon_at``; when epsilon decreases in sigma (it does
    for every mechanism here), ``sigma / (1 + rtol)`` misses the target.

    Returns:
        ``(sigma, epsilon_at(sigma), sigmas examined in order)``.

    Raises:
        CalibrationError: no sigma up to ``sigma_max`` meets the target.
    """
    examined: list[float] = []

    def eps(sigma: float) -> float:
        examined.append(sigma)
        value = float(epsilon_at(sigma))
        return value if not math.isnan(value) else math.inf

    hi = min(max(guess, sigma_min), sigma_max)
    eps_hi = eps(hi)
    if eps_hi <= target:
        # Walk down until the target is missed (or sigma_min is reached).
        while True:
            if hi <= sigma_min:
                return hi, eps_hi, tuple(examined)
            lo = max(hi / 2.0, sigma_min)
            eps_lo = eps(lo)
            if eps_lo > target:
                break
            hi, eps_hi = lo, eps_lo
    else:
        while eps_hi > target:
            if hi >= sigma_max:
                raise CalibrationError(
                    f"no noise multiplier up to {sigma_max:g} reaches epsilon <= {target:g} "
                    f"(epsilon at sigma = {hi:g} is {eps_hi:g})"
                )
            lo, eps_lo = hi, eps_hi
            hi = min(hi * 2.0, sigma_max)
            eps_hi = eps(hi)

    # Illinois (regula falsi) on g = log(epsilon / target) against log sigma; g > 0 at lo.
    def g(value: float) -> float:
        return math.log(value / target) if value > 0.0 and target > 0.0 else -math.inf

    g_lo, g_hi = g(eps_lo), g(eps_hi)
    kept = 0  # +1: hi moved last time, -1: lo moved last time
    bisect = False
    while hi / lo > 1.0 + rtol:
        x_lo, x_hi = math.log(lo), math.log(hi)
        width = x_hi - x_lo
        x = 0.5 * (x_lo + x_hi)
        if not bisect and math.isfinite(g_lo) and math.isfinite(g_hi):
            x = (x_lo * g_hi - x_hi * g_lo) / (g_hi - g_lo)
            x = min(max(x, x_lo + 0.01 * width), x_hi - 0.01 * width)
        mid = math.exp(x)
        eps_mid = eps(mid)
        if eps_mid <= target:
            hi, eps_hi, g_hi = mid, eps_mid, g(eps_mid)
            if kept == 1:
                g_lo /= 2.0
            kept = 1
        else:
            lo, eps_lo, g_lo = mid, eps_mid, g(eps_mid)
            if kept == -1:
                g_hi /= 2.0
            kept = -1
        bisect = math.log(hi / lo) > width / 2.0 and not bisect
    return hi, eps_hi, tuple(examined)


@accountants.register("pld")
@attrs.frozen
class PLDAccountant(Accountant):
    """Exact (pessimistic PLD) accounting of schemes with a dp_accounting event.

    Attributes:
        value_discretization_interval: PLD grid step of the privacy loss; results are upper
            bounds that tighten as it shrinks (cost grows about linearly in 1/interval).
            Default :data:`DEFAULT_INTERVAL`.
        sigma_rtol: calibration returns a sigma within a factor ``1 + sigma_rtol`` of the
            smallest sigma meeting the target, never below it.
        max_memory_gib: budget for one PLD. Its cost grows like ``1/sigma^2``; a query whose
            estimated cost (:mod:`minsep.accountants.pld_cost`, decided before building the
            PLD) exceeds the budget is refused with the estimate and the smallest sigma within
            budget (the sigma floor), which also bounds calibration's search.
    """

    kind: ClassVar[AccountantKind] = AccountantKind.EXACT
    sound: ClassVar[bool] = True
    command_line_options: ClassVar[Mapping[str, str] | None] = {
        "value_discretization_interval": "pld_interval",
        "max_memory_gib": "pld_memory_gib",
    }

    value_discretization_interval: float = attrs.field(
        default=DEFAULT_INTERVAL, validator=number(low=0.0, high=0.1, low_open=True)
    )
    sigma_rtol: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.5, low_open=True)
    )
    max_memory_gib: float = attrs.field(
        default=1.0, validator=number(low=0.0, high=1024.0, low_open=True)
    )

    @classmethod
    def example(cls) -> PLDAccountant:
        return cls()

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"value_discretization_interval": 0.0}, "value_discretization_interval"),
            ({"value_discretization_interval": math.nan}, "value_discretization_interval"),
            ({"sigma_rtol": -1e-3}, "sigma_rtol"),
            ({"sigma_rtol": 1.0}, "sigma_rtol"),
            ({"max_memory_gib": 0.0}, "max_memory_gib"),
        ]

    # --- support -------------------------------------------------------------------------

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """The scheme's NotAccountableError message when it has no exact event, else None."""
        try:
            event = scheme.dp_event(strategy, _PROBE_SIGMA)
        except NotAccountableError as exc:
            return str(exc)
        if not self._new().supports(event):
            return f"dp_accounting's PLD accountant cannot compose the event {event!r}"
        return None

    # --- queries -------------------------------------------------------------------------

    def event(self, scheme: SamplingScheme, strategy: Strategy, sigma: float) -> dp_event.DpEvent:
        """The scheme's exact dp_accounting event at ``sigma`` (refused over the cost budget)."""
        self.require(scheme, strategy)
        check_sigma(type(self).__name__, sigma)
        return self._affordable_event(scheme, strategy, sigma)

    def _affordable_event(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float
    ) -> dp_event.DpEvent:
        """The event at ``sigma``, refused (ConfigurationError) when its PLD is over budget."""
        event = scheme.dp_event(strategy, sigma)
        cost = estimate_cost(event, self.value_discretization_interval)
        if cost is not None and cost.bytes > self.max_memory_gib * 2**30:
            floor = self.sigma_floor(scheme, strategy)
            raise ConfigurationError(
                f"{type(self).__name__}.sigma = {sigma!r} is invalid for scheme {scheme.name!r}: "
                f"its PLD would take {cost.describe()} (grid step "
                f"{self.value_discretization_interval:g}; the cost grows like 1/sigma^2), over "
                f"max_memory_gib = {self.max_memory_gib:g}. The sigma floor within budget is "
                f"about {floor:.4g}: use sigma >= {floor:.4g}, a coarser "
                "value_discretization_interval, a larger max_memory_gib, or another accountant "
                "('monte_carlo', or 'gaussian': unamplified)"
            )
        return event

    def cost(self, scheme: SamplingScheme, strategy: Strategy, sigma: float) -> PLDCost | None:
        """The estimated cost of the PLD at ``sigma`` (None when the event is not estimated)."""
        self.require(scheme, strategy)
        check_sigma(type(self).__name__, sigma)
        return estimate_cost(scheme.dp_event(strategy, sigma), self.value_discretization_interval)

    def sigma_floor(self, scheme: SamplingScheme, strategy: Strategy) -> float:
        """The smallest sigma (to 0.1 %) whose estimated PLD cost fits ``max_memory_gib``.

        Bisection on log sigma over the cheap cost estimate; no PLD is built. 0 when the
        scheme's event is not estimated.
        """
        budget = self.max_memory_gib * 2**30

        def fits(sigma: float) -> bool:
            cost = estimate_cost(
                scheme.dp_event(strategy, sigma), self.value_discretization_interval
            )
            return cost is None or cost.bytes <= budget

        if estimate_cost(scheme.dp_event(strategy, _PROBE_SIGMA), 1.0) is None:
            return 0.0
        lo, hi = _FLOOR_RANGE
        if fits(lo):
            return lo
        if not fits(hi):  # pragma: no cover - a PLD at sigma = 1e6 is a few points
            return hi
        while hi / lo > 1.001:
            mid = math.sqrt(lo * hi)
            if fits(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def _epsilon(self, question: Question) -> EpsilonResult:
        """Exact epsilon(delta) at ``sigma`` (an upper bound to the PLD grid)."""
        q = question
        event = self._affordable_event(q.scheme, q.strategy, q.sigma)
        return q.bound_epsilon(self._epsilon_of(event, q.delta), pld_method(q.scheme, q.strategy))

    def _delta(self, question: Question) -> DeltaResult:
        """Exact delta(epsilon) at ``sigma``, max over both directions (an upper bound)."""
        q = question
        accountant = self._new()
        accountant.compose(self._affordable_event(q.scheme, q.strategy, q.sigma))
        delta = min(max(float(accountant.get_delta(q.epsilon)), 0.0), 1.0)
        return q.bound_delta(delta, pld_method(q.scheme, q.strategy))

    def _delta_curve(
        self, question: Question, epsilons: tuple[float, ...], failure_probability: float
    ) -> CurveResult:
        """Exact delta at every grid epsilon from one composed PLD (upper bounds that hold
        together: nothing random)."""
        q = question
        accountant = self._new()
        accountant.compose(self._affordable_event(q.scheme, q.strategy, q.sigma))
        deltas = tuple(min(max(float(accountant.get_delta(e)), 0.0), 1.0) for e in epsilons)
        return CurveResult(
            **q.provenance(pld_method(q.scheme, q.strategy)),
            epsilons=epsilons,
            delta=deltas,
            certified_delta=deltas,
            sigma=q.sigma,
        )

    def _calibrate(self, question: Question) -> CalibrationResult:
        """The smallest sigma (within ``sigma_rtol``) whose exact epsilon(delta) <= ``epsilon``.

        Conservative: the returned sigma was evaluated and meets the target.
        """
        q = question

        def epsilon_at(sigma: float) -> float:
            return self._epsilon_of(q.scheme.dp_event(q.strategy, sigma), q.delta)

        floor = self.sigma_floor(q.scheme, q.strategy)
        shortcut = self._floor_meets_target(q, floor)
        if shortcut is not None:
            return shortcut
        sigma, achieved, examined = conservative_sigma(
            epsilon_at,
            q.epsilon,
            rtol=self.sigma_rtol,
            sigma_min=max(floor, _SIGMA_MIN),
            sigma_max=max(_SIGMA_MAX, 2.0 * floor),
        )
        notes: tuple[str, ...] = (f"exact epsilon at the returned sigma: {achieved!r}",)
        if floor >= _SIGMA_MIN and sigma <= floor * 1.001:
            notes += (
                f"the PLD cost floor sigma = {floor:.4g} (max_memory_gib = "
                f"{self.max_memory_gib:g}) was reached and meets the target: smaller sigmas "
                "were not examined, so the returned sigma is sound but may not be the smallest",
            )
        return CalibrationResult(
            **q.provenance(pld_method(q.scheme, q.strategy)),
            notes=notes,
            sigma=sigma,
            epsilon=q.epsilon,
            delta=q.delta,
            certified=True,
            candidates=tuple(sorted(examined, reverse=True)),
        )

    def _floor_meets_target(self, q: Question, floor: float) -> CalibrationResult | None:
        """The cost floor as the answer, without building any PLD, when the unamplified bound
        already meets the target there; else None.

        Near the floor a PLD costs up to ``max_memory_gib`` and tens of seconds, and a loose
        target (epsilon = 1e6) would walk down to it through ever costlier PLDs. The
        unamplified Gaussian epsilon is an upper bound on the exact one (docs/math.md §1: it
        ignores the amplification), so ``bound <= target`` at the floor makes the floor a
        sound (if not the smallest) answer.
        """
        if floor < _SIGMA_MIN:
            return None
        try:
            bound = accountants.get("gaussian")().epsilon(q.scheme, q.strategy, floor, q.delta)
        except MinsepError:
            return None
        if not bound.certified_epsilon <= q.epsilon:
            return None
        return CalibrationResult(
            **q.provenance(pld_method(q.scheme, q.strategy)),
            notes=(
                f"the PLD cost floor sigma = {floor:.4g} (max_memory_gib = "
                f"{self.max_memory_gib:g}) meets the target: the unamplified bound there is "
                f"epsilon <= {bound.certified_epsilon!r}, so no PLD was built; smaller sigmas "
                "were not examined, so the returned sigma is sound but may not be the smallest",
            ),
            sigma=floor,
            epsilon=q.epsilon,
            delta=q.delta,
            certified=True,
            candidates=(floor,),
        )

    # --- dp_accounting -------------------------------------------------------------------

    def _new(self) -> pld_privacy_accountant.PLDAccountant:
        # lazy: dp_accounting imports scipy.stats (about a second)
        from dp_accounting import NeighboringRelation
        from dp_accounting.pld import pld_privacy_accountant

        return pld_privacy_accountant.PLDAccountant(
            neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=self.value_discretization_interval,
        )

    def _epsilon_of(self, event: dp_event.DpEvent, delta: float) -> float:
        accountant = self._new()
        accountant.compose(event)
        return max(float(accountant.get_epsilon(delta)), 0.0)
