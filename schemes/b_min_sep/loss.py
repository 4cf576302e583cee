"""Monte Carlo privacy loss of BandMF with b-min-sep subsampling (docs/math.md §3, Theorem 5.1).

With min-sep b >= k bands, participations occupy disjoint blocks of rows, and

    f_i = (1-p) f_{i+1} + p r_i f_{i+b},  f_j = 1 (j > n),
    r_i(y) = exp((<c_i, y> - ||c_i||^2 / 2) / sigma^2),

gives P/Q = f_1 (cold start, Algorithm 1) or (f_1 + p sum_{i=2}^b f_i) / (1 + (b-1)p) (warm
start, Algorithm 2). b = 1 with C = I is Poisson sampling: P/Q = prod_i (1 - p + p r_i) (§4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from minsep.framework.backend import Backend, RandomSource
from minsep.framework.kernel_table import KernelTable, Participation
from minsep.framework.loss_model import Direction
from minsep.framework.participation import ParticipationChain
from minsep.schemes.b_min_sep import gpu_kernels
from minsep.schemes.b_min_sep.fused import host_b_min_sep, host_losses
from minsep.schemes.kernels.fused import host_noise
from minsep.schemes.kernels.model import ChainLossModel
from minsep.schemes.kernels.recursion import chain_log_ratio
from minsep.schemes.kernels.sampling import steps_to_pattern

if TYPE_CHECKING:
    from minsep.accountants.bins_escort import BinsEscortLaw
    from minsep.accountants.escort_law import ChainEscortLaw


def b_min_sep_log_ratio(
    dots: Any,
    norms: Any,
    sigma: float,
    probability: float,
    min_sep: int,
    warm_start: bool,
    xp: Any,
) -> Any:
    """The log-ratio kernel: ``ln P/Q`` per sample from ``dots[:, i] = <c_i, y>`` and the tail
    norms ``norms[i] = ||c_i||^2`` (an ``(n,)`` array of ``xp``); portable array code."""
    log_block = (dots - 0.5 * norms) / sigma**2
    return chain_log_ratio(log_block, probability, min_sep, warm_start, xp, kernels="array")


@attrs.frozen
class BMinSepLossModel(ChainLossModel):
    """Dominating pair of b-min-sep subsampling with b-banded Toeplitz C (Theorem 5.1); the
    fields are the chain's (:class:`~minsep.schemes.kernels.model.ChainLossModel`).

    Transcript: :class:`BlockTranscript` holding the noise correlations ``<c_i, z>`` (``8 n``
    bytes per sample) and, under REMOVE, the participation steps (``4 ceil(n / b)`` bytes; the
    portable array path also keeps the dense signal, ``8 n`` more). sigma-free: one transcript
    serves every sigma (common random numbers).

    Paths (same random stream, same values up to rounding): fused numba kernels on host numpy
    (:mod:`.fused`), a fused CUDA kernel on cupy (:mod:`.gpu_kernels`), and portable array code
    elsewhere. Cost per sample: n normals, the correlation with c (O(n k) direct or O(n log n)
    FFT), and per sigma one O(n) pass with one exp per step (the recursion in linear scale with
    renormalisation; rows that would leave the float64 range are redone in logs).
    """

    kernel_table: ClassVar[KernelTable] = KernelTable(
        noise={"numba": host_noise, "cuda": gpu_kernels.device_noise},
        sparse_ratio={"numba": host_b_min_sep, "cuda": gpu_kernels.device_b_min_sep},
        losses={"numba": host_losses},
    )

    def participation(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Participation patterns x of the sensitive example, bool ``(n_samples, n)`` (the
        same draws as :meth:`steps`)."""
        xp = backend.xp
        return steps_to_pattern(self.steps(n_samples, rng, backend), self.n_steps, xp)

    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """Under REMOVE the steps of x (and, unless ``sparse``, the dense signal as well);
        under ADD nothing (x = 0)."""
        if direction is not Direction.REMOVE:
            return Participation()
        steps = self.steps(samples, rng, backend)
        if sparse:
            return Participation(steps=steps)
        pattern = steps_to_pattern(steps, self.n_steps, backend.xp)
        return Participation(signal=self.signal_of(pattern, backend.xp), steps=steps)

    def participation_chain(self) -> ParticipationChain:
        """The availability chain of the sensitive example (the escort proposal's target,
        docs/rdp-escort.md §8)."""
        return ParticipationChain(
            n_steps=self.n_steps,
            min_sep=self.min_sep,
            probability=self.probability,
            warm_start=self.warm_start,
        )

    def escort_law(self) -> ChainEscortLaw | BinsEscortLaw:
        """The escort proposal's view of :meth:`participation_chain` (docs/rdp-escort.md §8).

        With p = 1 and the warm start the pattern is a uniform phase a in [0, b) and then every
        b-th step: exactly balls-in-bins with T = b bins (docs/rdp-escort.md §10.9), whose
        transfer pass affords far higher orders than the chain's ``(b + 1)^lam`` states and
        which has the add-direction bound of docs/math.md §10.2 (the chain's §10 bounds need
        p < 1)."""
        from minsep.accountants.escort_law import ChainEscortLaw

        chain = self.participation_chain()
        bands = len(self.coefficients)
        bins = chain.probability >= 1.0 and chain.warm_start and chain.min_sep > 1
        if bins and bands <= chain.min_sep:
            from minsep.accountants.bins_escort import BinsEscortLaw
            from minsep.schemes.balls_in_bins.loss import bin_gram

            gram = bin_gram(self.coefficients, self.n_steps, self.min_sep)
            return BinsEscortLaw(self.n_steps, self.min_sep, self.coefficients, gram)
        return ChainEscortLaw(chain, self.coefficients)

    def transcript_bytes(self, n_samples: int, direction: Direction, backend: Backend) -> int:
        """Bytes of the transcript :meth:`draw` returns (the memory of a chunk)."""
        per_sample = 8 * self.n_steps
        if direction is Direction.REMOVE:
            per_sample += 4 * -(-self.n_steps // self.min_sep)
            if backend.kernels not in self.kernel_table.sparse_ratio:
                per_sample += 8 * self.n_steps
        return n_samples * per_sample

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk (memory planning): on the fused paths the
        transcript plus one row of n (the kernels' scratch is per block, not per sample); on
        the portable path 8 rows of n under REMOVE (pattern, signal, noise, dots and the
        recursion's temporaries), 5 under ADD (measured peaks: 57 n and 32 n bytes)."""
        n = self.n_steps
        if backend.kernels in self.kernel_table.sparse_ratio:
            return self.transcript_bytes(1, direction, backend) + 8 * n
        return 8 * n * (8 if direction is Direction.REMOVE else 5)

    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """:func:`b_min_sep_log_ratio` (the array code)."""
        return b_min_sep_log_ratio(
            dots, self.tail_norms(xp), sigma, self.probability, self.min_sep, self.warm_start, xp
        )
