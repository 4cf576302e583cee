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

import attrs
import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.kernel_table import Participation
from minsep.schemes.b_min_sep import cpu_kernels
from minsep.schemes.kernels.blocks import effective_coefficients, tail_norms
from minsep.schemes.kernels.buffers import reusable
from minsep.schemes.kernels.fused import (
    block_rows,
    blockwise_losses,
    drawn_blocks,
    noise_blocks,
    noise_plan,
)


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
    values: Any, given: Participation, sigma: float, value_scale: float, model: Any
) -> np.ndarray:
    """``ln P/Q`` per row from ``ln(p r_i) = value_scale * values_i + signal_i / sigma^2 + ln p
    - ||c_i||^2 / (2 sigma^2)`` (``value_scale``: 1/sigma for noise correlations, 1/sigma^2
    for dots ``<c_i, y>``); ``given.steps`` None means no signal (x = 0). The ``sparse_ratio``
    entry of :class:`~minsep.framework.kernel_table.KernelTable` (``model``: a b-min-sep loss
    model, read for its coefficients, probability, min_sep and warm_start)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty(values.shape[0])
    evaluation = Evaluation.of(model, values.shape[1], sigma, value_scale)
    evaluation.run(values, _NO_TAPS, _steps_array(given.steps, values.shape[0]), out)
    return out


def host_losses(
    n_samples: int, given: Participation, rng: RandomSource, sigmas: Sequence[float], model: Any
) -> list[np.ndarray]:
    """``ln P/Q`` at every sigma, evaluated block by block right after each block of
    normals is drawn: the values of :func:`host_b_min_sep` on
    :func:`~minsep.schemes.kernels.fused.host_noise`'s transcript, from the same stream, bit for
    bit, without holding that transcript (a block stays in the cache between its draw and its
    evaluations). Under the direct correlation the kernel correlates each row in place
    (``taps`` = c); under an FFT plan the block is correlated first
    (:func:`~minsep.schemes.kernels.fused.noise_blocks`). The ``losses`` entry of
    :class:`~minsep.framework.kernel_table.KernelTable` (``given.steps``: the participation)."""
    n_steps, coefficients = model.n_steps, model.coefficients
    steps_arr = _steps_array(given.steps, n_samples)
    taps = effective_coefficients(coefficients, n_steps)
    plan = noise_plan(n_steps, int(taps.size))
    if plan.method == "direct":
        blocks = drawn_blocks("standard_normal", n_samples, n_steps, block_rows(plan), rng)
    else:
        blocks = noise_blocks(n_samples, n_steps, coefficients, rng)
        taps = _NO_TAPS
    evaluations = [Evaluation.of(model, n_steps, sigma, 1.0 / sigma) for sigma in sigmas]

    def evaluate(k: int, block: np.ndarray, rows: slice, out: np.ndarray) -> None:
        evaluations[k].run(block, taps, steps_arr[rows], out)

    return blockwise_losses(n_samples, blocks, evaluate, len(sigmas))


def _steps_array(steps: Any, n_samples: int) -> np.ndarray:
    if steps is None:
        return np.empty((n_samples, 0), dtype=np.int32)
    return np.ascontiguousarray(steps, dtype=np.int32)


#: ``taps`` of :meth:`Evaluation.run` when the values are correlations already.
_NO_TAPS = np.empty(0)


@attrs.frozen(eq=False)
class Evaluation:
    """The per-sigma inputs of :func:`~minsep.schemes.b_min_sep.cpu_kernels.b_min_sep_rows_in`,
    made once per sigma (not per block of a draw)."""

    n_steps: int
    table: np.ndarray
    base: np.ndarray
    value_scale: float
    inv_s2: float
    log_p: float
    probability: float
    min_sep: int
    warm_start: bool

    @classmethod
    def of(cls, model: Any, n_steps: int, sigma: float, value_scale: float) -> Evaluation:
        """The inputs for ``model`` (a b-min-sep loss model) over ``n_steps`` at ``sigma``."""
        coefficients, probability = model.coefficients, model.probability
        min_sep, warm_start = model.min_sep, model.warm_start
        inv_s2 = 1.0 / (sigma * sigma)
        log_p = math.log(probability)
        base = log_p - (0.5 * inv_s2) * _norms(coefficients, n_steps)
        return cls(n_steps, signal_table(coefficients, n_steps), base, float(value_scale),
                   inv_s2, log_p, float(probability), int(min_sep), bool(warm_start))  # fmt: skip

    def run(self, values: np.ndarray, taps: np.ndarray, steps: np.ndarray, out: np.ndarray) -> None:
        """``ln P/Q`` of the rows of ``values`` (correlations; normals when ``taps`` = c is
        non-empty) into ``out`` (C-contiguous float64 values, int32 steps)."""
        if not values.shape[0]:
            return
        scratch = int(cpu_kernels.scratch_size(self.n_steps, self.min_sep))
        cpu_kernels.b_min_sep_rows_in(
            values,
            taps,
            steps,
            self.table,
            self.base,
            self.value_scale,
            self.inv_s2,
            self.log_p,
            1.0 - self.probability,
            self.probability,
            self.min_sep,
            self.warm_start,
            out,
            reusable((scratch,), role="b-min-sep-rows"),
        )
