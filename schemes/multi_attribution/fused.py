"""Host drivers of the fused multi-attribution kernels (the ``"numba"`` kernel set; docs/math.md
§5): the user's participations drawn from the array code's uniforms and kept sparsely, and
``ln P/Q`` for a whole chunk in one compiled call (:mod:`.cpu_kernels`).

Memory: the transcript holds the noise correlations (``8 n`` bytes per sample) and, under
REMOVE, the steps and counts of the user's participations (``8 ceil(n / b)``); drawing adds
one block of uniforms (256 KiB), evaluating ``8 (21 n + 5 b)`` bytes of row buffers.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.kernel_table import Participation
from minsep.schemes.b_min_sep.cpu_kernels import LIMIT
from minsep.schemes.b_min_sep.fused import signal_table
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.mixture_kernels import host_array, uniform_blocks
from minsep.schemes.kernels.sampling import binomial_thresholds
from minsep.schemes.multi_attribution import cpu_kernels


def host_user_steps(
    n_samples: int,
    n_steps: int,
    probability: float,
    min_sep: int,
    max_user_examples: int,
    rng: RandomSource,
) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, counts)``, int32 ``(S, ceil(n / b))`` each: the steps where the user's count
    is positive (ascending, then n) and the counts there (then 0), from the same uniforms as
    :func:`~minsep.schemes.kernels.sampling.user_participation`."""
    m = -(-n_steps // min_sep)
    steps = np.empty((n_samples, m), dtype=np.int32)
    counts = np.empty((n_samples, m), dtype=np.int32)
    thresholds = binomial_thresholds(max_user_examples, probability)
    for start, block in uniform_blocks(n_samples, n_steps, rng):
        cpu_kernels.user_steps(block, thresholds, min_sep, steps, counts, start)
    return steps, counts


@functools.lru_cache(maxsize=64)
def _terms(weights: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    js = np.asarray([j for j in range(1, len(weights)) if math.isfinite(weights[j])], float)
    log_w = np.asarray([weights[int(j)] for j in js], dtype=np.float64)
    js.setflags(write=False)
    log_w.setflags(write=False)
    return js, log_w


#: Largest count J for which G_i is tried as a polynomial in exp(x_i - h_i): the direct form
#: needs ``|x_i - h_i| <= LIMIT / J``, which for larger J fails too often to pay.
MAX_DIRECT_COUNT = 32


def direct_coefficients(
    half_norms: np.ndarray, js: np.ndarray, log_w: np.ndarray, bands: int
) -> np.ndarray:
    """``a_ij = w_j exp(-j (j-1) h_i)`` for j = 1..J (column j - 1; 0 where ``w_j = 0``): row 0
    for the steps ``i < n0 = n - bands + 1`` (``h_i = h_0``), row ``1 + i - n0`` for the last
    ``bands - 1`` steps (``bands``: the effective band count, at most n). No rows (the kernel
    then sums term by term) when J exceeds :data:`MAX_DIRECT_COUNT` or some positive ``a_ij``
    is below ``exp(-LIMIT)`` (the bound that keeps Horner's rule exact to rounding)."""
    n = half_norms.shape[0]
    top = int(js[-1]) if js.size else 0
    if not 0 < top <= MAX_DIRECT_COUNT:
        return np.empty((0, 0))
    n0 = n - bands + 1
    h = np.concatenate((half_norms[:1], half_norms[n0:]))
    logs = log_w[None, :] - (js * (js - 1.0))[None, :] * h[:, None]
    if logs.min() < -LIMIT:
        return np.empty((0, 0))
    coefs = np.zeros((h.size, top))
    coefs[:, js.astype(np.int64) - 1] = np.exp(logs)
    return coefs


def host_multi_attribution(
    values: Any, given: Participation, sigma: float, value_scale: float, model: Any
) -> np.ndarray:
    """``ln P/Q`` per row from ``x_i = value_scale * values_i + <c_i, C x> / sigma^2``
    (``value_scale``: 1/sigma for noise correlations, 1/sigma^2 for dots ``<c_i, y>``);
    ``given.steps`` None means no signal (x = 0), else ``given.weights`` holds the user's
    counts there. ``model``: the multi-attribution loss model (its coefficients, min_sep and
    ``log_weights()``, ``ln Pr[Binomial(k_u, p) = j]`` for j = 0..k_u)."""
    coefficients, log_weights, min_sep = model.coefficients, model.log_weights(), model.min_sep
    values = host_array(values, np.float64)
    n_samples, n = values.shape
    if given.steps is None:
        steps_arr = np.empty((n_samples, 0), dtype=np.int32)
        counts_arr = np.empty((n_samples, 0), dtype=np.int32)
    else:
        steps_arr = host_array(given.steps, np.int32)
        counts_arr = host_array(given.weights, np.int32)
    inv_s2 = 1.0 / (sigma * sigma)
    half_norms = (0.5 * inv_s2) * tail_norms(coefficients, n)
    js, log_w = _terms(tuple(log_weights))
    table = signal_table(coefficients, n)
    out = np.empty(n_samples)
    if n_samples:
        cpu_kernels.multi_attribution_rows(
            values,
            steps_arr,
            counts_arr,
            table,
            half_norms,
            js,
            log_w,
            direct_coefficients(half_norms, js, log_w, table.shape[0]),
            float(value_scale),
            inv_s2,
            float(log_weights[0]),
            int(min_sep),
            out,
        )
    return out
