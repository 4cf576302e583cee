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


@njit(fastmath={"contract"})
def correlate_row(src: np.ndarray, c: np.ndarray, dst: np.ndarray, n: int) -> None:
    """``dst[i] = sum_j c_j src[i + j]`` over ``i + j < n`` (direct), as k vectorised passes over
    tiles of :data:`TILE` outputs. The one evaluation order of the direct sum: the fused
    kernels that correlate a row in place call it too, so both give the same bits."""
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
def chain_round(
    logs: np.ndarray,
    active: np.ndarray,
    alive: int,
    times: np.ndarray,
    counts: np.ndarray,
    log_stay: float,
    b: int,
    n: int,
    out: np.ndarray,
) -> int:
    """One round of :func:`~minsep.schemes.kernels.sampling.chain_steps`: the i-th of the
    ``alive`` samples listed in ``active`` moves to ``t + min(floor(logs[i] / log_stay), n) +
    b`` (``logs = ln(1 - u)``; the array code's IEEE operations in the same order), records it
    in ``out`` while inside the horizon, and stays listed only then. Returns the new count."""
    nf = float(n)
    kept = 0
    for i in range(alive):
        s = active[i]
        t = times[s] + (min(np.floor(logs[i] / log_stay), nf) + b)
        times[s] = t
        if t < nf:
            out[s, counts[s]] = np.int32(t)
            counts[s] += 1
            active[kept] = s
            kept += 1
    return kept
