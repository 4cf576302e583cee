"""Unamplified accounting: BandMF as one Gaussian mechanism (docs/math.md §4, last item).

Ignoring the randomness of sampling, every participation pattern a scheme can produce has gaps
``>= scheme.min_separation`` and at most ``scheme.max_participations`` entries, so
``y = C x + sigma z`` is dominated by a Gaussian mechanism with l2 sensitivity

    S = max_pi ||sum_{j in pi} C[:, j]||_2        (strategy.sensitivity),

times ``k = scheme.max_step_contribution``, the most one participation moves one step's
clipped sum under zero-out adjacency (k_u examples of one user for multi-attribution; 2x the
base's under truncation, where a dropped example may take the freed slot), i.e. noise
multiplier ``sigma / (k S)`` at unit sensitivity. Its privacy profile is the analytic
Gaussian mechanism of Balle & Wang (2018, Thm. 8):

    delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s),    s = sigma / (k S),

exact for both neighbouring directions (the Gaussian pair is symmetric). It is evaluated in
log space (:func:`log_gaussian_delta`) so that it never rounds a positive delta to 0, and
calibration and epsilon queries verify their answers with that same function. Every scheme
exposes ``min_separation``, ``max_participations`` and ``max_step_contribution``, so this
accountant accounts every scheme: it is the universal (loose but sound) fallback.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import CalibrationError
from minsep.framework.interfaces import (
    Accountant,
    AccountantKind,
    Question,
    SamplingScheme,
    Strategy,
)
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult
from minsep.framework.validation import check_range

__all__ = [
    "GaussianAccountant",
    "gaussian_delta",
    "log_gaussian_delta",
    "smallest_epsilon",
    "unit_noise_multiplier",
]

#: Upward nudges tried before giving up on a conservative answer (each doubles the step).
_NUDGES = 80
#: Relative width of the bracket at which the noise-multiplier bisection stops.
_SIGMA_RTOL = 1e-13
#: The unit-sensitivity noise multipliers calibration searches (beyond them: an error).
_UNIT_SIGMA_RANGE = (1e-300, 1e300)
#: Relative margin added to the quadrature fallback of :func:`log_gaussian_delta` (upward).
_QUAD_MARGIN = 1e-9

#: The largest epsilon :meth:`GaussianAccountant.calibrate` accepts. Beyond it the noise
#: multiplier (about 1/sqrt(2 epsilon)) is so small that delta swings from 1 to 0 within a few
#: ulps of sigma: double precision cannot certify an answer (and no useful guarantee needs it).
MAX_CALIBRATION_EPSILON = 1e6
#: Relative margin (in log) for the few ulps of floating-point error: results stay upper bounds.
_ROUNDING = 1e-14

_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)


def _log1mexp(x: float) -> float:
    """``log(1 - e^x)`` for ``x <= 0``, accurate at both ends (Maechler 2012)."""
    if x == 0.0:
        return -math.inf
    return math.log(-math.expm1(x)) if x > -_LN2 else math.log1p(-math.exp(x))


def _log_expm1(x: float) -> float:
    """``log(e^x - 1)`` for ``x > 0`` without overflow."""
    return x + math.log1p(-math.exp(-x)) if x > 30.0 else math.log(math.expm1(x))


def _log_ndtr_difference(a: float, b: float, width: float) -> float:
    """``log(Phi(a) - Phi(b))`` for ``a > b``, ``width = a - b`` (passed exactly), to a few ulps.

    Mirrored into the lower tail when both are positive; from the two tail logs when their
    ratio is not close to 1; by Gauss-Legendre quadrature of the normal density over the short
    interval otherwise; from ``erf`` when the interval contains 0 (no cancellation then).
    """
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    if b >= 0.0:
        a, b = -b, -a
    if a > 0.0:
        return math.log(0.5 * (math.erf(a / _SQRT2) - math.erf(b / _SQRT2)))
    la, lb = float(special.log_ndtr(a)), float(special.log_ndtr(b))
    if la == -math.inf:
        return -math.inf
    if lb - la < -0.1:
        return la + _log1mexp(lb - la)
    half, mid = 0.5 * width, 0.5 * (a + b)
    nodes = mid + half * _GL_NODES
    return (
        math.log(half)
        + float(special.logsumexp(-0.5 * nodes * nodes, b=_GL_WEIGHTS))
        - _LOG_SQRT_2PI
    )


def _log_tail_ratio(v: float, v0: float) -> float:
    """``log(Phi(-v) / Phi(-v0))`` for ``v >= v0``, through ``erfcx`` where the tails are thin."""
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    if v0 <= 0.0:
        return float(special.log_ndtr(-v)) - float(special.log_ndtr(-v0))
    return (
        -0.5 * (v - v0) * (v + v0)
        + math.log(special.erfcx(v / _SQRT2))
        - math.log(special.erfcx(v0 / _SQRT2))
    )


def _log_delta_by_quadrature(s: float, epsilon: float) -> float:
    """``log delta`` from ``delta = int_0^inf e^{-u} Pr[L > eps + u] du`` (no cancellation).

    ``L ~ N(mu, 2 mu)``, ``mu = 1/(2 s^2)``, is the Gaussian privacy loss. With ``w = 1/s`` and
    ``v0 = eps s - 1/(2s)`` this is ``delta = w Phi(-v0) I / k``, where ``k = w + h(v0)``
    (``h = phi / Phi(-.)`` the normal hazard rate) and ``I = int_0^inf exp(g(v0 + x/k) -
    g(v0)) dx``, ``g(v) = log Phi(-v) - w v``: an integrand in (0, 1] that decays at least like
    ``e^{-x}``. Used where the closed form cancels; rounded up by a relative ``_QUAD_MARGIN``.
    """
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    w = 1.0 / s
    v0 = epsilon * s - 0.5 * w
    tail = float(special.log_ndtr(-v0))
    if tail == -math.inf:
        return -math.inf
    hazard = math.sqrt(2.0 / math.pi) / float(special.erfcx(v0 / _SQRT2))
    k = w + hazard

    def integrand(x: float) -> float:
        v = v0 + x / k
        return math.exp(_log_tail_ratio(v, v0) - w * (v - v0))

    from scipy import integrate  # lazy: scipy.integrate imports scipy.optimize (~0.5 s)

    # The integrand is <= e^{-x} (h increases), so the part beyond x = 60 is < e^{-60}.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, error = integrate.quad(integrand, 0.0, 60.0, epsabs=0.0, epsrel=1e-11, limit=200)
    bound = value + abs(error) + math.exp(-60.0)
    return math.log(w) + tail - math.log(k) + math.log(bound) + math.log1p(_QUAD_MARGIN)


def log_gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """``log delta(epsilon)`` of the Gaussian mechanism at unit sensitivity (Balle & Wang 2018).

    ``delta = Phi(a) - e^eps Phi(b)``, ``a = 1/(2s) - eps s``, ``b = -1/(2s) - eps s``, written
    as ``(Phi(a) - Phi(b)) - (e^eps - 1) Phi(b)`` with both terms in log space; at ``eps = 0``
    exactly ``erf(1/(2 sqrt(2) s))``. Where the two terms cancel (second > half the first),
    the cancellation-free integral of :func:`_log_delta_by_quadrature` is used instead.
    ``-inf`` only when ``epsilon`` is infinite or delta is below every float.
    """
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    s = float(noise_multiplier)
    epsilon = float(epsilon)
    if math.isinf(epsilon):
        return -math.inf
    shift = epsilon * s
    if not math.isfinite(shift):
        return -math.inf
    a, b = 0.5 / s - shift, -0.5 / s - shift
    first = _log_ndtr_difference(a, b, 1.0 / s)
    if epsilon == 0.0 or first == -math.inf:
        return first + _ROUNDING
    second = _log_expm1(epsilon) + float(special.log_ndtr(b))
    if second - first < -_LN2:
        return first + _log1mexp(second - first) + _ROUNDING
    return _log_delta_by_quadrature(s, epsilon) + _ROUNDING


def gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """delta(epsilon) of the Gaussian mechanism with unit sensitivity and std ``noise_multiplier``.

    Balle & Wang (2018) through :func:`log_gaussian_delta`. Never 0 for a finite epsilon (the
    true delta is positive): a delta below the smallest positive double is reported as that
    double, so the answer stays an upper bound.
    """
    log_delta = log_gaussian_delta(noise_multiplier, epsilon)
    if math.isinf(epsilon):
        return 0.0
    return min(max(math.exp(log_delta), _SMALLEST), 1.0)


_SMALLEST = math.ulp(0.0)


def unit_noise_multiplier(epsilon: float, delta: float) -> float:
    """The smallest noise multiplier ``s`` (unit sensitivity) with ``delta(epsilon) <= delta``.

    Bisection on ``log s`` using only the test ``gaussian_delta(s, epsilon) <= delta`` (delta
    decreases in ``s``), so extreme inputs cannot derail it; the returned ``s`` was evaluated and
    verified, and ``s / (1 + 1e-13)`` fails. Raises CalibrationError outside
    ``_UNIT_SIGMA_RANGE``.
    """

    def ok(u: float) -> bool:
        return gaussian_delta(math.exp(u), epsilon) <= delta

    low, high = (math.log(x) for x in _UNIT_SIGMA_RANGE)
    if not ok(high):
        raise CalibrationError(
            f"no noise multiplier up to {_UNIT_SIGMA_RANGE[1]:g} (per unit sensitivity) reaches "
            f"epsilon = {epsilon!r} at delta = {delta!r}"
        )
    if ok(low):
        raise CalibrationError(
            f"epsilon = {epsilon!r} at delta = {delta!r} is met even at noise multiplier "
            f"{_UNIT_SIGMA_RANGE[0]:g} per unit sensitivity: no meaningful noise level exists; "
            "choose a smaller epsilon"
        )
    # Start near the answer: bracket from u = 0 outwards by doubling steps.
    lo, hi = low, high
    step = 1.0
    if ok(0.0):
        hi = 0.0
        while -step > low and ok(-step):
            hi, step = -step, step * 2.0
        lo = max(-step, low)
    else:
        lo = 0.0
        while step < high and not ok(step):
            lo, step = step, step * 2.0
        hi = min(step, high)
    while hi - lo > _SIGMA_RTOL:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _epsilon_guess(s: float, delta: float) -> float:
    """A seed near the Gaussian mechanism's epsilon at multiplier s: ``1/(2 s^2) + sqrt(2
    ln(1/delta)) / s``, the epsilon of the classical tail bound (1 where that is not a positive
    number). Only the bracket of :func:`smallest_epsilon` starts from it; dp_accounting's root
    would cost an import of scipy.stats (docs/performance.md, "Issue 29, fifth pass")."""
    try:
        guess = 0.5 / (s * s) + math.sqrt(2.0 * max(-math.log(delta), 0.0)) / s
    except (ArithmeticError, ValueError):  # s**2 underflowing to 0, delta outside (0, 1]
        return 1.0
    return guess if math.isfinite(guess) and guess > 0.0 else 1.0


def smallest_epsilon(noise_multiplier: float, delta: float) -> float:
    """The smallest double ``eps >= 0`` with ``gaussian_delta(s, eps) <= delta`` (inf if none).

    A rough root (:func:`_epsilon_guess`) seeds a bracket that is then bisected down to
    adjacent doubles, so the answer is verified by the same function calibration verifies
    with: at a sigma calibrated for epsilon, the reported epsilon never exceeds it (and the
    seed changes only the number of bisection steps, not the answer).
    """
    s = float(noise_multiplier)

    def ok(eps: float) -> bool:
        return gaussian_delta(s, eps) <= delta

    if ok(0.0):
        return 0.0
    if not ok(sys.float_info.max):
        return math.inf  # no finite epsilon holds: sigma is too small to give any guarantee
    guess = _epsilon_guess(s, delta)
    hi = guess + max(guess, 1.0) * 1e-9
    while not ok(hi):
        hi = min(hi * 2.0, sys.float_info.max)
    lo = max(guess - max(guess, 1.0) * 1e-9, 0.0)
    while lo > 0.0 and ok(lo):
        lo = lo / 2.0 if lo > 1e-300 else 0.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if ok(mid):
            hi = mid
        else:
            lo = mid


def _nudged_up(value: float, ok: Any) -> float:
    """The first of ``value``, ``value + step``, ``value + 2 step``, ... for which ``ok`` holds."""
    step = max(abs(value), 1.0) * 1e-12
    candidate = value
    for _ in range(_NUDGES):
        if ok(candidate):
            return candidate
        candidate = value + step
        step *= 2.0
    raise CalibrationError(f"could not find a conservative value near {value!r}")


@accountants.register("gaussian")
@attrs.frozen
class GaussianAccountant(Accountant):
    """Unamplified accounting: a Gaussian mechanism with the strategy's sensitivity."""

    kind: ClassVar[AccountantKind] = AccountantKind.BOUND
    sound: ClassVar[bool] = True
    #: The loosest bound, but it applies to every scheme: tried last.
    rank: ClassVar[int] = 90
    command_line_options: ClassVar[Mapping[str, str] | None] = {}

    @classmethod
    def example(cls) -> GaussianAccountant:
        return cls()

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None: every scheme declares its minimum separation and maximum participations."""
        return None

    def sensitivity(self, scheme: SamplingScheme, strategy: Strategy) -> float:
        """``S = k * strategy.sensitivity(n, scheme.min_separation, scheme.max_participations)``
        with ``k = scheme.max_step_contribution`` (k_u for multi-attribution, 2 x the base's
        under truncation; see :attr:`SamplingScheme.max_step_contribution`)."""
        value = float(scheme.max_step_contribution) * float(
            strategy.sensitivity(scheme.n_steps, scheme.min_separation, scheme.max_participations)
        )
        if not (math.isfinite(value) and value > 0.0):
            raise CalibrationError(f"strategy sensitivity {value!r} is not a finite number > 0")
        return value

    def _epsilon(self, question: Question) -> EpsilonResult:
        """epsilon(delta) of the Gaussian mechanism with multiplier ``sigma / S``."""
        q = question
        sens = self.sensitivity(q.scheme, q.strategy)
        s = q.sigma / sens
        return q.bound_epsilon(smallest_epsilon(s, q.delta), notes=self._notes(q.scheme, sens))

    def _delta(self, question: Question) -> DeltaResult:
        """delta(epsilon) of the Gaussian mechanism with multiplier ``sigma / S``."""
        q = question
        sens = self.sensitivity(q.scheme, q.strategy)
        value = gaussian_delta(q.sigma / sens, q.epsilon)
        return q.bound_delta(value, notes=self._notes(q.scheme, sens))

    def _calibrate(self, question: Question) -> CalibrationResult:
        """``sigma = S * sigma_1(epsilon, delta)``, nudged up until delta(epsilon) <= delta."""
        q = question
        epsilon, delta = q.epsilon, q.delta
        check_range(type(self).__name__, "epsilon", epsilon, low=0.0, high=MAX_CALIBRATION_EPSILON)
        sens = self.sensitivity(q.scheme, q.strategy)
        unit = unit_noise_multiplier(epsilon, delta)
        sigma = _nudged_up(sens * unit, lambda s: gaussian_delta(s / sens, epsilon) <= delta)
        if not (math.isfinite(sigma) and sigma > 0.0):
            raise CalibrationError(
                f"the calibrated noise multiplier {sigma!r} (sensitivity {sens!r} times "
                f"{unit!r}) is not a finite number > 0 for epsilon = {epsilon!r}, delta = "
                f"{delta!r}"
            )
        return CalibrationResult(
            **q.provenance("exact"),
            notes=(
                *self._notes(q.scheme, sens),
                f"delta at the returned sigma: {gaussian_delta(sigma / sens, epsilon)!r}",
            ),
            sigma=sigma,
            epsilon=q.epsilon,
            delta=q.delta,
            certified=True,
            candidates=(sigma,),
        )

    @staticmethod
    def _notes(scheme: SamplingScheme, sensitivity: float) -> tuple[str, ...]:
        return (
            f"unamplified Gaussian mechanism, sensitivity {sensitivity!r}",
            f"per-step contribution {float(scheme.max_step_contribution)!r} "
            "(scheme.max_step_contribution, zero-out adjacency)",
        )
