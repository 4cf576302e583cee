"""Compiled block factors of the sampled add-direction bound (docs/math.md §10.1, §10.1.1).

The same numbers as the array code of :mod:`~minsep.accountants.block_laws`
(:func:`~minsep.accountants.block_laws.block_factors`,
:func:`~minsep.accountants.block_laws.entry_values`), row by row with the row's buffers in
cache: the column dots ``<c_j, z>`` summed in the array code's order (``0 + c_0 z_j + c_1
z_{j+1} + ...``, no fused multiply-add), the gains ``g_j = exp(<c_j, z> / sigma - ||c_j||^2 /
(2 sigma^2))`` by the vectorised exponential of the b-min-sep kernels (2 ulp; a row with an
exponent beyond its range takes the scalar ``exp``, with numpy's overflow to inf), then the
forward pass over "available at step t" (or the backward pass over the entry states). Only the
exponential's last bits and the order of the final sum of b values differ from the array code
(relative 1e-15 on ``ln G``, pinned by the tests).

Why: numpy vectorises its float64 ``exp`` only with AVX-512, and the array code walks the
``(rows, L + b)`` passes column by column; on an AVX2 core the block draws of ``minsep train``'s
calibration took 50 of its 69 s (docs/performance.md, "Issue 29, fifth pass").
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.b_min_sep.cpu_kernels import exp_row
from minsep.schemes.kernels.jit import njit

#: Up to this many coefficients each dot is summed in a register (:func:`_narrow_dots`).
_NARROW = 8


@njit
def _narrow_dots(row: np.ndarray, c: np.ndarray, x: np.ndarray, zone: int, length: int) -> None:
    """``x[j] = 0 + c_0 z_j + c_1 z_{j+1} + ...`` (terms past the row dropped) for j < zone and
    k <= :data:`_NARROW`, each sum in a register in the order of the column passes, so the same
    bits: the missing taps are zeros, and adding ``0 * z`` leaves a sum as it is."""
    k = c.shape[0]
    c0 = c[0]
    c1 = c[1] if k > 1 else 0.0
    c2 = c[2] if k > 2 else 0.0
    c3 = c[3] if k > 3 else 0.0
    c4 = c[4] if k > 4 else 0.0
    c5 = c[5] if k > 5 else 0.0
    c6 = c[6] if k > 6 else 0.0
    c7 = c[7] if k > 7 else 0.0
    full = min(zone, length - (_NARROW - 1))
    for j in range(max(full, 0)):
        acc = 0.0
        acc = acc + c0 * row[j]
        acc = acc + c1 * row[j + 1]
        acc = acc + c2 * row[j + 2]
        acc = acc + c3 * row[j + 3]
        acc = acc + c4 * row[j + 4]
        acc = acc + c5 * row[j + 5]
        acc = acc + c6 * row[j + 6]
        acc = acc + c7 * row[j + 7]
        x[j] = acc
    for j in range(max(full, 0), zone):
        acc = 0.0
        for i in range(min(k, length - j)):
            acc = acc + c[i] * row[j + i]
        x[j] = acc


@njit
def _gains(
    row: np.ndarray,
    coefficients: np.ndarray,
    sigma: float,
    twice_variance: float,
    norms: np.ndarray,
    x: np.ndarray,
    g: np.ndarray,
    bits: np.ndarray,
) -> None:
    """``g[j] = exp(<c_j, z> / sigma - norms[j] / (2 sigma^2))`` for j < zone = ``g.size``."""
    length = row.shape[0]
    zone = g.shape[0]
    k = coefficients.shape[0]
    if k <= _NARROW:
        _narrow_dots(row, coefficients, x, zone, length)
    else:
        for j in range(zone):
            x[j] = 0.0
        for i in range(k):
            c = coefficients[i]
            for j in range(min(zone, length - i)):
                x[j] = x[j] + c * row[j + i]
    for j in range(zone):
        x[j] = x[j] / sigma - norms[j] / twice_variance
    if exp_row(x, g, bits, zone):  # some exponent beyond the polynomial's range, or NaN
        for j in range(zone):
            g[j] = math.exp(x[j])  # 0 below -745, inf above 709.78, as numpy


@njit
def zone_log_factors(
    z: np.ndarray,
    coefficients: np.ndarray,
    sigma: float,
    probability: float,
    initial: np.ndarray,
    zone: int,
    norms: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[r] = ln G_B`` of row r of ``z`` (rows x L): the forward pass ``A[t + b] += p g_t
    A[t]`` (t < zone), ``A[t + 1] += (1 - p) A[t]`` from ``A[:b] = initial``; ``G = sum A[>= L]``.
    ``norms[j] = ||c_j||^2`` cut at the block's end (j < zone)."""
    rows, length = z.shape
    b = initial.shape[0]
    x = np.empty(max(zone, 1))
    g = np.empty(zone)
    bits = np.empty(max(zone, 1), dtype=np.int64)
    avail = np.empty(length + b)
    twice_variance = 2.0 * sigma * sigma
    stay = 1.0 - probability
    for r in range(rows):
        _gains(z[r], coefficients, sigma, twice_variance, norms, x, g, bits)
        for t in range(b):
            avail[t] = initial[t]
        for t in range(b, length + b):
            avail[t] = 0.0
        here = avail[0]
        for t in range(length):  # ``here`` = A[t], final once step t - 1 has added to it
            if t < zone:
                avail[t + b] += probability * g[t] * here
            here = avail[t + 1] + stay * here
            avail[t + 1] = here
        total = 0.0
        for t in range(length, length + b):
            total += avail[t]
        out[r] = math.log(total)


@njit
def entry_log_minima(
    z: np.ndarray,
    coefficients: np.ndarray,
    sigma: float,
    probability: float,
    b: int,
    zone: int,
    entries: int,
    norms: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[r] = ln min_{s < entries} G_{B,s}`` of row r of ``z``: the backward pass ``V_t =
    (1 - p) V_{t+1} + p g_t V_{t+b}`` (the second term at t < zone), ``V_t = 1`` for t >= L."""
    rows, length = z.shape
    x = np.empty(max(zone, 1))
    g = np.empty(zone)
    bits = np.empty(max(zone, 1), dtype=np.int64)
    value = np.empty(length + b)
    twice_variance = 2.0 * sigma * sigma
    stay = 1.0 - probability
    for r in range(rows):
        _gains(z[r], coefficients, sigma, twice_variance, norms, x, g, bits)
        for t in range(length, length + b):
            value[t] = 1.0
        after = 1.0  # V_{t+1}, carried in a register
        for t in range(length - 1, -1, -1):
            # the second term at the zone steps only, as the array code adds it
            after = stay * after + probability * g[t] * value[t + b] if t < zone else stay * after
            value[t] = after
        least = value[0]
        for s in range(1, entries):
            least = min(least, value[s])
        out[r] = math.log(least)
