"""Decay of the column products of C when C^-1 is banded Toeplitz (paper App. B.2, docs/math.md
§2.2).

If C^-1 is lower-triangular Toeplitz with first column h (banded: h_0..h_{q-1}), C is
lower-triangular Toeplitz with first column t, the power series of 1/H with
``H(z) = sum_j h_j z^j``. When every root of H lies outside the unit disc, t decays
geometrically at rate ``rho = 1 / min |root|``; with ``K = max_{m < n} |t_m| / rho^m`` (so
``|t_m| <= K rho^m`` for every m < n by construction),

    c_i^T c_j <= sum_m K^2 rho^{2m + d} = K^2 rho^d / (1 - rho^2),   d = j - i,

and the per-participation budget of docs/math.md §2.1 at min-sep b is at most
``sum_{a >= 1} K^2 rho^{a b} / (1 - rho^2) = K^2 rho^b / ((1 - rho^2)(1 - rho^b))``.
The loss model computes its budgets from the Gram matrix itself (never looser); this bound says
in advance how fast they vanish as b grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError

#: Relative inflation of K covering the rounding of the computed t and of the roots.
ROUNDING_SLACK = 1e-9


@attrs.frozen
class DecayBound:
    """``|t_m| <= scale * rate^m`` for every m < ``n_steps`` (the first column t of C).

    Attributes:
        scale: K.
        rate: rho in [0, 1).
        n_steps: the horizon n the constant is certified for.
    """

    scale: float
    rate: float
    n_steps: int

    def pair_bound(self, lag: int) -> float:
        """Upper bound of ``c_i^T c_j`` for any two columns ``lag = |j - i| >= 1`` apart."""
        if lag < 1:
            raise ConfigurationError(
                f"DecayBound.pair_bound.lag = {lag!r} is invalid: must be an integer >= 1",
                parameter="lag",
            )
        return self.scale**2 * self.rate**lag / (1.0 - self.rate**2)

    def budget_bound(self, min_sep: int) -> float:
        """Upper bound of the cross-term budget ``up[j]`` of docs/math.md §2.1 at min-sep b."""
        if min_sep < 1:
            raise ConfigurationError(
                f"DecayBound.budget_bound.min_sep = {min_sep!r} is invalid: must be an "
                "integer >= 1",
                parameter="min_sep",
            )
        far = self.rate**min_sep
        return self.scale**2 * far / ((1.0 - self.rate**2) * (1.0 - far))


def toeplitz_inverse_column(
    inverse_column: Sequence[float] | np.ndarray, n_steps: int
) -> np.ndarray:
    """The first n coefficients t of ``1 / H``: the first column of C (an IIR filter)."""
    h = np.asarray(inverse_column, dtype=np.float64)
    impulse = np.zeros(n_steps)
    impulse[0] = 1.0
    from scipy import signal  # ~0.7 s to import: only when a decay bound is computed

    return np.asarray(signal.lfilter([1.0], h, impulse), dtype=np.float64)


def decay_bound(inverse_column: Sequence[float] | np.ndarray, n_steps: int) -> DecayBound:
    """The constants (K, rho) of App. B.2 for C with banded Toeplitz inverse ``inverse_column``.

    Raises ConfigurationError unless ``inverse_column`` is finite with ``h_0 != 0`` and every
    root of H lies strictly outside the unit disc (otherwise t need not decay).
    """
    h = np.asarray(inverse_column, dtype=np.float64)
    if h.ndim != 1 or h.size < 1 or not np.all(np.isfinite(h)) or h[0] == 0.0:
        raise ConfigurationError(
            f"decay_bound.inverse_column = {inverse_column!r} is invalid: must be a finite "
            "vector with a non-zero first entry",
            parameter="inverse_column",
        )
    if n_steps < 1:
        raise ConfigurationError(
            f"decay_bound.n_steps = {n_steps!r} is invalid: must be an integer >= 1",
            parameter="n_steps",
        )
    t = toeplitz_inverse_column(h, n_steps)
    trimmed = np.trim_zeros(h, "b")
    roots = np.roots(trimmed[::-1]) if trimmed.size > 1 else np.array([])
    if roots.size == 0:
        return DecayBound(abs(float(t[0])) * (1 + ROUNDING_SLACK), 0.0, n_steps)
    smallest = float(np.min(np.abs(roots)))
    if smallest <= 1.0:
        raise ConfigurationError(
            f"decay_bound.inverse_column = {inverse_column!r} is invalid: H(z) = sum_j h_j z^j "
            f"has a root of modulus {smallest:.6g} <= 1, must have every root outside the unit "
            "disc (C would not decay)",
            parameter="inverse_column",
        )
    rate = 1.0 / smallest
    log_ratio = np.log(np.abs(t[t != 0.0])) - np.arange(n_steps)[t != 0.0] * math.log(rate)
    scale = float(np.exp(np.max(log_ratio))) * (1 + ROUNDING_SLACK)
    return DecayBound(scale, rate, n_steps)


__all__ = ["ROUNDING_SLACK", "DecayBound", "decay_bound", "toeplitz_inverse_column"]
