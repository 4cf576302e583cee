"""Which escort serves a question: the order lam, its ``ln Z_lam`` and support bound.

docs/rdp-escort.md §8. The escort ``R_lam`` of order lam of a model's participation law
(:mod:`.escort_law`: b-min-sep BandMF, Poisson as b = 1, random-phase cyclic Poisson) has
normaliser ``Z_lam`` (one forward pass of the law), inflated by
:data:`INFLATE` so that every bound derived from it errs upward; the importance weight of a
draw is bounded by ``s_lam(eps)`` (:func:`~minsep.accountants.escort.log_support_bound`). The
order with the smallest bound needs the fewest samples (:func:`choose_setup`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from minsep.accountants import rdp_moments as moments
from minsep.accountants.escort import log_support_bound
from minsep.accountants.escort_law import EscortLaw
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo.bounds import base_delta

__all__ = [
    "DEFAULT_ORDERS",
    "INFLATE",
    "LOCATE_RATIO",
    "LOCATE_STATES",
    "EscortSetup",
    "EscortTarget",
    "best_setup",
    "choose_setup",
    "escort_base_delta",
    "escort_law",
    "escort_setups",
    "escort_target",
    "law_or_reason",
    "locate_setup",
    "support_scale",
]

#: Orders the automatic choice considers (those whose state array fits ``max_states``).
DEFAULT_ORDERS: tuple[int, ...] = (2, 3, 4, 5, 6, 8)
#: Relative inflation of ``ln Z`` and of ``ln(1/pi(empty))``: covers float64 rounding of the
#: forward pass (about n * 1e-16 relative), so W, s and the add threshold err upward.
INFLATE = 1e-10
#: ``ln Z_lam`` computed in this process, per (model, sigma, order, max_states): a forward pass
#: is deterministic, and a calibration asks for the same sigmas many times (route, locating
#: pilot, sweep plan). Entries hold the model (the key's id is only valid while it lives) and
#: the value, or None where the pass cannot run at that sigma.
_LOG_Z: dict[tuple[int, float, int, int], tuple[object, float | None]] = {}
#: The memo is emptied when it reaches this many entries.
_LOG_Z_SIZE = 4096
#: The locating pilot prefers the orders whose state array has at most this many entries (a
#: forward pass far cheaper than the largest orders': 9^5 against 9^6 at b = 8, about 0.2 s
#: against 4 s at n = 1024) ...
LOCATE_STATES = 1 << 17
#: ... while their best support bound is at most this multiple of the pilot's target (the
#: pilot's relative standard error is then at most sqrt(LOCATE_RATIO / draws)).
LOCATE_RATIO = 1000.0


@runtime_checkable
class EscortTarget(Protocol):
    """A loss model the escort can serve: its :class:`~.escort_law.EscortLaw` (b-min-sep
    BandMF with b >= bands, Poisson as b = 1, random-phase cyclic Poisson) and its ``ln u``."""

    def escort_law(self) -> EscortLaw: ...

    def log_ratio_at(
        self, outputs: Any, sigma: float, xp: Any, kernels: str | None = None
    ) -> Any: ...


def escort_target(owner: str, model: PrivacyLossModel) -> EscortTarget:
    if not isinstance(model, EscortTarget):
        raise ConfigurationError(
            f"{owner}.model = {type(model).__name__} is invalid: the escort proposal needs a "
            "loss model with escort_law() and log_ratio_at() (b-min-sep BandMF, Poisson, "
            "random-phase cyclic Poisson); use proposal 'plain'"
        )
    return model


def law_or_reason(model: PrivacyLossModel) -> EscortLaw | str:
    """The model's escort law, or why there is none: it has no ``escort_law()``, or that
    raises ConfigurationError (e.g. balls-in-bins with bands > T; its message is the reason)."""
    if not isinstance(model, EscortTarget):
        return f"{type(model).__name__} has no escort law"
    try:
        return model.escort_law()
    except ConfigurationError as exc:
        return str(exc)


def escort_law(owner: str, model: PrivacyLossModel) -> EscortLaw:
    """The participation law of ``model`` the escort samples (ConfigurationError naming
    ``owner`` when it has none)."""
    return escort_target(owner, model).escort_law()


@attrs.frozen
class EscortSetup:
    """One escort ``R_lam`` at one sigma: the order and ``ln Z_lam`` (inflated)."""

    sigma: float
    order: int
    log_z: float

    def log_support(self, epsilon: float) -> float:
        """``ln s_lam(eps)``: the pointwise bound of W (and the order-lam RDP delta)."""
        return log_support_bound(self.log_z, self.order, epsilon)

    def epsilon_at(self, log_bound: float) -> float:
        """The epsilon where ``ln s_lam(eps) = log_bound`` (never below 0)."""
        lam = self.order
        top = self.log_z + (lam - 1) * math.log(lam - 1) - lam * math.log(lam) - log_bound
        return max(top / (lam - 1), 0.0)


def escort_setups(
    model: PrivacyLossModel,
    sigma: float,
    orders: Sequence[int] = DEFAULT_ORDERS,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> list[EscortSetup]:
    """The affordable orders at ``sigma`` with their ``ln Z`` (one forward pass each).

    Orders whose state array exceeds ``max_states`` or whose pass would overflow at this sigma
    are skipped; ConfigurationError when none is left.
    """
    law = escort_law("escort_setups", model)
    out = []
    for lam in orders:
        if not law.affordable(int(lam), max_states):
            continue
        log_z = _log_moment(model, law, float(sigma), int(lam), max_states)
        if log_z is None:
            continue
        out.append(EscortSetup(float(sigma), int(lam), log_z + INFLATE * abs(log_z) + 1e-300))
    if not out:
        raise ConfigurationError(
            f"escort_setups.orders = {tuple(orders)!r} is invalid: no order fits max_states = "
            f"{max_states} ({law.budget_note}) at sigma {sigma:g}; use proposal 'plain'"
        )
    return out


def _log_moment(
    model: PrivacyLossModel, law: EscortLaw, sigma: float, lam: int, max_states: int
) -> float | None:
    """``law.log_moment`` (None where it raises ConfigurationError), memoised per process."""
    key = (id(model), sigma, lam, max_states)
    cached = _LOG_Z.get(key)
    if cached is not None and cached[0] is model:
        return cached[1]
    try:
        log_z: float | None = float(law.log_moment(sigma, lam, max_states))
    except ConfigurationError:
        log_z = None
    if len(_LOG_Z) >= _LOG_Z_SIZE:
        _LOG_Z.clear()
    _LOG_Z[key] = (model, log_z)
    return log_z


def locate_setup(
    model: PrivacyLossModel,
    sigma: float,
    epsilon: float,
    target: float,
    orders: Sequence[int],
    max_states: int,
) -> EscortSetup:
    """The escort of a locating pilot's step at ``sigma`` (a planning rule, no guarantee: the
    pilot only centres the sweep). Among the orders with at most :data:`LOCATE_STATES` states
    the smallest support bound (:func:`best_setup`), when it is at most :data:`LOCATE_RATIO`
    times ``target``; else among every order of ``orders``. The larger orders' passes are then
    only run where the cheap ones are too loose. Either search stops at an order whose bound is
    at most ``target`` (the step then passes without a draw, whichever order is returned).
    ConfigurationError when no order runs."""
    law = escort_law("locate_setup", model)
    cheap = [lam for lam in orders if law.affordable(int(lam), min(LOCATE_STATES, max_states))]
    enough = math.log(target)
    if cheap:
        try:
            setup = best_setup(model, sigma, epsilon, cheap, max_states, enough)
        except ConfigurationError:
            pass
        else:
            if setup.log_support(epsilon) <= math.log(LOCATE_RATIO * target):
                return setup
    return best_setup(model, sigma, epsilon, orders, max_states, enough)


def best_setup(
    model: PrivacyLossModel,
    sigma: float,
    epsilon: float,
    orders: Sequence[int],
    max_states: int = moments.DEFAULT_MAX_STATES,
    enough: float = -math.inf,
) -> EscortSetup:
    """:func:`choose_setup` over the affordable ``orders`` at ``sigma``, running only the
    forward passes it needs (docs/rdp-escort.md §8, cost): the orders ascending, stopping after
    the first whose bound is not below the best so far, or at one whose ``ln s_lam(eps) <=
    enough`` (the caller needs no smaller bound; that order is returned).

    The stop loses nothing: ``ln s_lam(eps) = ln Z_lam - (lam - 1) eps + (lam - 1) ln(lam - 1) -
    lam ln lam`` is convex in lam (``ln Z_lam = ln E_Q[u^lam]`` is the cumulant generating
    function of ``ln u``, and ``(lam - 1) ln(lam - 1) - lam ln lam`` has second derivative
    ``1/(lam - 1) - 1/lam > 0``), so once it rises from one order to the next it rises at every
    larger order (secant slopes of a convex function grow); the minimum is the one found, up to
    the ``INFLATE`` rounding of ``ln Z``. Orders whose pass cannot run are skipped.
    ConfigurationError (naming the orders) when none runs."""
    law = escort_law("best_setup", model)
    best: EscortSetup | None = None
    for lam in sorted(int(o) for o in orders):
        if not law.affordable(lam, max_states):
            continue
        log_z = _log_moment(model, law, float(sigma), lam, max_states)
        if log_z is None:
            continue
        setup = EscortSetup(float(sigma), lam, log_z + INFLATE * abs(log_z) + 1e-300)
        if best is not None and setup.log_support(epsilon) >= best.log_support(epsilon):
            break
        best = setup
        if setup.log_support(epsilon) <= enough:
            break
    if best is None:
        escort_setups(model, sigma, orders, max_states)  # raises, naming orders and sigma
        raise AssertionError("unreachable: escort_setups found an order best_setup did not")
    return best


def choose_setup(setups: Sequence[EscortSetup], epsilon: float) -> EscortSetup:
    """The order with the smallest support bound ``s_lam(eps)`` (fewest samples needed: the
    samples depend on the order only through ``s``); on a tie the smaller order (its forward
    pass and draws carry fewer states), whatever order ``setups`` lists."""
    return min(setups, key=lambda s: (s.log_support(epsilon), s.order))


def support_scale(log_scale: float, order: int, epsilon: float) -> float:
    """``e^log_scale``; ConfigurationError when no order helps (the bound is above 1)."""
    if log_scale > 0.0:
        raise ConfigurationError(
            f"EscortProposal.order = {order} is invalid here: its support bound "
            f"s_lam({epsilon:.4g}) = e^{log_scale:.4g} exceeds 1, so importance sampling from "
            "the escort cannot beat plain sampling (no affordable order helps); use proposal "
            "'plain' or raise max_states"
        )
    return math.exp(log_scale)


def escort_base_delta(
    samples: int, target: float, delta: float, scale: float, *, candidates: int = 1
) -> float:
    """``base_delta(samples, target)`` for the escort's normalised problem: it verifies the
    mean of its weights ``W / s`` (s the support bound) at ``target = delta / s``. Too few
    samples raise the same ConfigurationError, saying that the delta it names is ``delta / s``
    and not the question's (docs/rdp-escort.md §8)."""
    try:
        return base_delta(samples, target, candidates=candidates)
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"{exc} (the escort verifies the mean of its weights W/s, s = {scale:.3g} the "
            f"support bound, at delta/s = {target:.3g} for the question's delta = {delta:.3g})",
            parameter=exc.parameter,
        ) from None
