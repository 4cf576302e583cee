"""Compiled block factors of the sampled add-direction bound (docs/math.md §10.1, §10.1.1).

The same numbers as the array code of :mod:`~minsep.accountants.block_laws`
(:func:`~minsep.accountants.block_laws.block_factors`,
:func:`~minsep.accountants.block_laws.entry_values`), row by row with the row's buffers in
cache: the column dots ``<c_j, z>`` by the direct correlation of the noise kernels
(:func:`~minsep.schemes.kernels.cpu_kernels.correlate_row`, fused multiply-adds), the gains
``g_j = exp(<c_j, z> / sigma - ||c_j||^2 / (2 sigma^2))`` by the vectorised exponential of the
b-min-sep kernels (2 ulp; a row with an exponent beyond its range takes the scalar ``exp``, with
numpy's overflow to inf), then the forward pass over "available at step t" (or the backward pass
over the entry states) in the array code's order. The dots' and the exponential's last bits and
the order of the final sum of b values differ from the array code (relative 1e-15 on ``ln G``,
pinned by the tests).

Why: numpy vectorises its float64 ``exp`` only with AVX-512, and the array code walks the
``(rows, L + b)`` passes column by column; on an AVX2 core the block draws of ``minsep train``'s
calibration took 50 of its 69 s (docs/performance.md, "Issue 29, fifth pass").
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.b_min_sep.cpu_kernels import exp_row
from minsep.schemes.kernels.cpu_kernels import correlate_row
from minsep.schemes.kernels.jit import njit


@njit
def _buffers(length: int, zone: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A row's scratch: the exponents (length), the gains (zone) and the pass over ``length +
    b`` steps."""
    return (
        np.empty(length),
        np.empty(zone),
        np.empty(length + b),
    )


@njit
def _gains(
    row: np.ndarray,
    coefficients: np.ndarray,
    sigma: float,
    twice_variance: float,
    norms: np.ndarray,
    x: np.ndarray,
    g: np.ndarray,
) -> None:
    """``g[j] = exp(<c_j, z> / sigma - norms[j] / (2 sigma^2))`` for j < zone = ``g.size``;
    ``x``: scratch of the row's length."""
    zone = g.shape[0]
    correlate_row(row, coefficients, x, row.shape[0])  # <c_j, z>, cut at the block's end
    for j in range(zone):
        x[j] = x[j] / sigma - norms[j] / twice_variance
    if exp_row(x, g, zone):  # some exponent beyond the polynomial's range, or NaN
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
    x, g, avail = _buffers(length, zone, b)
    twice_variance = 2.0 * sigma * sigma
    stay = 1.0 - probability
    for r in range(rows):
        _gains(z[r], coefficients, sigma, twice_variance, norms, x, g)
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
    x, g, value = _buffers(length, zone, b)
    twice_variance = 2.0 * sigma * sigma
    stay = 1.0 - probability
    for r in range(rows):
        _gains(z[r], coefficients, sigma, twice_variance, norms, x, g)
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
