"""Unamplified accounting: BandMF as one Gaussian mechanism (docs/math.md §4, last item).

Ignoring the randomness of sampling, every participation pattern a scheme can produce has gaps
``>= scheme.min_separation`` and at most ``scheme.max_participations`` entries, so
``y = C x + sigma z`` is dominated by a Gaussian mechanism with l2 sensitivity

    S = max_pi ||sum_{j in pi} C[:, j]||_2        (strategy.sensitivity),

i.e. noise multiplier ``sigma / S`` at unit sensitivity. Its privacy profile is the analytic
Gaussian mechanism of Balle & Wang (2018, Thm. 8):

    delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s),    s = sigma / S,

exact for both neighbouring directions (the Gaussian pair is symmetric). Every scheme exposes
``min_separation`` and ``max_participations``, so this accountant accounts every scheme: it is
the universal (loose) fallback.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import dp_accounting
from scipy import special

from minsep.framework.errors import CalibrationError
from minsep.framework.interfaces import Accountant, Question, SamplingScheme, Strategy
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult

__all__ = ["GaussianAccountant", "gaussian_delta"]

#: Root finding tolerance handed to dp_accounting's analytic Gaussian routines.
_TOL = 1e-12
#: Upward nudges tried before giving up on a conservative answer (each doubles the step).
_NUDGES = 80


def gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """delta(epsilon) of the Gaussian mechanism with unit sensitivity and std ``noise_multiplier``.

    Balle & Wang (2018), evaluated in the log domain so that tiny deltas do not cancel.
    """
    s = noise_multiplier
    if math.isinf(epsilon):
        return 0.0
    log_first = float(special.log_ndtr(0.5 / s - epsilon * s))
    log_second = epsilon + float(special.log_ndtr(-0.5 / s - epsilon * s))
    if log_second >= log_first:
        return 0.0
    return min(math.exp(log_first) * -math.expm1(log_second - log_first), 1.0)


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

    @classmethod
    def example(cls) -> GaussianAccountant:
        return cls()

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None: every scheme declares its minimum separation and maximum participations."""
        return None

    def sensitivity(self, scheme: SamplingScheme, strategy: Strategy) -> float:
        """``S = strategy.sensitivity(n, scheme.min_separation, scheme.max_participations)``."""
        value = float(
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
        root = float(dp_accounting.get_epsilon_gaussian(s, q.delta, tol=_TOL))
        # Brent's root is only within tol of the exact epsilon: move it up until it is certified.
        value = _nudged_up(root + _TOL, lambda e: gaussian_delta(s, e) <= q.delta)
        return EpsilonResult(
            **q.provenance("exact"),
            notes=self._notes(sens),
            epsilon=value,
            certified_epsilon=value,
            delta=q.delta,
            sigma=q.sigma,
        )

    def _delta(self, question: Question) -> DeltaResult:
        """delta(epsilon) of the Gaussian mechanism with multiplier ``sigma / S``."""
        q = question
        sens = self.sensitivity(q.scheme, q.strategy)
        value = gaussian_delta(q.sigma / sens, q.epsilon)
        return DeltaResult(
            **q.provenance("exact"),
            notes=self._notes(sens),
            delta=value,
            certified_delta=value,
            epsilon=q.epsilon,
            sigma=q.sigma,
        )

    def _calibrate(self, question: Question) -> CalibrationResult:
        """``sigma = S * sigma_1(epsilon, delta)``, nudged up until delta(epsilon) <= delta."""
        q = question
        sens = self.sensitivity(q.scheme, q.strategy)
        unit = float(dp_accounting.get_sigma_gaussian(q.epsilon, q.delta, tol=_TOL))
        sigma = _nudged_up(
            sens * (unit + _TOL), lambda s: gaussian_delta(s / sens, q.epsilon) <= q.delta
        )
        return CalibrationResult(
            **q.provenance("exact"),
            notes=self._notes(sens),
            sigma=sigma,
            epsilon=q.epsilon,
            delta=q.delta,
            certified=True,
            candidates=(sigma,),
        )

    @staticmethod
    def _notes(sensitivity: float) -> tuple[str, ...]:
        return (f"unamplified Gaussian mechanism, sensitivity {sensitivity!r}",)
