"""Fused host kernels (numba) of the b-min-sep loss model: exp and the Theorem 5.1 recursion.

One call handles a whole chunk of samples, one sample (row) at a time, with row buffers
reused across rows; numba compiles them on first use (cached on disk). The math is that of
:mod:`minsep.schemes.kernels.blocks` and :mod:`minsep.schemes.kernels.recursion` (docs/math.md
§2-§3); only the evaluation order differs:

* ``x_i = ln(p r_i) = a * v_i + base_i + signal_i / sigma^2`` (``v`` the stored noise
  correlations, ``a = 1/sigma``; or the dots ``<c_i, y>`` with ``a = 1/sigma^2``), the signal
  added sparsely from the participation steps through the cross-Gram table of
  :func:`signal_table` (O(k) per participation instead of a dense correlation);
* ``e_i = exp(x_i)`` by a branch-free polynomial that the compiler vectorises (2 ulp), for
  ``|x_i| <= LIMIT`` (a row with a larger ``|x_i|`` goes to the log domain);
* the recursion ``f_i = q f_{i+1} + e_i f_{i+b}`` in linear scale with a per-sample log scale.

**Exactness of the linear-scale recursion.** A row takes it only while every quantity stays in
the normal float64 range: ``|x_i| <= LIMIT`` and every live value ``f_i .. f_{i+b-1}`` (after
renormalising the window by its maximum whenever a new value leaves ``[LOW, HIGH]``) stays at
least ``FLOOR``. Then every product and sum is of positive normal numbers, so no term is
flushed and the relative error is that of the log-domain recursion (a few ulp per step). A row
that would break the bound (e.g. sigma below ~0.03, or p within 1e-100 of 1 over long windows)
is recomputed in the log domain (``logaddexp``, two transcendentals per step). Which rows take
which path does not change a result beyond rounding.
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.kernels.cpu_kernels import correlate_row, logaddexp
from minsep.schemes.kernels.float_bits import as_bits, from_bits
from minsep.schemes.kernels.jit import njit

#: Rows with some ``|ln(p r_i)|`` above this take the log-domain recursion.
LIMIT = 300.0
#: A new value outside ``[LOW, HIGH]`` renormalises the live window to maximum 1.
HIGH = math.exp(200.0)
LOW = math.exp(-200.0)
#: A live value below this after renormalising sends the row to the log domain.
FLOOR = math.exp(-300.0)

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # fdlibm's split of ln 2: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
#: 1.5 * 2^52: ``v + _SHIFTER`` rounds v to an integer held in the low mantissa bits.
_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = int(np.float64(_SHIFTER).view(np.int64))
# e^r ~ sum_j _Cj r^j on |r| <= ln(2)/2: the degree-11 interpolant of e^r at the 12 Chebyshev
# nodes of that interval, its monomial coefficients computed in 60-digit arithmetic (mpmath) and
# rounded to float64. Truncation error < 4.3e-18 relative (the degree-13 Taylor polynomial's is
# 5e-18, for two more multiply-adds); the result is within 2 ulp of e^x
# (tests/unit/schemes/kernels/test_kernels.py).
_C11 = 2.5110037605963777e-08
_C10 = 2.763263963904103e-07
_C9 = 2.755724091857897e-06
_C8 = 2.4801485482328494e-05
_C7 = 0.00019841269890047113
_C6 = 0.0013888888952314775
_C5 = 0.008333333333319601
_C4 = 0.0416666666664881
_C3 = 0.1666666666666668
_C2 = 0.5000000000000019


@njit(fastmath={"contract"})
def exp_row(x: np.ndarray, out: np.ndarray, n: int) -> bool:
    """``out[:n] = exp(clamp(x[:n], -LIMIT, LIMIT))``, vectorisable; True when some ``x`` was
    outside ``[-LIMIT, LIMIT]`` or NaN (the row then needs the log domain).

    Cody-Waite reduction ``x = m ln 2 + r``, a degree-11 polynomial for ``e^r`` and the
    factor ``2^m`` assembled from its exponent bits. Within 2 ulp of the correctly rounded value.
    ``m`` is rounded by adding :data:`_SHIFTER` (its float64 sum holds ``m`` in the low mantissa
    bits), so that no float-to-integer conversion is needed: AVX2 has no packed one, and with it
    the loop ran scalar. The bits of ``2^m`` come from those of the sum by integer arithmetic on
    the same register (:func:`~minsep.schemes.kernels.float_bits.as_bits`), in the one loop
    (the measured costs: docs/performance.md).
    """
    bad = 0
    for i in range(n):
        raw = x[i]
        v = min(max(raw, -LIMIT), LIMIT)
        bad += v != raw  # outside [-LIMIT, LIMIT], or NaN (never equal to itself)
        held = v * _LOG2E + _SHIFTER
        m = held - _SHIFTER  # the integer nearest v / ln 2, |m| <= 433 < 2^51
        r = (v - m * _LN2_HI) - m * _LN2_LO
        poly = _C11
        poly = poly * r + _C10
        poly = poly * r + _C9
        poly = poly * r + _C8
        poly = poly * r + _C7
        poly = poly * r + _C6
        poly = poly * r + _C5
        poly = poly * r + _C4
        poly = poly * r + _C3
        poly = poly * r + _C2
        poly = poly * r + 1.0
        poly = poly * r + 1.0
        # 2^m: the biased exponent m + 1023 in the exponent field (m = bits - _SHIFTER_BITS)
        out[i] = poly * from_bits((as_bits(held) - _SHIFTER_BITS + 1023) << 52)
    return bad > 0


@njit
def log_domain_row(
    x: np.ndarray, n: int, b: int, log_q: float, log_p: float, p: float, warm: bool, g: np.ndarray
) -> float:
    """The recursion in logs (``g = ln f``, ``log_q = -inf`` drops the stay branch): exact for
    every input, two transcendentals per step."""
    for j in range(n, n + b):
        g[j] = 0.0
    stays = log_q > -np.inf
    for i in range(n - 1, -1, -1):
        go = x[i] + g[i + b]
        g[i] = logaddexp(log_q + g[i + 1], go) if stays else go
    if not warm:
        return float(g[0])
    total = g[0]
    for j in range(1, b):
        total = logaddexp(total, log_p + g[j])
    return float(total - math.log1p((b - 1) * p))


#: Rows interleaved by the linear-scale recursion (independent chains hide FMA latency).
GROUP = 4


@njit
def _renormalise(
    f: np.ndarray, g: int, i: int, b: int, v: float, log_scale: float, ok: bool
) -> tuple[float, float, bool]:
    """Divide the live window ``f[g, i+1 : i+b]`` and the new value ``v`` by their maximum."""
    top = v
    for j in range(i + 1, i + b):
        top = max(top, f[g, j])
    if not (top > 0.0 and top < np.inf):
        return 1.0, log_scale, False
    inv = 1.0 / top
    v *= inv
    low = v
    for j in range(i + 1, i + b):
        f[g, j] *= inv
        low = min(low, f[g, j])
    return v, log_scale + math.log(top), ok and low >= FLOOR


@njit
def _finish(f: np.ndarray, g: int, b: int, p: float, warm: bool, log_scale: float) -> float:
    if not warm:
        return math.log(f[g, 0]) + log_scale
    total = 0.0
    for j in range(1, b):
        total += f[g, j]
    return math.log(f[g, 0] + p * total) + log_scale - math.log1p((b - 1) * p)


@njit(fastmath={"contract"})
def linear_rows(
    e: np.ndarray, n: int, b: int, q: float, p: float, warm: bool, f: np.ndarray, out: np.ndarray
) -> None:
    """The recursion ``f_i = q f_{i+1} + e_i f_{i+b}`` for the ``GROUP`` rows of ``e`` at once,
    in linear scale with renormalisation; ``out[g]`` is NaN where a bound of the module
    docstring breaks (the caller then takes :func:`log_domain_row`). ``f``: ``(GROUP, n + b)``.

    The inner loop has no calls (values stay in registers); a step where some value leaves
    ``[LOW, HIGH]`` is redone in the outer loop, which renormalises the rows concerned.
    """
    for g in range(GROUP):
        for j in range(n, n + b):
            f[g, j] = 1.0
    s0 = s1 = s2 = s3 = 0.0
    ok0 = ok1 = ok2 = ok3 = True
    v0 = v1 = v2 = v3 = 1.0
    i = n - 1
    while i >= 0:
        while i >= 0:  # fast path: every new value in range
            w0 = q * v0 + e[0, i] * f[0, i + b]
            w1 = q * v1 + e[1, i] * f[1, i + b]
            w2 = q * v2 + e[2, i] * f[2, i + b]
            w3 = q * v3 + e[3, i] * f[3, i + b]
            if not (min(min(w0, w1), min(w2, w3)) >= LOW and max(max(w0, w1), max(w2, w3)) <= HIGH):
                break
            f[0, i] = v0 = w0
            f[1, i] = v1 = w1
            f[2, i] = v2 = w2
            f[3, i] = v3 = w3
            i -= 1
        if i < 0:
            break
        w0 = q * v0 + e[0, i] * f[0, i + b]
        w1 = q * v1 + e[1, i] * f[1, i + b]
        w2 = q * v2 + e[2, i] * f[2, i + b]
        w3 = q * v3 + e[3, i] * f[3, i + b]
        if not LOW <= w0 <= HIGH:
            w0, s0, ok0 = _renormalise(f, 0, i, b, w0, s0, ok0)
        if not LOW <= w1 <= HIGH:
            w1, s1, ok1 = _renormalise(f, 1, i, b, w1, s1, ok1)
        if not LOW <= w2 <= HIGH:
            w2, s2, ok2 = _renormalise(f, 2, i, b, w2, s2, ok2)
        if not LOW <= w3 <= HIGH:
            w3, s3, ok3 = _renormalise(f, 3, i, b, w3, s3, ok3)
        f[0, i] = v0 = w0
        f[1, i] = v1 = w1
        f[2, i] = v2 = w2
        f[3, i] = v3 = w3
        i -= 1
    out[0] = _finish(f, 0, b, p, warm, s0) if ok0 else np.nan
    out[1] = _finish(f, 1, b, p, warm, s1) if ok1 else np.nan
    out[2] = _finish(f, 2, b, p, warm, s2) if ok2 else np.nan
    out[3] = _finish(f, 3, b, p, warm, s3) if ok3 else np.nan


@njit
def scratch_size(n: int, b: int) -> int:
    """float64 values of the row buffers of :func:`b_min_sep_rows_in` (about ``13 n + 5 b``)."""
    return (3 * GROUP + 1) * n + (GROUP + 1) * b


@njit
def b_min_sep_rows(
    values: np.ndarray,
    steps: np.ndarray,
    table: np.ndarray,
    base: np.ndarray,
    a: float,
    inv_s2: float,
    log_p: float,
    q: float,
    p: float,
    b: int,
    warm: bool,
    out: np.ndarray,
) -> int:
    """:func:`b_min_sep_rows_in` with row buffers of its own (values: correlations or dots)."""
    work = np.empty(scratch_size(values.shape[1], b))
    return b_min_sep_rows_in(
        values, _NO_COEFFICIENTS, steps, table, base, a, inv_s2, log_p, q, p, b, warm, out, work
    )


@njit
def b_min_sep_rows_in(
    values: np.ndarray,
    coefficients: np.ndarray,
    steps: np.ndarray,
    table: np.ndarray,
    base: np.ndarray,
    a: float,
    inv_s2: float,
    log_p: float,
    q: float,
    p: float,
    b: int,
    warm: bool,
    out: np.ndarray,
    work: np.ndarray,
) -> int:
    """``out[s] = ln P/Q`` of b-min-sep for every row s; returns the rows done in logs.

    ``values`` ``(S, n)``: noise correlations (``a = 1/sigma``) or dots (``a = 1/sigma^2``);
    or, with ``coefficients`` c non-empty, the normals z whose correlations ``<c_i, z>`` are
    taken row by row in place (:func:`~minsep.schemes.kernels.cpu_kernels.correlate_row`, the
    direct sum's one evaluation order: the same bits as correlating first, without writing the
    correlations out and reading them back);
    ``steps`` ``(S, m)`` int32 participation steps, ascending, ``>= n`` once done (``m = 0``:
    no signal); ``table`` from :func:`signal_table`; ``base[i] = ln p - ||c_i||^2 / (2
    sigma^2)``; ``work``: at least :func:`scratch_size` float64 values of row buffers (a caller
    evaluating block after block passes the same ones: buffers of this size, allocated fresh,
    would be mapped and faulted in on every call).
    """
    rows, n = values.shape
    m = steps.shape[1]
    k = table.shape[0]
    x = work[: GROUP * n].reshape((GROUP, n))
    e = work[GROUP * n : 2 * GROUP * n].reshape((GROUP, n))
    at = 2 * GROUP * n
    f = work[at : at + GROUP * (n + b)].reshape((GROUP, n + b))
    at += GROUP * (n + b)
    g_logs = work[at : at + n + b]
    results = np.empty(GROUP)
    wild = np.zeros(GROUP, dtype=np.bool_)
    log_q = math.log(q) if q > 0.0 else -np.inf
    full = inv_s2 * table[k - 1]  # blocks not cut by the horizon
    correlate = coefficients.shape[0] > 0
    in_logs = 0
    for start in range(0, rows, GROUP):
        for g in range(GROUP):
            s = min(start + g, rows - 1)  # the last group repeats its last row
            row = values[s]
            xg = x[g]
            if correlate:
                correlate_row(row, coefficients, xg, n)
                for i in range(n):
                    xg[i] = a * xg[i] + base[i]
            else:
                for i in range(n):
                    xg[i] = a * row[i] + base[i]
            for jj in range(m):
                j = steps[s, jj]
                if j >= n:
                    break
                lo = max(0, j - k + 1)
                if j + k <= n - k + 1:  # every i < j + k has n - 1 - i >= k - 1
                    seg = xg[lo : j + k]
                    src = full[lo - j + k - 1 :]
                    for t in range(j + k - lo):
                        seg[t] += src[t]
                else:
                    for i in range(lo, min(n, j + k)):
                        xg[i] += inv_s2 * table[min(k - 1, n - 1 - i), i - j + k - 1]
            wild[g] = exp_row(xg, e[g], n)
        linear_rows(e, n, b, q, p, warm, f, results)
        for g in range(GROUP):
            s = start + g
            if s >= rows:
                break
            result = results[g]
            if wild[g] or result != result:
                result = log_domain_row(x[g], n, b, log_q, log_p, p, warm, g_logs)
                in_logs += 1
            out[s] = result
    return in_logs


#: ``coefficients`` of :func:`b_min_sep_rows_in` when the values are correlations already.
_NO_COEFFICIENTS = np.empty(0)


def signal_table(coefficients: np.ndarray, n_steps: int) -> np.ndarray:
    """``T[M, d + k - 1] = sum_{m = max(0, -d)}^{min(M, k - 1 - d)} c_m c_{m + d}`` (host).

    With ``c`` the effective coefficients (k = their number), ``<c_i, C e_j> = T[min(k - 1, n -
    1 - i), i - j + k - 1]`` for ``|i - j| < k``: the block of step i against the column of a
    participation at j, cut at row n (docs/math.md §2). Shape ``(k, 2k - 1)``, 8 k (2k - 1) bytes.
    """
    c = np.asarray(coefficients, dtype=np.float64)[: max(1, min(len(coefficients), n_steps))]
    k = int(c.size)
    table = np.zeros((k, 2 * k - 1))
    for d in range(-(k - 1), k):
        lo = max(0, -d)
        hi = k - 1 - max(d, 0)  # last m with c_{m + d} defined
        products = c[lo : hi + 1] * c[lo + d : hi + 1 + d]
        running = np.cumsum(products)
        for big_m in range(k):
            last = min(big_m, hi)
            table[big_m, d + k - 1] = running[last - lo] if last >= lo else 0.0
    return table
