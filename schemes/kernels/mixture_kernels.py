"""Compiled host pieces shared by the fused kernels of the mixture models (multi-attribution,
truncation): a sparse signal with weights and the block-wise uniform draws that reproduce
``rng.random((S, n))``.

The b-min-sep kernels (:mod:`minsep.schemes.b_min_sep.cpu_kernels`) supply the linear-scale
recursion with renormalisation (``linear_rows``), its log-domain fallback (``log_domain_row``)
and ``exp_row``; the mixture models feed them their own per-step block weights (docs/math.md
§5, §6).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.schemes.kernels.fused import BLOCK_ELEMENTS, drawn_blocks
from minsep.schemes.kernels.jit import njit


@njit
def add_weighted_signal(
    x: np.ndarray, steps: np.ndarray, weights: np.ndarray, table: np.ndarray, scale: float
) -> None:
    """``x[i] += scale * sum_t weights[t] <c_i, C e_{steps[t]}>`` (steps ascending, ``>= n``
    once done), through the cross-Gram ``table`` of
    :func:`~minsep.schemes.b_min_sep.cpu_kernels.signal_table` (O(k) per participation). A
    participation whose blocks the horizon does not cut reads one row of the table
    (contiguous, vectorised); the others index it per step."""
    n = x.shape[0]
    k = table.shape[0]
    full = table[k - 1]
    for t in range(steps.shape[0]):
        j = steps[t]
        if j >= n:
            break
        w = scale * weights[t]
        if w == 0.0:
            continue
        lo = max(0, j - k + 1)
        if j + k <= n - k + 1:  # every i < j + k has n - 1 - i >= k - 1: the row k - 1
            seg = x[lo : j + k]
            src = full[lo - j + k - 1 :]
            for i in range(j + k - lo):
                seg[i] += w * src[i]
        else:
            for i in range(lo, min(n, j + k)):
                x[i] += w * table[min(k - 1, n - 1 - i), i - j + k - 1]


def uniform_blocks(
    n_samples: int, n_steps: int, rng: RandomSource
) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, block)`` over the rows of ``rng.random((n_samples, n_steps))`` in blocks of
    about :data:`~minsep.schemes.kernels.fused.BLOCK_ELEMENTS`
    (:func:`~minsep.schemes.kernels.fused.drawn_blocks`)."""
    rows = max(1, BLOCK_ELEMENTS // max(n_steps, 1))
    return drawn_blocks("random", n_samples, n_steps, rows, rng)


def host_array(values: Any, dtype: Any) -> np.ndarray:
    """``values`` as a C-contiguous host array of ``dtype``."""
    return np.ascontiguousarray(values, dtype=dtype)
