"""Exact integer-order Renyi accounting of b-min-sep and random-phase cyclic BandMF.

For a scheme whose sensitive unit follows a b-min-sep participation chain
(:meth:`~minsep.framework.interfaces.SamplingScheme.participation_chain`: b-min-sep cold or
warm, Poisson as b = 1; docs/rdp-escort.md §2-§3) or a uniform phase mixture
(:meth:`~minsep.framework.interfaces.SamplingScheme.phase_mixture`: random-phase cyclic Poisson;
§10), and a strategy with ``bands <= b``, the law's forward pass
(:mod:`~minsep.accountants.moment_laws`) gives ``D_lam(P||Q)`` exactly at integer orders
``lam`` whose state array fits the memory budget.

Both neighbouring directions are bounded (docs/rdp-escort.md §5, docs/math.md §10):

- remove (P against Q): the optimal single-order conversion of Canonne, Kamath & Steinke
  (2020, Prop. 12) minimised over the orders, with the order-free bound ``delta <= sqrt(1 -
  e^{-D})`` (:mod:`~minsep.accountants.rdp_conversion`: the formulas of dp_accounting's
  ``compute_epsilon`` / ``compute_delta``, without importing it);
- add (Q against P): for b = 1 with one band (DP-SGD) the run is a product of sampled Gaussians
  and Mironov, Talwar & Zhang (2019, "Renyi DP of the sampled Gaussian
  mechanism") give ``D_lam(Q||P) <= D_lam(P||Q)`` step by step,
  so the remove bound covers it (as in dp_accounting). Otherwise the smallest of: the
  Chernoff bound ``c_kappa e^{-kappa eps} E_Q[U^-kappa]`` with ``E_Q[U^-kappa] <= h(p)^n``
  (docs/math.md §10; per phase, ``h(q)^ceil(n/b)``, for random phase: docs/rdp-escort.md §10;
  0 beyond ``ln(1 / pi(empty))`` since ``P >= pi(empty) Q``) and the
  symmetric total-variation bound ``sqrt(1 - e^{-D_lam(P||Q)})``.

Both directions are also at most the unamplified Gaussian mechanism's delta (joint convexity of
the hockey-stick divergence over the patterns, docs/math.md §10), so epsilon never exceeds the
``gaussian`` accountant's. The reported epsilon and delta are the larger of the two directions:
upper bounds, with no failure probability, loose by the RDP conversion (and, when it binds, by
the add bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.accountants import rdp_conversion
from minsep.accountants import rdp_moments as moments
from minsep.accountants.add_bound import AddDirectionBound, ChernoffAddBound
from minsep.accountants.gaussian import GaussianAccountant, gaussian_delta, smallest_epsilon
from minsep.accountants.moment_laws import MomentLaw, moment_law, moments_of
from minsep.accountants.pld import check_sigma, conservative_sigma
from minsep.accountants.truncation_route import reduced_base, reducing
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import (
    Accountant,
    AccountantKind,
    Question,
    SamplingScheme,
    Strategy,
)
from minsep.framework.participation import ParticipationChain
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult
from minsep.framework.validation import fail, integer, number

__all__ = ["RdpAccountant", "RenyiBound"]

#: Relative margin added to ln Z / (lam - 1) and to -ln pi(empty): covers the float64 rounding of
#: the forward pass (about n * 1e-16 relative) so that rounding never lowers a bound.
_ROUNDING = 1e-10


def _orders(value: Any) -> Any:
    if value is None or isinstance(value, str | bytes):
        return value
    try:
        return tuple(value)
    except TypeError:
        return value


def _integer_orders(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    ok = (
        isinstance(value, tuple)
        and len(value) > 0
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
        and all(int(v) >= 2 for v in value)
    )
    if not ok:
        raise fail(
            instance, attribute.name, value, "None or a non-empty list of integer orders >= 2"
        )


@attrs.frozen
class RenyiBound:
    """Renyi divergences of one (scheme, strategy, sigma) and the add-direction inputs.

    Attributes:
        orders: the integer orders evaluated.
        rdp: ``D_lam(P||Q)`` per order (exact, or the convexity bound where flagged).
        exact: per order, False where sigma was too small for the float64 forward pass and
            ``lam S^2 / (2 sigma^2)`` (S the strategy's sensitivity) was used instead.
        add_covered: True when ``D_lam(Q||P) <= D_lam(P||Q)`` is a theorem (b = 1, one band).
        log_no_participation: ``ln pi(empty)`` of the pattern law.
        add: the Chernoff bound of the add direction (docs/math.md §10), or None.
        gaussian_noise: ``sigma / S``, S the unamplified sensitivity: both directions' delta is
            at most the Gaussian mechanism's at this noise multiplier (inf: no such cap).
    """

    orders: tuple[int, ...]
    rdp: tuple[float, ...]
    exact: tuple[bool, ...]
    add_covered: bool
    log_no_participation: float
    add: ChernoffAddBound | None = None
    gaussian_noise: float = math.inf

    def remove_epsilon(self, delta: float) -> tuple[float, int]:
        """Optimal-conversion epsilon of the remove direction and the order attaining it."""
        eps, order = rdp_conversion.epsilon_of(self.orders, self.rdp, delta)
        return max(eps, 0.0), int(order)

    def remove_delta(self, epsilon: float) -> tuple[float, int]:
        """Optimal-conversion delta of the remove direction and the order attaining it."""
        value, order = rdp_conversion.delta_of(self.orders, self.rdp, epsilon)
        return min(max(value, 0.0), 1.0), int(order)

    def _tv_bound(self) -> float:
        """``sqrt(1 - exp(-min D))``: bounds the total variation (Bretagnolle-Huber)."""
        return math.sqrt(-math.expm1(-min(self.rdp)))

    def add_epsilon(self, delta: float) -> float:
        """An epsilon at which the add-direction bound is <= delta (the smallest of its
        routes: empty pattern, Chernoff of docs/math.md §10, total variation)."""
        if self.add_covered or self._tv_bound() <= delta:
            return 0.0
        value = max(0.0, math.log1p(-delta) - self.log_no_participation)
        if self.add is not None:
            value = min(value, self.add.epsilon(delta))
        return value

    def add_delta(self, epsilon: float) -> float:
        """``min((1 - e^eps pi(empty))_+, Chernoff (§10), sqrt(1 - e^{-D}))`` (0 when covered
        by the remove direction)."""
        if self.add_covered:
            return 0.0
        if math.isinf(self.log_no_participation):
            return self._tv_bound()
        hockey = max(0.0, -math.expm1(epsilon + self.log_no_participation))
        if self.add is not None:
            hockey = min(hockey, self.add.delta(epsilon))
        return min(hockey, self._tv_bound())

    def gaussian_epsilon(self, delta: float) -> float:
        """The unamplified Gaussian mechanism's epsilon(delta) (inf without a cap)."""
        if math.isinf(self.gaussian_noise):
            return math.inf
        return smallest_epsilon(self.gaussian_noise, delta)

    def gaussian_delta(self, epsilon: float) -> float:
        """The unamplified Gaussian mechanism's delta(epsilon) (1 without a cap)."""
        if math.isinf(self.gaussian_noise):
            return 1.0
        return gaussian_delta(self.gaussian_noise, epsilon)


@accountants.register("rdp")
@attrs.frozen
class RdpAccountant(Accountant):
    """Exact integer-order RDP of b-min-sep / Poisson, converted optimally to (eps, delta).

    Attributes:
        orders: the integer orders >= 2 to evaluate, or None (default): every order
            ``2..max_order`` whose state array fits ``max_states`` while the total work stays
            within ``max_work``. An explicit order whose state array does not fit raises
            ConfigurationError when the scheme is known.
        max_order: largest order tried automatically.
        max_states: memory budget: entries of one forward pass's message (b-min-sep: the
            ``C(b + lam - 1, lam)`` multisets of docs/rdp-escort.md §3.1).
        max_work: time budget of the automatic orders (element operations of all passes).
        sigma_rtol: calibration returns a sigma within ``1 + sigma_rtol`` of the smallest
            sigma meeting the target, never below it.
    """

    kind: ClassVar[AccountantKind] = AccountantKind.BOUND
    sound: ClassVar[bool] = True
    #: Amplified, so tighter than the unamplified Gaussian bound: tried before it.
    rank: ClassVar[int] = 10
    #: A truncated scheme is answered only through the reduction (docs/math.md §6.2).
    requires_reduction: ClassVar[bool] = True
    command_line_options: ClassVar[Mapping[str, str] | None] = {}

    orders: tuple[int, ...] | None = attrs.field(
        default=None, converter=_orders, validator=_integer_orders
    )
    max_order: int = attrs.field(default=64, validator=integer(low=2, high=4096))
    max_states: int = attrs.field(default=moments.DEFAULT_MAX_STATES, validator=integer(low=1))
    max_work: int = attrs.field(default=2**25, validator=integer(low=1))
    sigma_rtol: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.5, low_open=True)
    )

    @classmethod
    def example(cls) -> RdpAccountant:
        return cls()

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"orders": (2, 2.5)}, "orders"),
            ({"orders": (1,)}, "orders"),
            ({"orders": ()}, "orders"),
            ({"max_order": 1}, "max_order"),
            ({"max_states": 0}, "max_states"),
            ({"max_work": 0}, "max_work"),
            ({"sigma_rtol": 0.0}, "sigma_rtol"),
        ]

    # --- support -------------------------------------------------------------------------

    def orders_for(self, law: ParticipationChain | PhaseMixture) -> tuple[int, ...]:
        """The orders evaluated for ``law`` (explicit ones are checked against the budget)."""
        return self._orders(moments_of(law))

    def _orders(self, law: MomentLaw) -> tuple[int, ...]:
        b = law.min_sep
        if self.orders is not None:
            for order in self.orders:
                states = law.stored_states(int(order))
                if states > self.max_states:
                    raise ConfigurationError(
                        f"RdpAccountant.orders = {self.orders!r} is invalid for min_sep = {b}: "
                        f"order {order} needs {law.states_formula} = {states} states, above "
                        f"max_states = {self.max_states}"
                    )
            return tuple(sorted({int(o) for o in self.orders}))
        chosen: list[int] = []
        spent = 0
        for order in range(2, self.max_order + 1):
            cost = law.work(order)
            if law.stored_states(order) > self.max_states or spent + cost > self.max_work:
                break
            chosen.append(order)
            spent += cost
        return tuple(chosen)

    def check_configuration(self, scheme: SamplingScheme, strategy: Strategy) -> None:
        """Explicit ``orders`` must fit ``max_states`` for the scheme's min-sep."""
        law = moment_law(scheme)
        if law is not None and self.orders is not None:
            self._orders(law)

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """Declines schemes without a b-min-sep chain or a phase mixture, ``bands > b`` and
        too large state spaces; a truncated scheme is judged by its untruncated base (answered
        through the reduction of docs/math.md §6.2 where truncation is rare)."""
        scheme = reduced_base(scheme, strategy)
        law = moment_law(scheme)
        if law is None:
            return (
                f"scheme {scheme.name!r} has no b-min-sep participation chain and no random-phase "
                "mixture (exact Renyi moments need one; docs/rdp-escort.md §2, §10)"
            )
        if not strategy.is_banded:
            return str(strategy.not_banded_error("number of bands"))
        if strategy.bands > law.min_sep:
            return (
                f"the strategy has {strategy.bands} bands but min_sep = {law.min_sep}: exact "
                "Renyi moments need bands <= min_sep"
            )
        b = law.min_sep
        try:
            orders = self._orders(law)
        except ConfigurationError as exc:
            return str(exc)
        if not orders:
            return (
                f"even order 2 is unaffordable at min_sep = {b}: "
                f"{law.states_formula.replace('order', '2')} = "
                f"{law.stored_states(2)} states (max_states = {self.max_states}), "
                f"{law.work(2)} operations (max_work = {self.max_work})"
            )
        return None

    # --- Renyi divergences ---------------------------------------------------------------

    def renyi(self, scheme: SamplingScheme, strategy: Strategy, sigma: float) -> RenyiBound:
        """``D_lam(P||Q)`` at every affordable order, and what the add direction needs.

        Raises ConfigurationError when explicit ``orders`` do not fit ``max_states`` for this
        scheme, NotAccountableError when the pair is not supported at all.
        """
        law = moment_law(scheme)
        if law is not None and self.orders is not None:
            self._orders(law)  # explicit orders: a configuration error, not a decline
        self.require(scheme, strategy)
        check_sigma(type(self).__name__, sigma)
        assert law is not None  # checked by require
        coefficients = np.asarray(strategy.coefficients, dtype=np.float64)
        products = moments.ColumnProducts(coefficients, law.n_steps)
        orders = self._orders(law)
        values: list[float] = []
        exact: list[bool] = []
        squared_sensitivity: float | None = None
        for order in orders:
            fits = law.fits(order, sigma, products)
            if fits:
                log_z = law.log_moment(coefficients, sigma, order, self.max_states)
                values.append(max(log_z / (order - 1), 0.0) * (1.0 + _ROUNDING))
            else:
                # Convexity of u -> u^lam: Z <= max_x exp(lam (lam - 1) ||Cx||^2 / (2 sigma^2)).
                if squared_sensitivity is None:
                    squared_sensitivity = (
                        float(
                            strategy.sensitivity(
                                law.n_steps, law.min_sep, scheme.max_participations
                            )
                        )
                        ** 2
                    )
                values.append(order * squared_sensitivity / (2.0 * sigma * sigma))
            exact.append(fits)
        covered = law.add_covered(strategy)
        sensitivity = GaussianAccountant().sensitivity(scheme, strategy)
        return RenyiBound(
            orders=orders,
            rdp=tuple(values),
            exact=tuple(exact),
            add_covered=covered,
            log_no_participation=law.log_no_participation() * (1.0 + _ROUNDING),
            add=None if covered else law.add_bound(scheme, strategy, sigma),
            gaussian_noise=sigma / sensitivity,
        )

    # --- queries -------------------------------------------------------------------------

    @reducing
    def _epsilon(self, question: Question) -> EpsilonResult:
        """epsilon(delta) at ``sigma``: the larger of the two directions' bounds."""
        q = question
        bound = self.renyi(q.scheme, q.strategy, q.sigma)
        value, notes = self._epsilon_of(bound, q.delta)
        return q.bound_epsilon(value, "rdp", notes)

    @reducing
    def _delta(self, question: Question) -> DeltaResult:
        """delta(epsilon) at ``sigma``: the larger of the two directions' bounds."""
        q = question
        epsilon, sigma = q.epsilon, q.sigma
        bound = self.renyi(q.scheme, q.strategy, sigma)
        remove, order = bound.remove_delta(epsilon)
        add = bound.add_delta(epsilon)
        gaussian = bound.gaussian_delta(epsilon)
        value = min(max(remove, add), gaussian)
        notes = (
            *self._notes(bound),
            f"remove-direction delta {remove!r} (order {order}), add-direction {add!r}, "
            f"unamplified Gaussian {gaussian!r}",
        )
        return q.bound_delta(value, "rdp", notes)

    @reducing
    def _calibrate(self, question: Question) -> CalibrationResult:
        """The smallest sigma (within ``sigma_rtol``) whose RDP epsilon(delta) <= ``epsilon``.

        Conservative: the returned sigma was evaluated and meets the target.
        """
        scheme, strategy = question.scheme, question.strategy
        epsilon, delta = question.epsilon, question.delta

        def epsilon_at(sigma: float) -> float:
            return self._epsilon_of(self.renyi(scheme, strategy, sigma), delta)[0]

        law = moment_law(scheme)
        assert law is not None  # checked by require
        orders = self._orders(law)
        floor = min(
            math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1) for a in orders
        )
        reach = (
            f"with orders {orders[0]}..{orders[-1]} the RDP conversion alone costs epsilon >= "
            f"{floor:.6g} at delta = {delta:g} whatever sigma (until D_lam < delta^2); higher "
            f"orders need more than max_states = {self.max_states} states at min_sep = "
            f"{law.min_sep}"
        )
        if epsilon < floor:  # only the unamplified Gaussian cap of epsilon_at reaches it
            gaussian = GaussianAccountant().calibrate(
                scheme, strategy, epsilon=epsilon, delta=delta
            )
            achieved = epsilon_at(gaussian.sigma)
            if not achieved <= epsilon:  # the cap is part of epsilon_at: never expected
                raise CalibrationError(
                    f"target epsilon {epsilon:g} is below what the rdp accountant can reach: "
                    f"{reach}; the unamplified Gaussian's sigma {gaussian.sigma:.6g} gives "
                    f"{achieved!r}"
                )
            return CalibrationResult(
                **question.provenance("rdp"),
                notes=(
                    f"the RDP conversion cannot reach epsilon {epsilon:g} ({reach}); the rdp "
                    "accountant's epsilon is also capped by the unamplified Gaussian mechanism's, "
                    f"which reaches it at this sigma (epsilon {achieved!r}); an exact or Monte "
                    "Carlo accountant may need less",
                ),
                sigma=gaussian.sigma,
                epsilon=epsilon,
                delta=delta,
                certified=True,
                candidates=(gaussian.sigma,),
            )
        try:
            sigma, achieved, examined = conservative_sigma(
                epsilon_at, epsilon, rtol=self.sigma_rtol
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{exc}. {reach[0].upper()}{reach[1:]}") from exc
        return CalibrationResult(
            **question.provenance("rdp"),
            notes=(f"RDP epsilon at the returned sigma: {achieved!r}",),
            sigma=sigma,
            epsilon=epsilon,
            delta=delta,
            certified=True,
            candidates=tuple(sorted(examined, reverse=True)),
        )

    # --- helpers -------------------------------------------------------------------------

    def _epsilon_of(self, bound: RenyiBound, delta: float) -> tuple[float, tuple[str, ...]]:
        remove, order = bound.remove_epsilon(delta)
        add = bound.add_epsilon(delta)
        gaussian = bound.gaussian_epsilon(delta)
        notes = (
            *self._notes(bound),
            f"remove-direction epsilon {remove!r} (order {order}), add-direction {add!r}, "
            f"unamplified Gaussian {gaussian!r}",
        )
        return min(max(remove, add), gaussian), notes

    @staticmethod
    def _notes(bound: RenyiBound) -> tuple[str, ...]:
        orders = f"{bound.orders[0]}..{bound.orders[-1]}" if bound.orders else "none"
        notes = [f"integer Renyi orders {orders}"]
        if not all(bound.exact):
            rough = [o for o, e in zip(bound.orders, bound.exact, strict=True) if not e]
            notes.append(f"orders {rough} use the convexity bound (sigma too small for float64)")
        if bound.add_covered:
            notes.append("add direction covered by Mironov, Talwar & Zhang 2019 (b = 1, C = I)")
        else:
            chernoff = ""
            if isinstance(bound.add, AddDirectionBound):
                chernoff = (
                    ", the Chernoff bound of docs/math.md §10 (one-band noise "
                    f"{bound.add.noise:.6g})"
                )
            elif bound.add is not None:
                chernoff = ", the Chernoff bound of docs/math.md §10"
            notes.append(
                "add direction bounded by P >= pi(empty) Q with ln pi(empty) = "
                f"{bound.log_no_participation!r}{chernoff} and the total-variation bound"
            )
        return tuple(notes)
