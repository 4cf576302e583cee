"""Host driver of the fused b-min-sep kernel (the ``"numba"`` kernel set): ``ln P/Q`` for a
whole chunk in one compiled call (:mod:`.cpu_kernels`), with the cached cross-Gram table of the
sparse signal and the tail norms (docs/math.md §2-§3). Memory: see
:mod:`minsep.schemes.kernels.fused`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.schemes.b_min_sep import cpu_kernels
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.buffers import reusable
from minsep.schemes.kernels.fused import noise_blocks


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
    out = np.empty(values.shape[0])
    _evaluate(values, _steps_array(steps, values.shape[0]), coefficients, sigma, value_scale,
              probability, min_sep, warm_start, out)  # fmt: skip
    return out


def host_losses(
    n_samples: int,
    n_steps: int,
    steps: np.ndarray | None,
    coefficients: tuple[float, ...],
    rng: RandomSource,
    sigmas: Sequence[float],
    sign: float,
    probability: float,
    min_sep: int,
    warm_start: bool,
) -> list[np.ndarray]:
    """``sign * ln P/Q`` at every sigma, evaluated block by block right after each block of
    noise correlations is drawn (:func:`~minsep.schemes.kernels.fused.noise_blocks`): the
    values of :func:`host_b_min_sep` on :func:`~minsep.schemes.kernels.fused.host_noise`'s
    transcript, from the same stream, without holding that transcript (a block stays in the
    cache between its draw and its evaluations)."""
    steps_arr = _steps_array(steps, n_samples)
    outs = [np.empty(n_samples) for _ in sigmas]
    for start, block in noise_blocks(n_samples, n_steps, coefficients, rng):
        rows = slice(start, start + block.shape[0])
        for out, sigma in zip(outs, sigmas, strict=True):
            _evaluate(block, steps_arr[rows], coefficients, sigma, 1.0 / sigma, probability,
                      min_sep, warm_start, out[rows])  # fmt: skip
    for out in outs:
        np.multiply(out, sign, out=out)  # as Direction.sign * ln P/Q
    return outs


def _steps_array(steps: Any, n_samples: int) -> np.ndarray:
    if steps is None:
        return np.empty((n_samples, 0), dtype=np.int32)
    return np.ascontiguousarray(steps, dtype=np.int32)


def _evaluate(
    values: np.ndarray,
    steps: np.ndarray,
    coefficients: tuple[float, ...],
    sigma: float,
    value_scale: float,
    probability: float,
    min_sep: int,
    warm_start: bool,
    out: np.ndarray,
) -> None:
    """:func:`host_b_min_sep` into ``out`` (C-contiguous float64 values, int32 steps)."""
    n = values.shape[1]
    inv_s2 = 1.0 / (sigma * sigma)
    log_p = math.log(probability)
    base = log_p - (0.5 * inv_s2) * _norms(coefficients, n)
    if values.shape[0]:
        cpu_kernels.b_min_sep_rows_in(
            values,
            steps,
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
            reusable((int(cpu_kernels.scratch_size(n, min_sep)),), role="b-min-sep-rows"),
        )
