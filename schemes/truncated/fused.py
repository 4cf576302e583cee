"""Host drivers of the fused truncated b-min-sep kernels (the ``"numba"`` kernel set;
docs/math.md §6): the pattern, the public counts and the survival coins drawn from the array
code's streams in the same order, the pattern kept sparsely, and ``ln P/Q`` for a whole chunk
in one compiled call (:mod:`.cpu_kernels`).

Memory: the transcript holds the noise correlations and the counts (``10 n`` bytes per sample
with int16 counts, |D| <= 2^15; ``12 n`` with int32) and the sampled steps with x there
(``12 ceil(n / b)``); drawing adds one block of uniforms (256 KiB) and one step-major tile of
counts (4 MiB of int16); evaluating adds ``8 (22 n + 5 b)`` bytes of row buffers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import Backend, RandomSource
from minsep.framework.kernel_table import Participation
from minsep.schemes.b_min_sep.fused import signal_table
from minsep.schemes.kernels import sfc64
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.kernels.buffers import reusable
from minsep.schemes.kernels.fused import blockwise_losses, noise_blocks
from minsep.schemes.kernels.mixture_kernels import host_array, uniform_blocks
from minsep.schemes.kernels.sampling import chain_steps, host_generator
from minsep.schemes.truncated import cpu_kernels
from minsep.schemes.truncated.counts import _initial_ring, count_tables

#: Counts held step-major before they are transposed into the ``(S, n)`` counts (4 MiB of
#: int16): the longer the tile, the fewer passes over the rows of the counts.
COUNT_TILE_ELEMENTS = 1 << 21
#: Padding of each tile row (int16: 64 bytes), so that the rows of a power-of-2 number of
#: samples do not map to the same cache sets when the tile is transposed.
TILE_PAD = 32


def host_pattern(
    n_samples: int,
    n_steps: int,
    probability: float,
    min_sep: int,
    warm_start: bool,
    dataset_size: int,
    max_batch_size: int,
    remove: bool,
    rng: RandomSource,
    backend: Backend,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, weights, counts)``: the sensitive example's sampled steps (int32 ``(S,
    ceil(n / b))``, ascending then n), x there (x' under ADD; float64, same shape) and the
    public counts r (``(S, n)`` of :func:`count_dtype`), from the streams of
    :meth:`~minsep.schemes.truncated.loss.TruncatedBMinSepLossModel.participation`."""
    steps = np.asarray(
        chain_steps(n_samples, n_steps, probability, min_sep, warm_start, rng, np, kernels="numba")
    )
    counts = host_counts(
        n_samples, n_steps, probability, min_sep, warm_start, dataset_size - 1, rng, backend
    )
    m = int(steps.shape[1])
    weights = reusable((n_samples, m), role="truncated-weights")
    for row0, block in uniform_blocks(n_samples, m, rng):
        cpu_kernels.pattern_weights(block, steps, counts, max_batch_size, remove, weights, row0)
    return steps, weights, counts


def host_counts(
    n_samples: int,
    n_steps: int,
    probability: float,
    min_sep: int,
    warm_start: bool,
    others: int,
    rng: RandomSource,
    backend: Backend,
) -> np.ndarray:
    """The counts of :func:`~minsep.schemes.truncated.counts.table_counts` (same generator,
    same draws), ``(S, n)`` of :func:`count_dtype`, compiled."""
    generator = host_generator(rng, backend)
    ring = _initial_ring(n_samples, others, probability, min_sep, warm_start, generator)
    barred = ring.sum(axis=1)
    dtype = count_dtype(others)
    # slot-major (a step reads one contiguous row), in the counts' type (every entry is a count
    # of at most ``others``): a quarter of the memory of int64, which at b = 256 spills the cache
    ring = np.ascontiguousarray(ring.T, dtype=dtype)
    counts = reusable((n_samples, n_steps), dtype, role="truncated-counts")
    tables = count_tables(others, probability, min_sep)
    span = max(1, min(COUNT_TILE_ELEMENTS // max(n_samples, 1), n_steps))
    words = _word_scatter(dtype, n_samples, n_steps)
    if words:
        span = max(4, span - span % 4)
    tile = reusable((span, n_samples + TILE_PAD), dtype, role="truncated-count-tile")
    scatter = cpu_kernels.scatter_words if words else cpu_kernels.scatter_steps
    table_args = (
        tables.low,
        tables.offsets,
        tables.thresholds,
        tables.guides,
        tables.direct,
        tables.bases,
    )
    state = _sfc64_words(generator)
    for t0 in range(0, n_steps, span):  # a tile of steps, step-major, then into counts
        t1 = min(t0 + span, n_steps)
        t = t0
        while t < t1:
            t += cpu_kernels.table_counts_major(
                state, t, t1, others, *table_args, ring, barred, tile, t - t0
            )
            if t < t1:  # some N outside the tables: this step through the generator
                sfc64.set_state_words(generator, state)
                uniforms = reusable((n_samples,), role="truncated-count-uniforms")
                cpu_kernels.table_counts_steps(
                    generator, others, probability, *table_args, ring, barred, uniforms, counts,
                    t, t + 1,
                )  # fmt: skip
                state = _sfc64_words(generator)
                tile[t - t0, :n_samples] = counts[:, t]
                t += 1
        scatter(tile, t1 - t0, counts, t0)
    sfc64.set_state_words(generator, state)
    return counts


def _word_scatter(dtype: Any, n_samples: int, n_steps: int) -> bool:
    """Whether :func:`~.cpu_kernels.scatter_words` can transpose the tiles: int16 counts on a
    little-endian host, S and n multiples of 4."""
    return (
        np.dtype(dtype) == np.dtype(np.int16)
        and sys.byteorder == "little"
        and n_samples % 4 == 0
        and n_steps % 4 == 0
    )


def _sfc64_words(generator: np.random.Generator) -> np.ndarray:
    """The four state words of ``generator``'s SFC64 (a copy; the compiled kernels advance it)."""
    words = sfc64.state_words(generator)
    if words is None:
        name = type(generator.bit_generator).__name__
        raise TypeError(f"the counts kernels draw from SFC64, not {name}")
    return words


def count_dtype(others: int) -> type[np.signedinteger]:
    """The narrowest of int16, int32 and int64 that holds every count (at most ``others``):
    a quarter or half of the counts' memory traffic where it can."""
    for dtype in (np.int16, np.int32):
        if others <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _host_counts(counts: Any) -> np.ndarray:
    """The counts as a C-contiguous host array, int16 and int32 kept as they are, anything
    else int64."""
    array = np.asarray(counts)
    kept = array.dtype in (np.dtype(np.int16), np.dtype(np.int32))
    return host_array(array, array.dtype if kept else np.int64)


def host_truncated(
    values: Any, given: Participation, sigma: float, value_scale: float, model: Any
) -> np.ndarray:
    """``ln P(y|r)/Q(y|r)`` per row from ``x_i = value_scale * values_i + <c_i, C x> /
    sigma^2`` (``value_scale``: 1/sigma for noise correlations, 1/sigma^2 for dots ``<c_i,
    y>``) and the counts ``given.counts``; ``given.steps`` None means a dense signal already
    in ``values``, else x there is ``given.weights``. ``model``: the truncated loss model (its
    coefficients, probability, min_sep, warm_start and max_batch_size)."""
    values = host_array(values, np.float64)
    n_samples, n = values.shape
    if given.steps is None:
        steps_arr = np.empty((n_samples, 0), dtype=np.int32)
        weights_arr = np.empty((n_samples, 0))
    else:
        steps_arr = host_array(given.steps, np.int32)
        weights_arr = host_array(given.weights, np.float64)
    out = np.empty(n_samples)
    evaluation = Evaluation.of(model, n, sigma, value_scale)
    evaluation.run(values, steps_arr, weights_arr, _host_counts(given.counts), out)
    return out


def host_losses(
    n_samples: int, given: Participation, rng: RandomSource, sigmas: Sequence[float], model: Any
) -> list[np.ndarray]:
    """``ln P(y|r)/Q(y|r)`` at every sigma, each block of noise evaluated right after it
    is correlated: the values of :func:`host_truncated` on the transcript of
    :meth:`~minsep.schemes.truncated.loss.TruncatedBMinSepLossModel.draw` (the pattern and
    counts ``given`` first, from :func:`host_pattern`, then
    :func:`~minsep.schemes.kernels.fused.noise_blocks`: the same stream, bit for bit), without
    writing and reading back the ``8 n`` bytes per sample of noise."""
    steps, weights = given.steps, given.weights
    counts = _host_counts(given.counts)
    evaluations = [Evaluation.of(model, model.n_steps, sigma, 1.0 / sigma) for sigma in sigmas]

    def evaluate(k: int, block: np.ndarray, rows: slice, out: np.ndarray) -> None:
        evaluations[k].run(block, steps[rows], weights[rows], counts[rows], out)

    blocks = noise_blocks(n_samples, model.n_steps, model.coefficients, rng)
    return blockwise_losses(n_samples, blocks, evaluate, len(sigmas))


@attrs.frozen(eq=False)
class Evaluation:
    """The per-sigma inputs of :func:`~minsep.schemes.truncated.cpu_kernels.truncated_rows`,
    made once per sigma (not per block of a draw)."""

    table: np.ndarray
    half_norms: np.ndarray
    value_scale: float
    inv_s2: float
    probability: float
    min_sep: int
    warm_start: bool
    max_batch_size: int

    @classmethod
    def of(cls, model: Any, n_steps: int, sigma: float, value_scale: float) -> Evaluation:
        """The inputs for ``model`` (a truncated loss model) over ``n_steps`` at ``sigma``."""
        inv_s2 = 1.0 / (sigma * sigma)
        coefficients = model.coefficients
        half_norms = (0.5 * inv_s2) * tail_norms(coefficients, n_steps)
        return cls(signal_table(coefficients, n_steps), half_norms, float(value_scale), inv_s2,
                   float(model.probability), int(model.min_sep), bool(model.warm_start),
                   int(model.max_batch_size))  # fmt: skip

    def run(
        self,
        values: np.ndarray,
        steps: np.ndarray,
        weights: np.ndarray,
        counts: np.ndarray,
        out: np.ndarray,
    ) -> None:
        """``ln P(y|r)/Q(y|r)`` of the rows of ``values`` into ``out`` (C-contiguous host
        arrays: float64 values and weights, int32 steps, the counts' integer type)."""
        if not values.shape[0]:
            return
        cpu_kernels.truncated_rows(
            values,
            steps,
            weights,
            counts,
            self.table,
            self.half_norms,
            self.value_scale,
            self.inv_s2,
            self.probability,
            self.min_sep,
            self.warm_start,
            self.max_batch_size,
            out,
        )
