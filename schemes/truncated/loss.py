"""Monte Carlo privacy loss of truncated b-min-sep subsampling (docs/math.md §6, paper App. D).

Sampler: b-min-sep, then if the pre-truncation batch exceeds B_max a uniform B_max of it is
kept; dropped examples stay barred for b-1 steps (so every chain is unaffected by truncation).
Zero-out adjacency, public dataset size |D|.

The adversary is also given r_i, the number of *other* examples sampled at step i before
truncation (post-processing only helps it; r has the same law under both datasets). Given r,
with t_i = B_max / (r_i + 1), the dominating pair of paper App. D (Lemma D.1 + Ganesh 2025) is
P = N(C x, sigma^2 I), Q = N(C x', sigma^2 I) where, for the sensitive example's own b-min-sep
pattern and independent survival coins of probability t_i at truncating steps (r_i >= B_max):

    x_i  = 1 (sampled, no truncation), 2 (sampled, truncation, survives), else 0;
    x'_i = -1 (sampled, truncation, survives), else 0.

With R = N(0, sigma^2 I), both P/R and Q/R follow the recursion of Theorem 5.1 with per-block
ratios
    P: r_i^{(1)} if r_i < B_max, else t_i r_i^{(2)} + (1 - t_i);
    Q: 1         if r_i < B_max, else t_i r_i^{(-1)} + (1 - t_i),
r_i^{(j)} = exp((j <c_i, y> - j^2 ||c_i||^2 / 2) / sigma^2); ln P/Q = ln P/R - ln Q/R, the
warm-start average being applied to P/R and Q/R separately before the ratio (App. D).
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.kernel_table import KernelTable, Participation
from minsep.framework.loss_model import Direction
from minsep.schemes.kernels.fused import host_noise
from minsep.schemes.kernels.model import ChainLossModel
from minsep.schemes.kernels.recursion import chain_log_ratio
from minsep.schemes.kernels.sampling import host_generator, steps_to_pattern
from minsep.schemes.kernels.transcript import BlockTranscript, TruncatedTranscript
from minsep.schemes.truncated import gpu_kernels
from minsep.schemes.truncated.counts import table_counts
from minsep.schemes.truncated.fused import host_losses, host_pattern, host_truncated


def survival_probability(counts: Any, max_batch_size: int, xp: Any) -> Any:
    """``t_i = B_max / (r_i + 1)`` where truncation happens (r_i >= B_max); there it is < 1.

    Elsewhere the value is ``B_max / (B_max + 1)`` (a placeholder below 1, so that its
    logarithms stay finite; callers select with ``counts >= B_max``).
    """
    return max_batch_size / xp.maximum(xp.astype(counts, xp.float64) + 1.0, max_batch_size + 1.0)


def values_at_steps(values: Any, steps: Any, n_steps: int, xp: Any) -> Any:
    """float64 ``(S, n)``: ``values[s, j]`` at step ``steps[s, j]`` (slot j of sample s; the
    sentinel n dropped), 0 at the other steps. numpy and cupy scatter; other array-API
    namespaces select column by column (O(S m n): for small problems and tests)."""
    n_samples, m = int(steps.shape[0]), int(steps.shape[1])
    if getattr(xp, "__name__", "") in ("numpy", "cupy"):
        dense = xp.zeros((n_samples, n_steps + 1), dtype=xp.float64)
        dense[xp.arange(n_samples)[:, None], steps] = values
        return dense[:, :n_steps]
    dense = xp.zeros((n_samples, n_steps), dtype=xp.float64)
    grid = xp.reshape(xp.arange(n_steps, dtype=steps.dtype), (1, n_steps))
    for j in range(m):
        dense = xp.where(steps[:, j : j + 1] == grid, values[:, j : j + 1], dense)
    return dense


def truncated_log_ratio(
    dots: Any,
    norms: Any,
    counts: Any,
    sigma: float,
    probability: float,
    min_sep: int,
    warm_start: bool,
    max_batch_size: int,
    xp: Any,
    *,
    kernels: str,
) -> Any:
    """The log-ratio kernel: ``ln P/Q`` from ``dots[:, i] = <c_i, y>``, the tail norms and the
    counts r (both recursions against R = N(0, sigma^2 I), then subtracted), run with
    ``kernels``."""
    scaled_dots, scaled_norms = dots / sigma**2, norms / sigma**2
    truncating = counts >= max_batch_size
    keep = survival_probability(counts, max_batch_size, xp)
    log_keep, log_drop = xp.log(keep), xp.log1p(-keep)
    log_p_block = xp.where(
        truncating,
        xp.logaddexp(log_keep + 2.0 * scaled_dots - 2.0 * scaled_norms, log_drop),
        scaled_dots - 0.5 * scaled_norms,
    )
    log_q_block = xp.where(
        truncating,
        xp.logaddexp(log_keep - scaled_dots - 0.5 * scaled_norms, log_drop),
        0.0,
    )
    settings = (probability, min_sep, warm_start, xp)
    log_p = chain_log_ratio(log_p_block, *settings, kernels=kernels)
    return log_p - chain_log_ratio(log_q_block, *settings, kernels=kernels)


@attrs.frozen
class TruncatedBMinSepLossModel(ChainLossModel):
    """Dominating pair of truncated b-min-sep subsampling, given the public counts r_i.

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative; not renormalised), k <= ``min_sep``.
        n_steps: number of steps n.
        min_sep: b.
        probability: the per-step sampling probability p of an available example (not p0).
        warm_start: Algorithm 2 for every example (the others' initial state counts are
            Multinomial(|D| - 1, pi)) instead of Algorithm 1.
        dataset_size: |D| (public), including the sensitive example.
        max_batch_size: B_max, the truncation threshold.

    Unlike the untruncated models, Q is not N(0, sigma^2 I): under ADD a pattern x' (entries 0
    or -1) is drawn too. Transcript: :class:`TruncatedTranscript`, ``24 n`` bytes per sample in
    both directions on the portable array path (dense signal); on the fused path ``10 n`` to
    ``16 n`` (int16 to int64 counts) plus the sampled steps and x there (``12 ceil(n / b)``).
    Cost per sample: the chain by geometric gaps (one uniform per participation, plus one),
    n host binomial draws for r (one uniform and a table lookup each), ``ceil(n / b)``
    survival coins (one per participation slot), n normals, the sliding products (O(n k) or
    O(n log n)), then two O(n) recursions per sigma.

    The counts r are drawn on the host (inverse-CDF tables of the binomials, :mod:`.counts`,
    and a numpy multinomial for the warm start) by a generator seeded from the RandomSource's
    uniforms, then moved to the backend (cupy pays one transfer).

    Paths (same random stream, same values up to rounding): fused numba kernels on host numpy
    (:mod:`.fused`), the array code's draw with a fused CUDA log-ratio on cupy
    (:mod:`.gpu_kernels`), and portable array code elsewhere.
    """

    transcript_type: ClassVar[type[BlockTranscript]] = TruncatedTranscript
    kernel_table: ClassVar[KernelTable] = KernelTable(
        noise={"numba": host_noise},
        sparse_ratio={"numba": host_truncated},
        dense_ratio={"cuda": gpu_kernels.device_truncated},
        losses={"numba": host_losses},
    )

    dataset_size: int = attrs.field(validator=v.positive_int())
    max_batch_size: int = attrs.field(validator=v.positive_int())

    def counts(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """The public counts r_i of the other |D| - 1 examples, int64 ``(n_samples, n)``."""
        generator = host_generator(rng, backend)
        host = table_counts(
            n_samples,
            self.n_steps,
            self.dataset_size - 1,
            self.probability,
            self.min_sep,
            self.warm_start,
            generator,
        )
        return backend.asarray(host)

    def participation(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> tuple[Any, Any]:
        """``(x, r)``: the pattern (x under REMOVE, x' under ADD; float64) and the counts.

        Stream: the sensitive example's steps
        (:func:`~minsep.schemes.kernels.sampling.chain_steps`), the counts (:meth:`counts`),
        then ``S x ceil(n / b)`` survival coins, coin j deciding at the j-th participation
        (a coin per participation slot: the coins of distinct steps are independent)."""
        xp = backend.xp
        steps = self.steps(n_samples, rng, backend)
        sampled = steps_to_pattern(steps, self.n_steps, xp)
        counts = self.counts(n_samples, rng, backend)
        truncating = counts >= self.max_batch_size
        coins = values_at_steps(
            rng.random((n_samples, int(steps.shape[1]))), steps, self.n_steps, xp
        )
        survives = (
            sampled & truncating & (coins < survival_probability(counts, self.max_batch_size, xp))
        )
        if direction is Direction.REMOVE:
            x = xp.astype(sampled & ~truncating, xp.float64) + 2.0 * xp.astype(survives, xp.float64)
        else:
            x = -xp.astype(survives, xp.float64)
        return x, counts

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk (memory planning). Portable path: 12 rows of n (the
        transcript's 3, the coins and pattern of the draw, and the two recursions' blocks
        during the evaluation; measured peak 90 n bytes). Fused path: the transcript (at most
        ``16 n`` plus ``12 ceil(n / b)``) and one row of n."""
        n = self.n_steps
        if self.kernel_set(backend) in self.kernel_table.sparse_ratio:
            return 24 * n + 12 * -(-n // self.min_sep)
        return 8 * 12 * n

    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """(x, r) for ``direction`` (P under REMOVE, Q under ADD): x kept at the sampled steps
        when ``sparse`` (:func:`~.fused.host_pattern`, the same streams), else as the dense
        signal; r as the counts."""
        if sparse:
            steps, weights, counts = host_pattern(
                samples,
                self.n_steps,
                self.probability,
                self.min_sep,
                self.warm_start,
                self.dataset_size,
                self.max_batch_size,
                direction is Direction.REMOVE,
                rng,
                backend,
            )
            return Participation(steps=steps, weights=weights, counts=counts)
        x, counts = self.participation(samples, direction, rng, backend)
        return Participation(signal=self.signal_of(x, backend.xp), counts=counts)

    def log_ratio_at(  # type: ignore[override]
        self, outputs: Any, counts: Any, sigma: float, xp: Any, kernels: str | None = None
    ) -> Any:
        """``ln P(y | r)/Q(y | r)`` at given outputs ``y`` and counts ``r`` (``(S, n)`` each),
        with ``kernels`` (default: those of a default backend over ``xp``)."""
        return self.ratio_at(outputs, Participation(counts=counts), sigma, xp, kernels)

    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """:func:`truncated_log_ratio` given the counts r (the array code)."""
        return truncated_log_ratio(
            dots,
            self.tail_norms(xp),
            given.counts,
            sigma,
            self.probability,
            self.min_sep,
            self.warm_start,
            self.max_batch_size,
            xp,
            kernels=kernels,
        )
