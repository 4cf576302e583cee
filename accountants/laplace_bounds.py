"""Rigorous upper bounds on lognormal Laplace transforms and on negative moments of their means.

For ``ln u ~ N(-v/2, v)`` (so ``E[u] = 1``) the Laplace transform is
``phi_v(s) = E[exp(-s u)] = E_z[exp(-s e^{a + b z})]``, ``a = -v/2``, ``b = sqrt(v)``,
``z ~ N(0, 1)``. For the mean ``V = m^-1 sum_g u_g`` of independent such ``u_g``,

    E[V^-kappa] = Gamma(kappa)^-1 int_0^inf t^(kappa-1) prod_g phi_g(t / m) dt.

Both integrals are bounded from above (docs/math.md §10.2): the inner one cell by cell with the
tangent ``e^{b z} >= e^{b z_i} (1 + b (z - z_i))`` (exact Gaussian integrals of the resulting
exponential), with tangent-line tails of the concave log-integrand; the outer one with the
chord of the log-convex Laplace transform on each cell of a log-spaced grid, ``F <= 1`` near 0
and a moment tail bound ``phi_v(s) <= (beta/e)^beta s^-beta e^{beta (beta + 1) v / 2}`` beyond.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["log_laplace_upper", "log_mean_moment_upper", "log_tail_upper"]

#: Half-width of the inner window around the log-integrand's maximum, in its curvature units.
_HALF_WIDTH = 14.0
#: Cells of the inner window (accuracy: relative error about (lambda dz)^2 / 8 per cell).
_INNER_CELLS = 1600
#: Relative slack on each transform for float64 rounding (erfcx, exp, log-sum-exp).
_RELATIVE_SLACK = 1e-6
#: ln s values evaluated together (bounds memory: _CHUNK x _INNER_CELLS floats per array).
_CHUNK = 64
#: Bisection steps for the maximum of the inner log-integrand.
_BISECTIONS = 80
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _inner_maximum(c: np.ndarray, b: float) -> np.ndarray:
    """The root z of ``b e^{c + b z} + z = 0`` (the maximum of ``-e^{c + b z} - z^2 / 2``)."""
    hi = np.zeros_like(c)
    lo = -(np.maximum(c, 0.0) / b + 40.0)  # b e^{c + b lo} <= b e^{-40 b} < 1 < -lo
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        up = b * np.exp(np.minimum(c + b * mid, 700.0)) + mid > 0.0
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return np.asarray(0.5 * (lo + hi), dtype=np.float64)


def _log_cell_integral(start: np.ndarray, width: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """``ln int_{z}^{z + w} e^{-lambda (x - z)} phi(x) dx`` for cells ``[z, z + w]``, stably.

    Equals ``ln phi(z) + ln(sqrt(2 pi) e^{A^2/2} (Phi(B) - Phi(A)))``, A = z + lambda,
    B = A + w, with the bracket through erfcx on each side of 0.
    """
    from scipy import special  # lazy: keeps the CLI's startup light

    a = start + rate
    b = a + width
    root2 = math.sqrt(2.0)
    shrink = np.exp(-0.5 * width * (a + b))  # e^{-(B^2 - A^2)/2}
    bracket = np.empty_like(a)
    up = a >= 0.0  # A >= 0: upper tails
    bracket[up] = special.erfcx(a[up] / root2) - shrink[up] * special.erfcx(b[up] / root2)
    down = b <= 0.0  # B <= 0: lower tails
    bracket[down] = shrink[down] * special.erfcx(-b[down] / root2) - special.erfcx(-a[down] / root2)
    mid = ~(up | down)  # A < 0 < B: |A| < width, direct
    bracket[mid] = 2.0 * np.exp(0.5 * a[mid] ** 2) * (special.ndtr(b[mid]) - special.ndtr(a[mid]))
    bracket = np.maximum(bracket, 1e-300)  # rounding only; covered by the relative slack
    value = -0.5 * start * start + np.log(bracket) + 0.5 * math.log(math.pi / 2.0) - _LOG_SQRT_2PI
    return np.asarray(value, dtype=np.float64)


def log_laplace_upper(v: float, log_s: np.ndarray) -> np.ndarray:
    """Upper bounds on ``ln phi_v(s)`` at each ``ln s`` (docs/math.md §10.2).

    ``v = 0`` (an empty bin, u = 1) gives ``-s`` exactly (with the slack).
    """
    log_s = np.asarray(log_s, dtype=np.float64)
    if v == 0.0:
        return np.asarray(-np.exp(log_s) + _RELATIVE_SLACK, dtype=np.float64)
    parts = [_log_laplace_chunk(v, log_s[i : i + _CHUNK]) for i in range(0, log_s.size, _CHUNK)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _log_laplace_chunk(v: float, log_s: np.ndarray) -> np.ndarray:
    """:func:`log_laplace_upper` on one chunk of ``ln s`` (v > 0)."""
    b = math.sqrt(v)
    c = log_s - 0.5 * v  # x(z) = ln(s u) = c + b z
    peak = _inner_maximum(c, b)
    scale = 1.0 / np.sqrt(1.0 + b * b * np.exp(np.minimum(c + b * peak, 700.0)))
    offsets = np.linspace(-_HALF_WIDTH, _HALF_WIDTH, _INNER_CELLS + 1)
    z = peak[:, None] + scale[:, None] * offsets[None, :]
    x = c[:, None] + b * z
    with np.errstate(over="ignore"):
        ex = np.exp(np.minimum(x, 700.0))
    width = np.diff(z, axis=1)
    cells = -ex[:, :-1] + _log_cell_integral(z[:, :-1], width, b * ex[:, :-1])
    # Tails: the log-integrand g = -e^x - z^2/2 - ln sqrt(2 pi) is concave, so below z_0
    # (g' > 0) it stays under its tangent, whose integral is e^{g(z_0)} / g'(z_0); same above.
    log_g = -ex - 0.5 * z * z - _LOG_SQRT_2PI
    slope = -b * ex - z
    left = log_g[:, 0] - np.log(slope[:, 0])
    right = log_g[:, -1] - np.log(-slope[:, -1])
    pieces = np.concatenate([cells, left[:, None], right[:, None]], axis=1)
    top = np.max(pieces, axis=1)
    total = top + np.log(np.sum(np.exp(pieces - top[:, None]), axis=1))
    return np.asarray(np.minimum(total, 0.0) + _RELATIVE_SLACK, dtype=np.float64)


def log_tail_upper(kappa: float, log_start: float, count: int, variances: Sequence[float]) -> float:
    """Upper bound on ``ln(Gamma(kappa)^-1 int_{t_b}^inf t^(kappa-1) prod_g phi_g(t/m) dt)``.

    With ``e^{-x} <= (beta/e)^beta x^-beta`` each ``phi_g(s) <= (beta/e)^beta s^-beta
    e^{beta (beta + 1) v_g / 2}``; one beta with ``m beta > kappa`` for all m factors gives
    ``K t^-(m beta)`` and the tail ``K t_b^(kappa - m beta) / (m beta - kappa)``; the best of a
    few beta is kept.
    """
    m = count
    total_v = float(sum(variances))
    best = math.inf
    for factor in (1.05, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0):
        beta = factor * kappa / m
        excess = m * beta - kappa
        log_k = m * beta * (math.log(beta) - 1.0 + math.log(m)) + 0.5 * beta * (beta + 1) * total_v
        value = log_k - excess * log_start - math.log(excess) - math.lgamma(kappa)
        best = min(best, value)
    return best


def log_mean_moment_upper(
    kappa: float,
    log_s: np.ndarray,
    log_phi: np.ndarray,
    count: int,
    variances: Sequence[float],
) -> float:
    """Upper bound on ``ln E[V^-kappa]``, V the mean of ``count`` independent lognormals.

    ``log_phi`` holds upper bounds on ``ln prod_g phi_g(s)`` on the increasing grid ``log_s``
    (t = count * s). Cells: ``F(t) <= F(t_i) e^{-mu+ (t - t_i)}`` (chord of the log-convex F,
    or monotonicity), then ``e^rho - 1 >= rho`` in ``t = t_i e^rho``; ``[0, t_0]``: F <= 1;
    beyond the grid: :func:`log_tail_upper`.
    """
    log_t = np.asarray(log_s, dtype=np.float64) + math.log(count)
    log_f = np.minimum(np.asarray(log_phi, dtype=np.float64), 0.0 + _RELATIVE_SLACK * count)
    t = np.exp(log_t)
    step = np.diff(log_t)
    mu = np.maximum((log_f[:-1] - log_f[1:]) / np.diff(t), 0.0)
    rate = kappa - mu * t[:-1]
    # ln( (e^{rate * step} - 1) / rate ), stably on both signs (step at rate = 0)
    tiny = np.abs(rate * step) < 1e-12
    safe = np.where(tiny, 1.0, rate)
    with np.errstate(over="ignore", divide="ignore"):
        positive = rate * step + np.log(-np.expm1(-np.abs(safe) * step)) - np.log(np.abs(safe))
        negative = np.log(-np.expm1(-np.abs(safe) * step)) - np.log(np.abs(safe))
    log_e = np.where(tiny, np.log(step), np.where(rate > 0.0, positive, negative))
    cells = log_f[:-1] + kappa * log_t[:-1] + log_e - math.lgamma(kappa)
    near_zero = kappa * log_t[0] - math.lgamma(kappa + 1.0)
    tail = log_tail_upper(kappa, float(log_t[-1]), count, variances)
    pieces = np.concatenate([cells, [near_zero, tail]])
    top = float(np.max(pieces))
    total = top + math.log(float(np.sum(np.exp(pieces - top))))
    return total + _RELATIVE_SLACK
