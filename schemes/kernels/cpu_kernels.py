"""Compiled host kernels (numba) shared by several loss models: the direct correlation of the
noise with c, the log-domain recursion rows of the mixture models, and the participation steps
of the b-min-sep chain. Each computes what the portable array code of :mod:`.blocks`,
:mod:`.recursion` and :mod:`.sampling` computes (docs/math.md §2-§3), in the same float
operations where the random stream is concerned; numba compiles them on first use (cached on
disk). The b-min-sep rows live with their family (:mod:`minsep.schemes.b_min_sep.cpu_kernels`).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.kernels.jit import njit


@njit
def logaddexp(a: float, b: float) -> float:
    """numpy's ``logaddexp`` for two scalars, compiled."""
    hi = max(a, b)
    if math.isinf(hi):  # -inf + -inf, or an infinite term: as numpy's logaddexp
        return hi
    return hi + math.log1p(math.exp(-abs(a - b)))


@njit
def log_recursion_rows(log_go: np.ndarray, log_q: float, b: int, out: np.ndarray) -> None:
    """``out[s, j] = g_j`` (j < b) of ``g_i = logaddexp(log_q + g_{i+1}, log_go[s, i] +
    g_{i+b})``, ``g_j = 0`` for j >= n (``log_q = -inf`` drops the stay branch): the
    log-domain recursion of :mod:`.recursion` for every row, used by the models whose block
    terms are mixtures (multi-attribution, truncation)."""
    rows, n = log_go.shape
    g = np.empty(n + b)
    stays = log_q > -np.inf
    for s in range(rows):
        row = log_go[s]
        for j in range(n, n + b):
            g[j] = 0.0
        for i in range(n - 1, -1, -1):
            go = row[i] + g[i + b]
            g[i] = logaddexp(log_q + g[i + 1], go) if stays else go
        for j in range(b):
            out[s, j] = g[j]


#: Outputs per tile of the direct correlation (a tile and its inputs stay in L1).
TILE = 512


#: Up to this many bands :func:`correlate_row` sums every output in registers
#: (:func:`_correlate_row_narrow`) instead of making k passes over a tile.
NARROW_BANDS = 8


@njit(fastmath={"contract"})
def _correlate_row_narrow(src: np.ndarray, c: np.ndarray, dst: np.ndarray, n: int) -> None:
    """:func:`correlate_row` for k <= :data:`NARROW_BANDS`: each output summed in a register,
    ``c_0 src[i]`` then ``+ c_j src[i + j]`` for j = 1, 2, ... in order (the order of the tiled
    passes). The taps beyond k are zero, and adding ``0 * src[i + j]`` leaves a finite sum as it
    is, so the bits are those of the sum over j < k; the last 7 outputs, where the taps would
    read past n, take the scalar sum. One load per tap and one store per output, against a load
    and a store of the tile per tap (docs/performance.md)."""
    k = c.shape[0]
    c0 = c[0]
    c1 = c[1] if k > 1 else 0.0
    c2 = c[2] if k > 2 else 0.0
    c3 = c[3] if k > 3 else 0.0
    c4 = c[4] if k > 4 else 0.0
    c5 = c[5] if k > 5 else 0.0
    c6 = c[6] if k > 6 else 0.0
    c7 = c[7] if k > 7 else 0.0
    top = max(0, n - (NARROW_BANDS - 1))
    for i in range(top):
        # from +0.0, so that every step contracts to fma(c_j, src, acc) whatever the compiler
        # pairs: (c_0 src) + (c_1 src) could otherwise fuse either product
        acc = 0.0
        acc += c0 * src[i]
        acc += c1 * src[i + 1]
        acc += c2 * src[i + 2]
        acc += c3 * src[i + 3]
        acc += c4 * src[i + 4]
        acc += c5 * src[i + 5]
        acc += c6 * src[i + 6]
        acc += c7 * src[i + 7]
        dst[i] = acc
    for i in range(top, n):
        acc = 0.0
        acc += c0 * src[i]
        for j in range(1, min(k, n - i)):
            acc += c[j] * src[i + j]
        dst[i] = acc


@njit(fastmath={"contract"})
def correlate_row(src: np.ndarray, c: np.ndarray, dst: np.ndarray, n: int) -> None:
    """``dst[i] = sum_j c_j src[i + j]`` over ``i + j < n`` (direct), as k vectorised passes over
    tiles of :data:`TILE` outputs (up to :data:`NARROW_BANDS` bands: each output in registers,
    in the same order). The one evaluation order of the direct sum: the fused kernels that
    correlate a row in place call it too, so both give the same bits."""
    if c.shape[0] <= NARROW_BANDS:
        _correlate_row_narrow(src, c, dst, n)
    else:
        _correlate_row_tiled(src, c, dst, n)


@njit(fastmath={"contract"})
def _correlate_row_tiled(src: np.ndarray, c: np.ndarray, dst: np.ndarray, n: int) -> None:
    """:func:`correlate_row` as k passes over tiles of :data:`TILE` outputs: ``c_0 src``, then
    ``+= c_j src`` for j = 1, 2, ... (each a fused multiply-add)."""
    k = c.shape[0]
    c0 = c[0]
    for lo in range(0, n, TILE):
        hi = min(n, lo + TILE)
        tile = dst[lo:hi]
        head = src[lo:hi]
        for t in range(hi - lo):
            tile[t] = c0 * head[t]
        for j in range(1, k):
            cj = c[j]
            span = min(hi, n - j) - lo
            shifted = src[lo + j : lo + j + max(span, 0)]
            for t in range(span):
                tile[t] += cj * shifted[t]


@njit
def correlate_rows(z: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    """``out[r, i] = sum_j c_j z[r, i + j]`` over ``i + j < n`` (direct, O(n k) per row):
    :func:`correlate_row` for every row."""
    rows, n = z.shape
    for r in range(rows):
        correlate_row(z[r], c, out[r], n)


@njit
def multiply_spectra(spectra: np.ndarray, real: np.ndarray, imag: np.ndarray) -> None:
    """``spectra[r] *= kernel`` for every row, the spectra's complex numbers stored as (real,
    imaginary) float64 pairs and the kernel's as two arrays ``real``, ``imag``: ``(a + bi)(c +
    di) = (ac - bd) + (ad + bc)i``, each product rounded, in plain IEEE arithmetic (no fused
    multiply-add, so every machine gives the same bits). The spectral product of the FFT
    correlations; the kernel split in two contiguous arrays lets the loop vectorise, where an
    interleaved kernel kept it scalar (the measured cost: docs/performance.md)."""
    rows = spectra.shape[0]
    half = real.shape[0]
    for r in range(rows):
        row = spectra[r]
        for h in range(half):
            a, b = row[2 * h], row[2 * h + 1]
            c, d = real[h], imag[h]
            row[2 * h] = a * c - b * d
            row[2 * h + 1] = a * d + b * c


@njit
def chain_round(
    waits: np.ndarray, active: np.ndarray, alive: int, times: np.ndarray, n: int, row: np.ndarray
) -> int:
    """One round of :func:`~minsep.schemes.kernels.sampling.chain_steps`: the i-th of the
    ``alive`` samples listed in ``active`` moves to ``t + waits[i]`` (``waits = min(floor(ln(1 -
    u) / ln(1 - p)), n) + b`` from :func:`~minsep.schemes.kernels.chain_logs.round_waits`; the
    array code's IEEE addition), records it in ``row[s]`` while inside the horizon, and stays
    listed only then. Returns the new count.

    A sample listed in round r has recorded r - 1 steps, so ``row`` is the round's slot of every
    sample (one row of a round-major array that :func:`rounds_to_steps` transposes): the writes
    of a round stay in one row of S values, where writing ``out[s, slot]`` straight into the
    ``(S, m)`` steps touched a cache line per sample and round (the measured cost:
    docs/performance.md)."""
    nf = float(n)
    kept = 0
    for i in range(alive):
        s = active[i]
        t = times[s] + waits[i]
        times[s] = t
        if t < nf:
            row[s] = np.int32(t)
            active[kept] = s
            kept += 1
    return kept


#: Samples :func:`rounds_to_steps` moves together (their rows of steps stay in cache).
ROUND_BLOCK = 64


@njit
def rounds_to_steps(rounds: np.ndarray, used: int, n: int, out: np.ndarray) -> None:
    """``out[s, j] = rounds[j, s]`` for the ``used`` rounds, and the sentinel n in the later
    slots: the round-major slots of :func:`chain_round` as the ``(S, m)`` steps (a blocked
    transpose)."""
    samples, m = out.shape
    for s0 in range(0, samples, ROUND_BLOCK):
        s1 = min(s0 + ROUND_BLOCK, samples)
        for j in range(min(used, m)):
            source = rounds[j]
            for s in range(s0, s1):
                out[s, j] = source[s]
        for s in range(s0, s1):
            for j in range(min(used, m), m):
                out[s, j] = n
