"""Host driver of the fused b-min-sep kernel (the ``"numba"`` kernel set): ``ln P/Q`` for a
whole chunk in one compiled call (:mod:`.cpu_kernels`), with the cached cross-Gram table of the
sparse signal and the tail norms (docs/math.md §2-§3). Memory: see
:mod:`minsep.schemes.kernels.fused`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from minsep.schemes.b_min_sep import cpu_kernels
from minsep.schemes.kernels.blocks import tail_norms


@functools.lru_cache(maxsize=64)
def signal_table(coefficients: tuple[float, ...], n_steps: int) -> np.ndarray:
    """Cached :func:`~minsep.schemes.b_min_sep.cpu_kernels.signal_table` (read-only)."""
    table = cpu_kernels.signal_table(np.asarray(coefficients, dtype=np.float64), n_steps)
    table.setflags(write=False)
    return table


@functools.lru_cache(maxsize=64)
def _norms(coefficients: tuple[float, ...], n_steps: int) -> np.ndarray:
    norms = tail_norms(coefficients, n_steps)
    norms.setflags(write=False)
    return norms


def host_b_min_sep(
    values: Any,
    steps: Any,
    coefficients: tuple[float, ...],
    sigma: float,
    value_scale: float,
    probability: float,
    min_sep: int,
    warm_start: bool,
) -> np.ndarray:
    """``ln P/Q`` per row from ``ln(p r_i) = value_scale * values_i + signal_i / sigma^2 + ln p
    - ||c_i||^2 / (2 sigma^2)`` (``value_scale``: 1/sigma for noise correlations, 1/sigma^2
    for dots ``<c_i, y>``); ``steps`` None means no signal (x = 0)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    n_samples, n = values.shape
    if steps is None:
        steps_arr = np.empty((n_samples, 0), dtype=np.int32)
    else:
        steps_arr = np.ascontiguousarray(steps, dtype=np.int32)
    inv_s2 = 1.0 / (sigma * sigma)
    log_p = math.log(probability)
    base = log_p - (0.5 * inv_s2) * _norms(coefficients, n)
    out = np.empty(n_samples)
    if n_samples:
        cpu_kernels.b_min_sep_rows(
            values,
            steps_arr,
            signal_table(coefficients, n),
            base,
            float(value_scale),
            inv_s2,
            log_p,
            1.0 - probability,
            probability,
            int(min_sep),
            bool(warm_start),
            out,
        )
    return out
