"""Monte Carlo privacy loss of BandMF with balls-in-bins sampling (docs/math.md §4).

Each example draws one uniform bin s in [T] and participates at steps s, s+T, ...; with x_s the
indicator of those steps, P = (1/T) sum_s N(C x_s, sigma^2 I), Q = N(0, sigma^2 I) and

    ln P/Q (y) = logsumexp_s [(<C x_s, y> - ||C x_s||^2 / 2) / sigma^2] - ln T.

Exact for every T, also T < k (columns of one bin overlap: the Gram matrix of the C x_s carries
the cross terms) and T > n (bins past the horizon never participate and contribute exp(0)).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.framework.kernel_table import KernelTable, Participation
from minsep.framework.loss_model import Direction
from minsep.schemes.kernels.blocks import effective_coefficients
from minsep.schemes.kernels.fields import as_coefficients, coefficients_validator
from minsep.schemes.kernels.fused import host_noise
from minsep.schemes.kernels.model import BlockLossModel
from minsep.schemes.kernels.transcript import BinsTranscript, BlockTranscript

if TYPE_CHECKING:
    from minsep.accountants.bins_escort import BinsEscortLaw


def bin_gram(coefficients: tuple[float, ...], n_steps: int, cycle_length: int) -> np.ndarray:
    """``G[s, s'] = <C x_s, C x_{s'}>`` over the ``min(T, n)`` non-empty bins (host, O(n k)).

    Uses ``<C e_i, C e_{i+d}> = sum_{m=0}^{min(k-1-d, n-1-i-d)} c_m c_{m+d}`` for 0 <= d < k
    (columns cut at row n) and accumulates pairs of steps into their bins.
    """
    c = effective_coefficients(coefficients, n_steps)
    k = int(c.size)
    bins = min(cycle_length, n_steps)
    gram = np.zeros((bins, bins))
    for d in range(k):
        later = np.arange(d, n_steps)  # j = i + d
        earlier = later - d
        overlap = np.cumsum(c[: k - d] * c[d:])
        values = overlap[np.minimum(n_steps - 1 - later, k - 1 - d)]
        np.add.at(gram, (earlier % cycle_length, later % cycle_length), values)
        if d:
            np.add.at(gram, (later % cycle_length, earlier % cycle_length), values)
    return gram


def fold_bins(per_step: Any, cycle_length: int, xp: Any) -> Any:
    """Sum ``(S, n)`` per-step values into ``(S, min(T, n))`` bins (step i goes to i mod T)."""
    n_samples, n = int(per_step.shape[0]), int(per_step.shape[1])
    if cycle_length >= n:
        return per_step
    rounds = -(-n // cycle_length)
    pad = rounds * cycle_length - n
    if pad:
        filler = xp.zeros((n_samples, pad), dtype=xp.float64)
        per_step = xp.concat([per_step, filler], axis=1)
    return xp.sum(xp.reshape(per_step, (n_samples, rounds, cycle_length)), axis=1)


def balls_in_bins_log_ratio(
    dots: Any, self_gram: Any, sigma: float, cycle_length: int, empty_bins: int, xp: Any
) -> Any:
    """The log-ratio kernel from ``dots[:, s] = <C x_s, y>`` and ``self_gram[s] = ||C x_s||^2``."""
    logits = (dots - 0.5 * self_gram) / sigma**2
    peak = xp.max(logits, axis=1)
    log_empty = math.log(empty_bins) if empty_bins else -math.inf
    if empty_bins:  # each empty bin contributes exp(0)
        peak = xp.maximum(peak, log_empty)
    total = xp.sum(xp.exp(logits - xp.expand_dims(peak, axis=1)), axis=1)
    if empty_bins:
        total = total + xp.exp(log_empty - peak)
    return peak + xp.log(total) - math.log(cycle_length)


@attrs.frozen
class BallsInBinsLossModel(BlockLossModel):
    """Dominating pair of balls-in-bins sampling (cycle length T) with banded Toeplitz C.

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative; any k, also k > T).
        n_steps: number of steps n.
        cycle_length: T = 1/p0, the number of bins.

    Transcript: :class:`BinsTranscript`, ``16 min(T, n)`` bytes per sample under REMOVE,
    ``8 min(T, n)`` under ADD. Cost per sample: O(n k) or O(n log n) for the sliding products,
    O(min(T, n)) per sigma.
    """

    transcript_type: ClassVar[type[BlockTranscript]] = BinsTranscript
    kernel_table: ClassVar[KernelTable] = KernelTable(noise={"numba": host_noise})

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    cycle_length: int = attrs.field(validator=v.positive_int())

    @property
    def n_bins(self) -> int:
        """Bins holding at least one step: ``min(T, n)``."""
        return min(self.cycle_length, self.n_steps)

    def escort_law(self) -> BinsEscortLaw:
        """The escort proposal's view of the bins (docs/rdp-escort.md §10.8); needs bands <= T
        (ConfigurationError naming bands otherwise)."""
        from minsep.accountants.bins_escort import BinsEscortLaw

        bands = len(self.coefficients)
        if bands > self.cycle_length:
            raise ConfigurationError(
                f"BallsInBinsLossModel.bands = {bands} is invalid for the escort proposal: it "
                f"needs bands <= T = {self.cycle_length} (with more bands than bins two steps "
                "of one bin share a band and the transfer pass's window covers the whole "
                "ring); use proposal 'plain'",
                parameter="bands",
            )
        return BinsEscortLaw(self.n_steps, self.cycle_length, self.coefficients, self.gram())

    def gram(self) -> np.ndarray:
        """The Gram matrix of the bin signals ``C x_s`` (host float64, ``n_bins`` square)."""
        return bin_gram(self.coefficients, self.n_steps, self.cycle_length)

    def bins(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """The drawn bin of each sample, int64 in ``[0, T)``."""
        xp = backend.xp
        u = rng.random((n_samples,))
        return xp.minimum(
            xp.astype(xp.floor(u * self.cycle_length), xp.int64), self.cycle_length - 1
        )

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk (memory planning): the per-step correlations and the
        normals they come from (5 rows of n float64 at the draw's peak, measured 35 n bytes)
        plus 4 rows of the ``min(T, n)`` bins (transcript and evaluation)."""
        return 8 * (5 * self.n_steps + 4 * self.n_bins)

    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """Under REMOVE a uniform bin s*, its signal the row ``<C x_s, C x_{s*}>`` of the bins'
        Gram matrix; under ADD nothing (x = 0)."""
        if direction is not Direction.REMOVE:
            return Participation()
        xp = backend.xp
        chosen = xp.minimum(self.bins(samples, rng, backend), self.n_bins)
        padded = np.vstack([self.gram(), np.zeros((1, self.n_bins))])  # row n_bins: empty
        return Participation(signal=xp.take(xp.asarray(padded), chosen, axis=0))

    def columns(self, values: Any, xp: Any) -> Any:
        """The per-step values summed into the bins (:func:`fold_bins`)."""
        return fold_bins(values, self.cycle_length, xp)

    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """:func:`balls_in_bins_log_ratio` from ``dots[:, s] = <C x_s, y>``."""
        self_gram = xp.asarray(np.diag(self.gram()).copy())
        empty = self.cycle_length - self.n_bins
        return balls_in_bins_log_ratio(dots, self_gram, sigma, self.cycle_length, empty, xp)
