"""Fused host kernels (numba) of the random-phase cyclic Poisson loss model (docs/math.md §4.1).

* :func:`phase_steps`: the sensitive example's participation steps from the array code's
  uniforms (the steps ``i = g mod b`` of its phase g whose coin ``u_i < q``), kept sparsely;
* :func:`random_phase_rows`: ``ln P/Q`` per sample,

      ln P/Q = logsumexp_g L_g - ln b,   L_g = sum_{i mod b = g} ln(1 - q + q e^{x_i}),

  with ``x_i = (<c_i, y> - ||c_i||^2 / 2) / sigma^2`` (the signal added sparsely from the
  steps through the cross-Gram table). Each ``L_g`` is the log of a running product of the
  factors ``1 - q + q e^{x_i}`` (one vectorised exp per step, from :func:`exp_row`), whose log
  is taken whenever the product leaves ``[2^-500, 2^500]`` and at the end: with every ``|x_i|
  <= LIMIT`` (300) a factor lies in ``[e^-300, e^300]``, so the product stays a normal float64.
  A row with some ``x_i`` outside that range (or NaN) is redone term by term in the log domain
  (``logaddexp(ln(1 - q), ln q + x_i)``, the array code's formula). Empty phases (b > n) give
  ``L_g = 0``. Agrees with the array code to rounding
  (``tests/unit/schemes/kernels/test_kernels_random_phase.py`` pins rtol 1e-13 on losses up to 1e4).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.b_min_sep.cpu_kernels import exp_row
from minsep.schemes.kernels.cpu_kernels import logaddexp
from minsep.schemes.kernels.jit import njit
from minsep.schemes.kernels.mixture_kernels import add_weighted_signal

#: The running product's range before its log is taken (2^500 and 2^-500).
_HIGH = 2.0**500
_LOW = 2.0**-500


@njit
def phase_steps(
    uniforms: np.ndarray,
    phases: np.ndarray,
    rate: float,
    groups: int,
    steps: np.ndarray,
    row0: int,
) -> None:
    """``steps[row0 + r]``: the steps ``i`` with ``i mod groups = phases[row0 + r]`` and
    ``uniforms[r, i] < rate``, ascending, then padded with n (``uniforms``: a block of the
    ``(S, n)`` coin uniforms; ``steps``: int32 ``(S, ceil(n / groups))``)."""
    rows, n = uniforms.shape
    width = steps.shape[1]
    for r in range(rows):
        s = row0 + r
        coins = uniforms[r]
        out = steps[s]
        count = 0
        for i in range(phases[s], n, groups):
            if coins[i] < rate:
                out[count] = i
                count += 1
        for j in range(count, width):
            out[j] = n


@njit(fastmath={"contract"})
def random_phase_rows(
    values: np.ndarray,
    steps: np.ndarray,
    ones: np.ndarray,
    table: np.ndarray,
    base: np.ndarray,
    a: float,
    inv_s2: float,
    rate: float,
    groups: int,
    out: np.ndarray,
) -> int:
    """``out[s] = ln P/Q`` of random-phase cyclic Poisson for every row s; returns the rows
    done in logs.

    ``values`` ``(S, n)``: noise correlations (``a = 1/sigma``) or dots ``<c_i, y>`` (``a =
    1/sigma^2``); ``steps`` ``(S, m)``: the participation steps (``m = 0``: no signal; ``ones``:
    m weights of 1); ``table``: the cross-Gram table of the sparse signal; ``base[i] =
    -||c_i||^2 / (2 sigma^2)``."""
    rows, n = values.shape
    stay = 1.0 - rate
    log_stay = math.log(stay) if stay > 0.0 else -np.inf
    log_rate = math.log(rate) if rate > 0.0 else -np.inf
    x = np.empty(n)
    e = np.empty(n)
    sums = np.empty(groups)
    in_logs = 0
    for s in range(rows):
        row = values[s]
        for i in range(n):
            x[i] = a * row[i] + base[i]
        add_weighted_signal(x, steps[s], ones, table, inv_s2)
        wild = exp_row(x, e, n)
        for g in range(groups):
            total = 0.0
            if not wild:
                product = 1.0
                for i in range(g, n, groups):
                    product *= stay + rate * e[i]
                    if product > _HIGH or product < _LOW:
                        total += math.log(product)
                        product = 1.0
                total += math.log(product)
            elif rate >= 1.0:
                for i in range(g, n, groups):
                    total += x[i]
            else:
                for i in range(g, n, groups):
                    total += logaddexp(log_stay, log_rate + x[i])
            sums[g] = total
        in_logs += wild
        peak = sums[0]
        for g in range(1, groups):
            peak = max(peak, sums[g])
        mass = 0.0
        for g in range(groups):
            mass += math.exp(sums[g] - peak)
        out[s] = peak + math.log(mass) - math.log(groups)
    return in_logs
