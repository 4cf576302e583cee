"""Fused host kernels (numba) of the truncated b-min-sep loss model (docs/math.md §6, App. D).

Draws, from the same streams as the array code:

* :func:`table_counts_major`: the public counts r, step by step over all samples (step-major,
  into a tile that :func:`scatter_steps` transposes into the ``(S, n)`` counts), by the
  inverse-CDF tables of :mod:`.counts`, its uniforms drawn in the kernel by numpy's SFC64
  algorithm (as :func:`minsep.schemes.kernels.sfc64.sfc64_doubles`: the generator's own
  stream, without a call per number);
  :func:`table_counts_steps` draws a step through numba's ``Generator`` where some N lies
  outside the tables (the order of the array code's per-step calls);
* :func:`pattern_weights`: x (or x') at the sampled steps (of
  :func:`~minsep.schemes.kernels.sampling.chain_steps`) from the survival coins, one per
  participation slot.

and :func:`truncated_rows`, ``ln P/Q`` per sample. With ``x_i = <c_i, y> / sigma^2``,
``h_i = ||c_i||^2 / (2 sigma^2)`` and ``t_i = B_max / (r_i + 1)``, the per-step weights of the
P/R and Q/R recursions are

    P: exp(x_i - h_i + ln p)                     Q: p                       (r_i < B_max)
    P: p (t_i exp(2 x_i - 4 h_i) + 1 - t_i)      Q: p (t_i exp(-x_i - h_i) + 1 - t_i)

run through b-min-sep's linear-scale recursion (warm average applied to each before the
ratio). With every exponent in ``[-LIMIT, LIMIT]``, ``p >= exp(-80)`` and ``p / (B_max + 1) >=
exp(-380)`` the weights lie in ``[exp(-380), exp(LIMIT + 1)]``, so that the recursion's
products stay normal numbers (its own checks send a row whose window still drifts out of range
to logs). A row with an exponent outside ``[-LIMIT, LIMIT]`` is redone in the log domain
(``logaddexp``), as the array code computes it, and so is every row when one of the bounds on
p fails or ``0 < 1 - p < exp(-100)``. The exps are :func:`exp_row`'s (2 ulp); folding ``ln p``
into the first exponent, as b-min-sep does, adds its rounding (a few ulp of the weight).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.b_min_sep.cpu_kernels import (
    GROUP,
    exp_row,
    linear_rows,
    log_domain_row,
)
from minsep.schemes.kernels.cpu_kernels import logaddexp
from minsep.schemes.kernels.jit import njit
from minsep.schemes.kernels.mixture_kernels import add_weighted_signal
from minsep.schemes.kernels.sfc64 import sfc64_next
from minsep.schemes.truncated.counts import SCAN, SPLIT

#: Samples :func:`scatter_steps` moves together, 8 steps at a time (their rows of counts stay
#: in cache).
SAMPLE_BLOCK = 64


@njit
def table_counts_steps(
    generator: np.random.Generator,
    others: int,
    p: float,
    low: int,
    offsets: np.ndarray,
    thresholds: np.ndarray,
    guides: np.ndarray,
    direct: np.ndarray,
    bases: np.ndarray,
    ring: np.ndarray,
    barred: np.ndarray,
    u: np.ndarray,
    counts: np.ndarray,
    t0: int,
    t1: int,
) -> None:
    """Steps ``t0 .. t1 - 1`` of the counts of
    :func:`~minsep.schemes.truncated.counts.table_counts`, same draws in the same order: per
    step, one uniform per sample, the table lookups (from the guide tables), then numpy's
    binomial for the samples whose N lies outside the tables (``low .. low + len(offsets) -
    2``). ``ring`` ``(b - 1, S)`` (the counts' integer type) holds the last counts slot-major
    and ``barred`` their sums (updated in place); ``counts`` is ``(S, n)``."""
    rows = counts.shape[0]
    ring_size = ring.shape[0]
    high = low + offsets.shape[0] - 2
    for t in range(t0, t1):
        for s in range(rows):
            u[s] = generator.random()
        slot = t % ring_size if ring_size else 0
        fallback = False
        for s in range(rows):
            avail = others - barred[s]
            if low <= avail <= high:
                sampled = _lookup(offsets, thresholds, guides, direct, bases, avail - low, u[s])
                counts[s, t] = sampled
                if ring_size:
                    barred[s] += sampled - ring[slot, s]
                    ring[slot, s] = sampled
            else:
                counts[s, t] = -1
                fallback = True
        if fallback:  # after every lookup of the step, in sample order
            for s in range(rows):
                if counts[s, t] < 0:
                    sampled = generator.binomial(others - barred[s], p)
                    counts[s, t] = sampled
                    if ring_size:
                        barred[s] += sampled - ring[slot, s]
                        ring[slot, s] = sampled


@njit
def _lookup(
    offsets: np.ndarray,
    thresholds: np.ndarray,
    guides: np.ndarray,
    direct: np.ndarray,
    bases: np.ndarray,
    k: int,
    value: float,
) -> int:
    """``#{m : F_N(m) <= value}`` for the table k (N = low + k): one byte of the direct table
    where the count is constant over the bucket of ``value``, else a scan of the thresholds
    from the bucket's start (or from the guide)."""
    entry = direct[k, int(value * direct.shape[1])]
    if entry < SPLIT:
        return int(bases[k] + entry)
    first = offsets[k]
    end = offsets[k + 1]
    if entry != SCAN:
        index = first + bases[k] + (entry - SPLIT)
    else:
        index = first + guides[k, int(value * (guides.shape[1] - 1))]
    while index < end and thresholds[index] <= value:
        index += 1
    return int(index - first)


_U11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0


@njit(inline="always")
def _log2(size: int) -> int:
    """j with ``2^j = size`` (the tables' bucket counts are powers of 2 up to 2^53)."""
    j = 0
    while (1 << j) < size:
        j += 1
    return j


@njit
def table_counts_major(
    state: np.ndarray,
    t0: int,
    t1: int,
    others: int,
    low: int,
    offsets: np.ndarray,
    thresholds: np.ndarray,
    guides: np.ndarray,
    direct: np.ndarray,
    bases: np.ndarray,
    ring: np.ndarray,
    barred: np.ndarray,
    tile: np.ndarray,
    row0: int,
) -> int:
    """Steps ``t0 .. t1 - 1`` of :func:`table_counts_steps`, step by step over all samples,
    their uniforms drawn here from numpy's SFC64 with ``state`` (its four words, advanced in
    place; the algorithm of numpy's ``sfc64_next`` and ``next_double``, so the same stream as
    the generator's): the counts of step t go to ``tile[row0 + t - t0]``, and ``ring``
    (slot-major, the count leaving the window at step t in ``ring[t % (b - 1)]``) and ``barred``
    are updated in place. Returns the steps done: fewer than ``t1 - t0`` when at step ``t0 +
    done`` some N lies outside the tables (``state``, ``ring`` and ``barred`` then hold the
    state before that step; the caller draws it through the generator).

    Every row this reads or writes is contiguous (one step of all samples), which is what makes
    it fast: a sample-major walk touches a cache line and a page per sample and step."""
    rows = barred.shape[0]
    ring_size = ring.shape[0]
    high = low + offsets.shape[0] - 2
    direct_shift = np.uint64(64 - _log2(direct.shape[1]))
    guide_shift = np.uint64(64 - _log2(guides.shape[1] - 1))
    a, b, c, w = state[0], state[1], state[2], state[3]
    spare = np.zeros(0 if ring_size else rows, ring.dtype)  # b = 1: no window to update
    for t in range(t0, t1):
        fewest = most = barred[0] if rows else 0  # min and max: vectorised, unlike a count
        for s in range(rows):
            fewest = min(fewest, barred[s])
            most = max(most, barred[s])
        if rows and (others - most < low or others - fewest > high):
            state[0], state[1], state[2], state[3] = a, b, c, w
            return t - t0
        out = tile[row0 + t - t0]
        leaving = ring[t % ring_size] if ring_size else spare
        for s in range(rows):
            word, a, b, c, w = sfc64_next(a, b, c, w)
            # the body of _lookup, inlined (a call pays for its arrays' reference counts), its
            # buckets taken from the word's top bits: with u = (word >> 11) 2^-53 (numpy's
            # next_double) and 2^j buckets, floor(u 2^j) = word >> (64 - j) exactly, and
            # the double u is formed only where the thresholds must be scanned
            k = others - barred[s] - low
            entry = direct[k, word >> direct_shift]
            if entry < SPLIT:
                sampled = bases[k] + entry
            else:
                value = float(word >> _U11) * _TWO_M53
                first = offsets[k]
                end = offsets[k + 1]
                if entry != SCAN:
                    index = first + bases[k] + (entry - SPLIT)
                else:
                    index = first + guides[k, word >> guide_shift]
                while index < end and thresholds[index] <= value:
                    index += 1
                sampled = index - first
            out[s] = sampled
            if ring_size:
                barred[s] += sampled - leaving[s]
                leaving[s] = sampled
    state[0], state[1], state[2], state[3] = a, b, c, w
    return t1 - t0


@njit
def scatter_steps(tile: np.ndarray, steps: int, counts: np.ndarray, t0: int) -> None:
    """``counts[s, t0 + j] = tile[j, s]`` for ``j < steps`` and every row s of ``counts`` (a
    transpose, in blocks of ``SAMPLE_BLOCK`` samples by 8 steps so that the lines of both sides
    stay in cache; ``tile`` may be wider than the samples)."""
    rows = counts.shape[0]
    for s0 in range(0, rows, SAMPLE_BLOCK):
        s1 = min(s0 + SAMPLE_BLOCK, rows)
        for j0 in range(0, steps, 8):
            j1 = min(j0 + 8, steps)
            for s in range(s0, s1):
                row = counts[s]
                for j in range(j0, j1):
                    row[t0 + j] = tile[j, s]


_EVEN16 = np.uint64(0x0000FFFF0000FFFF)
_ODD16 = np.uint64(0xFFFF0000FFFF0000)
_LOW32 = np.uint64(0x00000000FFFFFFFF)
_HIGH32 = np.uint64(0xFFFFFFFF00000000)
_U16 = np.uint64(16)
_U32 = np.uint64(32)


@njit
def scatter_words(tile: np.ndarray, steps: int, counts: np.ndarray, t0: int) -> None:
    """:func:`scatter_steps` for int16 counts (little-endian) with S, n, t0 and the tile's width
    multiples of 4: 4 x 4 blocks moved as four 64-bit words, transposed by masks and shifts
    (half the time of the element-wise copy, or less). The tile's rows should be padded (a
    width that is not a multiple of 4096 bytes), so that its lines do not share cache sets."""
    rows = counts.shape[0]
    words = tile.view(np.uint64)  # words[j, g]: samples 4g .. 4g + 3 at step j
    out = counts.view(np.uint64)  # out[s, q]: steps 4q .. 4q + 3 of sample s
    q0 = t0 // 4
    full = steps - steps % 4
    for g in range(rows // 4):
        s = 4 * g
        o0 = out[s]
        o1 = out[s + 1]
        o2 = out[s + 2]
        o3 = out[s + 3]
        for j in range(0, full, 4):
            w0 = words[j, g]
            w1 = words[j + 1, g]
            w2 = words[j + 2, g]
            w3 = words[j + 3, g]
            # pairs of steps per sample, then the four steps
            u0 = (w0 & _EVEN16) | ((w1 & _EVEN16) << _U16)  # samples 0, 2 at steps j, j + 1
            u1 = ((w0 >> _U16) & _EVEN16) | (w1 & _ODD16)  # samples 1, 3
            u2 = (w2 & _EVEN16) | ((w3 & _EVEN16) << _U16)
            u3 = ((w2 >> _U16) & _EVEN16) | (w3 & _ODD16)
            q = q0 + j // 4
            o0[q] = (u0 & _LOW32) | (u2 << _U32)
            o1[q] = (u1 & _LOW32) | (u3 << _U32)
            o2[q] = (u0 >> _U32) | (u2 & _HIGH32)
            o3[q] = (u1 >> _U32) | (u3 & _HIGH32)
    for j in range(full, steps):
        for s in range(rows):
            counts[s, t0 + j] = tile[j, s]


@njit
def pattern_weights(
    coins: np.ndarray,
    steps: np.ndarray,
    counts: np.ndarray,
    max_batch: int,
    remove: bool,
    weights: np.ndarray,
    row0: int,
) -> None:
    """x at the sampled steps of rows ``row0 ..``, the coin of slot j deciding at step
    ``steps[s, j]``: under REMOVE 1 (no truncation), 2 (truncation, survives: coin < t) or 0;
    under ADD -1 (survives) or 0."""
    rows, m = coins.shape
    n = counts.shape[1]
    cap = float(max_batch)
    for r in range(rows):
        s = row0 + r
        for jj in range(m):
            j = steps[s, jj]
            if j >= n:
                weights[s, jj] = 0.0
                continue
            count = counts[s, j]
            truncating = count >= max_batch
            keep = cap / max(count + 1.0, cap + 1.0)
            survives = truncating and coins[r, jj] < keep
            if remove:
                weights[s, jj] = 2.0 if survives else (0.0 if truncating else 1.0)
            else:
                weights[s, jj] = -1.0 if survives else 0.0


@njit
def _truncating_steps(counts: np.ndarray, max_batch: int, marks: np.ndarray, n: int) -> int:
    """The steps i with ``counts[i] >= max_batch`` into ``marks`` (ascending); returns their
    number. Groups of 8 steps are tested at once, and only a group with one (about 1 in 5 at
    the bench's B_max) is gathered, branch-free (the measured gain: docs/performance.md)."""
    found = 0
    top = n - n % 8
    for i0 in range(0, top, 8):
        hit = False
        for i in range(i0, i0 + 8):
            hit |= counts[i] >= max_batch
        if hit:
            for i in range(i0, i0 + 8):
                marks[found] = i
                found += counts[i] >= max_batch
    for i in range(top, n):
        marks[found] = i
        found += counts[i] >= max_batch
    return found


@njit(fastmath={"contract"})
def _truncating_weights(
    y: np.ndarray,
    half_norms: np.ndarray,
    counts: np.ndarray,
    marks: np.ndarray,
    found: int,
    max_batch: int,
    log_p: float,
    p: float,
    args: np.ndarray,
    e: np.ndarray,
    e_p: np.ndarray,
    e_q: np.ndarray,
) -> bool:
    """``e_p``, ``e_q`` at the truncating steps ``marks[:found]`` (``y_i = x_i - h_i + ln
    p``): ``p (t_i exp(a) + 1 - t_i)`` with ``a = 2 x_i - 4 h_i`` (P) and ``-x_i - h_i`` (Q),
    the 2 * found exps in one :func:`exp_row`; True when one of them is outside ``[-LIMIT,
    LIMIT]`` (the row then needs logs)."""
    for j in range(found):
        i = marks[j]
        x_h = y[i] - log_p  # x_i - h_i
        args[2 * j] = 2.0 * x_h - 2.0 * half_norms[i]
        args[2 * j + 1] = -x_h - 2.0 * half_norms[i]
    wild = exp_row(args, e, 2 * found)
    cap = float(max_batch)
    for j in range(found):
        i = marks[j]
        keep = cap / max(counts[i] + 1.0, cap + 1.0)
        drop = 1.0 - keep
        e_p[i] = p * (keep * e[2 * j] + drop)
        e_q[i] = p * (keep * e[2 * j + 1] + drop)
    return wild


@njit
def _log_weights(
    y: np.ndarray,
    half_norms: np.ndarray,
    counts: np.ndarray,
    max_batch: int,
    log_p: float,
    l_p: np.ndarray,
    l_q: np.ndarray,
    n: int,
) -> None:
    """The log-domain weights of one row (the array code's expressions, from ``y_i = x_i -
    h_i + ln p``)."""
    cap = float(max_batch)
    for i in range(n):
        count = counts[i]
        if count >= max_batch:
            keep = cap / max(count + 1.0, cap + 1.0)
            log_keep, log_drop = math.log(keep), math.log1p(-keep)
            x_h = y[i] - log_p
            l_p[i] = log_p + logaddexp(log_keep + 2.0 * x_h - 2.0 * half_norms[i], log_drop)
            l_q[i] = log_p + logaddexp(log_keep - x_h - 2.0 * half_norms[i], log_drop)
        else:
            l_p[i] = y[i]
            l_q[i] = log_p


@njit
def truncated_rows(
    values: np.ndarray,
    steps: np.ndarray,
    weights: np.ndarray,
    counts: np.ndarray,
    table: np.ndarray,
    half_norms: np.ndarray,
    a: float,
    inv_s2: float,
    p: float,
    b: int,
    warm: bool,
    max_batch: int,
    out: np.ndarray,
) -> int:
    """``out[s] = ln P(y|r)/Q(y|r)`` of truncated b-min-sep for every row s; returns the rows
    done in logs.

    ``values`` ``(S, n)``: noise correlations (``a = 1/sigma``) or dots ``<c_i, y>`` (``a =
    1/sigma^2``); ``steps`` / ``weights`` ``(S, m)``: the sampled steps and x there (``m =
    0``: no signal); ``counts`` ``(S, n)``: r; ``half_norms[i] = ||c_i||^2 / (2 sigma^2)``.

    Per row: ``y_i = x_i - h_i + ln p`` (the exponent of b-min-sep's weight), one vectorised
    exp of y for the P weights of the free steps, the truncating steps (about 3% of them at
    the bench's B_max) gathered and their 2 exps per step done in one more vectorised call;
    the Q weights stay p except there (set, then reset after the recursion).
    """
    rows, n = values.shape
    q = 1.0 - p
    log_q = math.log(q) if q > 0.0 else -np.inf
    log_p = math.log(p)
    # bounds of the linear recursion: stay weight >= e^-100, step weights >= e^-380
    linear = (q == 0.0 or log_q >= -100.0) and log_p - math.log(max_batch + 1.0) >= -380.0
    linear = linear and log_p >= -80.0
    base = log_p - half_norms
    y = np.empty((GROUP, n))
    marks = np.empty((GROUP, n), dtype=np.int64)
    found = np.zeros(GROUP, dtype=np.int64)
    args = np.empty(2 * n)
    e2 = np.empty(2 * n)
    e_p = np.empty((GROUP, n))
    e_q = np.full((GROUP, n), p)
    f = np.empty((GROUP, n + b))
    l_p = np.empty(n)
    l_q = np.empty(n)
    g_logs = np.empty(n + b)
    res_p = np.empty(GROUP)
    res_q = np.empty(GROUP)
    wild = np.zeros(GROUP, dtype=np.bool_)
    in_logs = 0
    for start in range(0, rows, GROUP):
        for g in range(GROUP):
            s = min(start + g, rows - 1)  # the last group repeats its last row
            row = values[s]
            yg = y[g]
            for i in range(n):
                yg[i] = a * row[i] + base[i]
            add_weighted_signal(yg, steps[s], weights[s], table, inv_s2)
            wild[g] = exp_row(yg, e_p[g], n)
            found[g] = _truncating_steps(counts[s], max_batch, marks[g], n)
            wild[g] |= _truncating_weights(
                yg, half_norms, counts[s], marks[g], found[g], max_batch, log_p, p, args, e2,
                e_p[g], e_q[g],
            )  # fmt: skip
        if linear:
            linear_rows(e_p, n, b, q, p, warm, f, res_p)
            linear_rows(e_q, n, b, q, p, warm, f, res_q)
        for g in range(GROUP):
            for j in range(found[g]):
                e_q[g, marks[g, j]] = p
        for g in range(GROUP):
            s = start + g
            if s >= rows:
                break
            result = res_p[g] - res_q[g]
            if not linear or wild[g] or result != result:
                _log_weights(y[g], half_norms, counts[s], max_batch, log_p, l_p, l_q, n)
                result = log_domain_row(l_p, n, b, log_q, log_p, p, warm, g_logs)
                result -= log_domain_row(l_q, n, b, log_q, log_p, p, warm, g_logs)
                in_logs += 1
            out[s] = result
    return in_logs
