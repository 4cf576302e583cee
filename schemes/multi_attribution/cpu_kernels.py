"""Fused host kernels (numba) of the multi-attribution loss model (docs/math.md §5).

* :func:`user_steps`: the dominating single-user process from the uniforms the array code
  draws (one per step), kept sparsely as the steps with a positive count and the counts;
* :func:`multi_attribution_rows`: ``ln P/Q`` per sample. With ``x_i = <c_i, y> / sigma^2`` and
  ``h_i = ||c_i||^2 / (2 sigma^2)`` the block weight of step i is

      G_i = sum_{j >= 1} w_j exp(t_ij),  t_ij = j x_i - j^2 h_i  (w_j = Pr[Binomial(k_u, p) = j]),

  evaluated directly (one exp per step) as the polynomial

      G_i = sum_j a_ij u_i^j,  u_i = exp(x_i - h_i),  a_ij = w_j exp(-j (j-1) h_i),

  by Horner's rule (``h_i`` takes at most k distinct values, so the ``a_ij`` are a small
  table: :func:`~minsep.schemes.multi_attribution.fused.direct_coefficients`). Exact to rounding
  when every ``a_ij`` (of positive weight) is at least ``exp(-LIMIT)`` and ``|x_i - h_i| <=
  LIMIT / J`` (J the largest count j): every Horner partial is then a sum of positive normal
  numbers in ``[exp(-2 LIMIT), k_u exp(LIMIT)]``. A row where this fails, or where some G_i
  leaves ``[exp(-LIMIT), exp(LIMIT)]``, is redone term by term: as ``exp(M_i) S_i`` with
  ``M_i = max_j (ln w_j + t_ij)`` and ``S_i = sum_j exp(ln w_j + t_ij - M_i)`` in ``[1, k_u]``
  (a vectorised pass per j, k_u + 1 exps per step). Then the recursion ``f_i = (1-p)^{k_u}
  f_{i+1} + G_i f_{i+b}`` of b-min-sep's linear-scale kernel. A row with some ``|M_i| >
  LIMIT`` (or that leaves the float64 range) is redone in the log domain with ``ln G_i``
  (``M_i + ln S_i``, or the log of the direct G_i), as is every row when ``(1-p)^{k_u}`` is
  positive but below ``exp(-100)`` (the linear recursion's bound on its products).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.b_min_sep.cpu_kernels import (
    GROUP,
    LIMIT,
    exp_row,
    linear_rows,
    log_domain_row,
)
from minsep.schemes.kernels.jit import njit
from minsep.schemes.kernels.mixture_kernels import add_weighted_signal

#: Thresholds scanned one by one before :func:`_count_at` turns to a sorted search.
SCAN = 8


@njit
def _count_at(thresholds: np.ndarray, v: float) -> int:
    """``#{m : thresholds[m] <= v}`` for ascending thresholds with ``thresholds[0] <= v``: a
    scan of the first :data:`SCAN` (the usual counts), then a sorted search."""
    size = thresholds.shape[0]
    count = 1
    while count < size and count < SCAN:
        if thresholds[count] > v:
            return count
        count += 1
    if count < size:
        return int(np.searchsorted(thresholds, v, side="right"))
    return count


@njit
def user_steps(
    u: np.ndarray,
    thresholds: np.ndarray,
    b: int,
    steps: np.ndarray,
    counts: np.ndarray,
    row0: int,
) -> None:
    """Rows ``row0 ..`` of the single-user process from its uniforms ``u`` (``(rows, n)``):
    at an available step the count is ``#{m : thresholds[m] <= u}`` (inverse CDF of
    Binomial(k_u, p)); a positive count bars the next b - 1 steps. Writes the steps with a
    positive count (ascending, then n) and the counts (then 0), as the array code's
    :func:`~minsep.schemes.kernels.sampling.user_participation` computes them.

    The count is positive exactly when ``u >= thresholds[0]``: that one comparison decides an
    available step, the sorted search runs only at a participation, and the barred steps after
    it are jumped over (their uniforms are drawn but unused, as in the array code)."""
    rows, n = u.shape
    m = steps.shape[1]
    first = thresholds[0]
    for r in range(rows):
        s = row0 + r
        row = u[r]
        t = 0
        i = 0
        while i < n:
            v = row[i]
            if v < first:  # count 0: the next step is available
                i += 1
                continue
            steps[s, t] = i
            counts[s, t] = _count_at(thresholds, v)
            t += 1
            i += b
        for j in range(t, m):
            steps[s, j] = n
            counts[s, j] = 0


@njit(fastmath={"contract"})
def _horner_pass(
    e: np.ndarray, u: np.ndarray, coefs: np.ndarray, hi: int, lo: int, first: bool, n: int
) -> None:
    """Two Horner steps in one pass: ``e = (e u + a_hi) u + a_lo`` (``first``: ``e = a_hi u +
    a_lo``), the coefficients of column ``hi`` / ``lo`` of :func:`_direct_weights`' table."""
    n0 = n + 1 - coefs.shape[0]
    c_hi = coefs[0, hi]
    c_lo = coefs[0, lo]
    if first:
        for i in range(n0):
            e[i] = c_hi * u[i] + c_lo
        for i in range(n0, n):
            e[i] = coefs[1 + i - n0, hi] * u[i] + coefs[1 + i - n0, lo]
    else:
        for i in range(n0):
            e[i] = (e[i] * u[i] + c_hi) * u[i] + c_lo
        for i in range(n0, n):
            e[i] = (e[i] * u[i] + coefs[1 + i - n0, hi]) * u[i] + coefs[1 + i - n0, lo]


@njit(fastmath={"contract"})
def _direct_weights(t: np.ndarray, coefs: np.ndarray, u: np.ndarray, e: np.ndarray, n: int) -> bool:
    """``e[i] = G_i = sum_j a_ij u_i^j`` by Horner's rule, ``u_i = exp(t_i)``, ``t_i = x_i -
    h_i``, with ``coefs[0, j-1] = a_ij`` for ``i < n0 = n + 1 - len(coefs)`` and ``coefs[1 + i
    - n0, j-1]`` after (module docstring); True (``e`` then undefined) when some ``|t_i| >
    LIMIT / J`` (J = ``coefs.shape[1]``) or some G_i is outside ``[exp(-LIMIT), exp(LIMIT)]``:
    the row then needs the term-by-term weights. One exp and J fused multiply-adds per step, in
    about J / 2 vectorised passes (``t``, ``u`` and ``e``: distinct scratch rows; aliased rows
    would make the compiled loops scalar)."""
    top = coefs.shape[1]
    n0 = n + 1 - coefs.shape[0]
    if exp_row(t, u, n):  # NaN, or beyond LIMIT
        return True
    # e = a_J, then e = e u + a_j for j = J-1..1 (two at a time), then G = e u
    nxt = top - 1  # the highest column not yet in e
    if top == 1:
        for i in range(n0):
            e[i] = coefs[0, 0]
        for i in range(n0, n):
            e[i] = coefs[1 + i - n0, 0]
        nxt = -1
    else:
        _horner_pass(e, u, coefs, top - 1, top - 2, True, n)
        nxt = top - 3
    while nxt >= 1:
        _horner_pass(e, u, coefs, nxt, nxt - 1, False, n)
        nxt -= 2
    bound = LIMIT / top
    u_low = math.exp(-bound)
    u_high = math.exp(bound)
    low = math.exp(-LIMIT)
    high = math.exp(LIMIT)
    bad = 0
    if nxt == 0:
        c = coefs[0, 0]
        for i in range(n0):
            e[i] = e[i] * u[i] + c
        for i in range(n0, n):
            e[i] = e[i] * u[i] + coefs[1 + i - n0, 0]
    for i in range(n):
        ui = u[i]
        w = e[i] * ui
        e[i] = w
        bad += (w < low) | (w > high) | (ui < u_low) | (ui > u_high)
    return bad > 0


@njit(fastmath={"contract"})
def _block_weights(
    t: np.ndarray,
    half_norms: np.ndarray,
    js: np.ndarray,
    log_w: np.ndarray,
    peak: np.ndarray,
    total: np.ndarray,
    term: np.ndarray,
    e: np.ndarray,
    n: int,
) -> None:
    """``peak[i] = M_i`` and ``total[i] = S_i`` (module docstring) from ``t_i = x_i - h_i``
    (``t_ij = j t_i - j (j-1) h_i``), one vectorised pass per j."""
    for i in range(n):
        peak[i] = -np.inf
        total[i] = 0.0
    for jj in range(js.shape[0]):
        j = js[jj]
        lw = log_w[jj]
        jj1 = j * (j - 1.0)
        for i in range(n):
            peak[i] = max(peak[i], lw + j * t[i] - jj1 * half_norms[i])
    for jj in range(js.shape[0]):
        j = js[jj]
        lw = log_w[jj]
        jj1 = j * (j - 1.0)
        for i in range(n):
            term[i] = (lw + j * t[i] - jj1 * half_norms[i]) - peak[i]
        exp_row(term, e, n)  # arguments <= 0; below -LIMIT they count as e^-LIMIT
        for i in range(n):
            total[i] += e[i]


@njit
def multi_attribution_rows(
    values: np.ndarray,
    steps: np.ndarray,
    counts: np.ndarray,
    table: np.ndarray,
    half_norms: np.ndarray,
    js: np.ndarray,
    log_w: np.ndarray,
    coefs: np.ndarray,
    a: float,
    inv_s2: float,
    log_q: float,
    b: int,
    out: np.ndarray,
) -> int:
    """``out[s] = ln P/Q`` of multi-attribution (cold start) for every row s; returns the rows
    done in logs.

    ``values`` ``(S, n)``: noise correlations (``a = 1/sigma``) or dots ``<c_i, y>`` (``a =
    1/sigma^2``); ``steps`` / ``counts`` ``(S, m)``: the user's participations (``m = 0``: no
    signal); ``half_norms[i] = ||c_i||^2 / (2 sigma^2)``; ``js`` (float) / ``log_w``: the
    counts j >= 1 of positive probability and ``ln w_j``; ``coefs``: the polynomial
    coefficients of :func:`_direct_weights` (no rows: every row term by term); ``log_q = ln
    (1-p)^{k_u}``.
    """
    rows, n = values.shape
    x = np.empty(n)
    peak = np.empty((GROUP, n))
    total = np.empty((GROUP, n))
    term = np.empty(n)
    e = np.empty((GROUP, n))
    scratch = np.empty(n)
    f = np.empty((GROUP, n + b))
    g_logs = np.empty(n + b)
    results = np.empty(GROUP)
    wild = np.zeros(GROUP, dtype=np.bool_)
    direct = np.zeros(GROUP, dtype=np.bool_)  # G_i of the row by Horner's rule
    try_direct = coefs.shape[0] > 0 and coefs.shape[1] > 0
    q = math.exp(log_q) if log_q > -np.inf else 0.0
    linear = log_q == -np.inf or log_q >= -100.0  # q = 0 only when p = 1, not by underflow
    in_logs = 0
    for start in range(0, rows, GROUP):
        for g in range(GROUP):
            s = min(start + g, rows - 1)  # the last group repeats its last row
            row = values[s]
            for i in range(n):
                x[i] = a * row[i] - half_norms[i]  # t_i = x_i - h_i, the signal still to add
            add_weighted_signal(x, steps[s], counts[s], table, inv_s2)
            direct[g] = try_direct and not _direct_weights(x, coefs, scratch, e[g], n)
            wild[g] = False
            if not direct[g]:
                _block_weights(x, half_norms, js, log_w, peak[g], total[g], term, scratch, n)
                wild[g] = exp_row(peak[g], e[g], n)
                eg = e[g]
                tg = total[g]
                for i in range(n):
                    eg[i] *= tg[i]
        if linear:
            linear_rows(e, n, b, q, 1.0, False, f, results)
        for g in range(GROUP):
            s = start + g
            if s >= rows:
                break
            result = results[g]
            if not linear or wild[g] or result != result:
                if direct[g]:  # every G_i positive and normal
                    eg = e[g]
                    for i in range(n):
                        term[i] = math.log(eg[i])
                else:
                    pg = peak[g]
                    tg = total[g]
                    for i in range(n):
                        term[i] = pg[i] + math.log(tg[i])
                result = log_domain_row(term, n, b, log_q, 0.0, 1.0, False, g_logs)
                in_logs += 1
            out[s] = result
    return in_logs
