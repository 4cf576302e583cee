"""Host drivers of the fused random-phase cyclic Poisson kernels (the ``"numba"`` kernel set;
docs/math.md §4.1): the phase and coins drawn from the array code's uniforms, the participation
kept as its steps, and ``ln P/Q`` for a whole chunk in one compiled call (:mod:`.cpu_kernels`).

Memory: the transcript holds the noise correlations (``8 n`` bytes per sample) and, under
REMOVE, the participation steps (``4 ceil(n / b)``); drawing adds one block of uniforms
(512 KiB), evaluating three rows of n and one of b.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.kernel_table import Participation
from minsep.schemes.b_min_sep.fused import signal_table
from minsep.schemes.cyclic_poisson import cpu_kernels
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.mixture_kernels import host_array, uniform_blocks


def host_phase_steps(
    n_samples: int, n_steps: int, groups: int, rate: float, rng: RandomSource
) -> np.ndarray:
    """The sensitive example's participation steps, int32 ``(S, ceil(n / b))`` (ascending, then
    n), from the draws of
    :meth:`~minsep.schemes.cyclic_poisson.loss.RandomPhaseCyclicLossModel.participation` in
    its order: the S phase uniforms, then the ``(S, n)`` coin uniforms (here blockwise)."""
    u = np.asarray(rng.random((n_samples,)), dtype=np.float64)
    phases = np.minimum(np.floor(u * groups).astype(np.int64), groups - 1)
    steps = np.empty((n_samples, -(-n_steps // groups)), dtype=np.int32)
    for start, block in uniform_blocks(n_samples, n_steps, rng):
        cpu_kernels.phase_steps(block, phases, float(rate), int(groups), steps, start)
    return steps


def host_random_phase(
    values: Any, given: Participation, sigma: float, value_scale: float, model: Any
) -> np.ndarray:
    """``ln P/Q`` per row from ``x_i = value_scale * values_i + <c_i, C x> / sigma^2 - ||c_i||^2
    / (2 sigma^2)`` (``value_scale``: 1/sigma for noise correlations, 1/sigma^2 for dots ``<c_i,
    y>``); ``given.steps`` None means no signal (x = 0, or a signal already in ``values``).
    ``model``: the random-phase loss model (its coefficients, group_rate and groups)."""
    coefficients, rate, groups = model.coefficients, model.group_rate, model.groups
    values = host_array(values, np.float64)
    n_samples, n = values.shape
    steps = given.steps
    steps_arr = (
        np.empty((n_samples, 0), dtype=np.int32) if steps is None else host_array(steps, np.int32)
    )
    inv_s2 = 1.0 / (sigma * sigma)
    base = -(0.5 * inv_s2) * tail_norms(coefficients, n)
    out = np.empty(n_samples)
    if n_samples:
        cpu_kernels.random_phase_rows(
            values,
            steps_arr,
            np.ones(steps_arr.shape[1]),  # the participations' weights
            signal_table(coefficients, n),
            base,
            float(value_scale),
            inv_s2,
            float(rate),
            int(groups),
            out,
        )
    return out
