"""Monte Carlo privacy loss of multi-attribution b-min-sep subsampling (docs/math.md §5, paper §6).

The dominating single-user process (Theorem of §6.2, Algorithm 3): x_i = 0 if any of
x_{i-b+1..i-1} > 0, else x_i ~ Binomial(k_u, p). With b >= k bands the recursion

    f_i = (1-p)^{k_u} f_{i+1} + sum_{j=1}^{k_u} C(k_u, j) p^j (1-p)^{k_u-j} r_i^{(j)} f_{i+b},
    r_i^{(j)} = exp((j <c_i, y> - j^2 ||c_i||^2 / 2) / sigma^2),

gives P/Q = f_1 (cold start). The paper simulates a warm start with burn-in batches and
accounts it as cold (a post-processing of the cold-start mechanism), so only cold is modelled.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.kernel_table import KernelTable, Participation
from minsep.framework.loss_model import Direction
from minsep.schemes.kernels.fields import as_coefficients, check_bands_fit, coefficients_validator
from minsep.schemes.kernels.fused import host_noise
from minsep.schemes.kernels.model import BlockLossModel
from minsep.schemes.kernels.recursion import (
    backward_log_recursion,
    log_or_neg_inf,
    logsumexp_terms,
)
from minsep.schemes.kernels.sampling import user_participation
from minsep.schemes.multi_attribution import gpu_kernels
from minsep.schemes.multi_attribution.fused import host_multi_attribution, host_user_steps

#: Most trials for which binomial_log_weights uses exact big-integer coefficients.
EXACT_TRIALS = 1000


@functools.lru_cache(maxsize=32)
def binomial_log_weights(trials: int, p: float) -> list[float]:
    """``ln Pr[Binomial(trials, p) = j]`` for j = 0..trials (``-inf`` for impossible j).

    Exact binomial coefficients up to ``EXACT_TRIALS`` trials; beyond, scipy's ``binom.logpmf``
    (log-gamma form, float64 rounding; exact big-integer coefficients would cost O(k_u^2)).
    Cached (it is needed for every sigma of every chunk); callers must not mutate the list.
    """
    from scipy import special  # lazy: scipy.special costs ~0.15 s to import

    if trials > EXACT_TRIALS:
        from scipy import stats  # lazy: scipy.stats costs ~0.7 s to import

        with np.errstate(divide="ignore"):
            logpmf = stats.binom.logpmf(np.arange(trials + 1), trials, p)
        return [float(w) for w in logpmf]
    log_p, log_q = log_or_neg_inf(p), log_or_neg_inf(1.0 - p)
    weights = []
    for j in range(trials + 1):
        log_w = math.log(special.comb(trials, j, exact=True))
        log_w += j * log_p if j else 0.0
        log_w += (trials - j) * log_q if trials - j else 0.0
        weights.append(log_w)
    return weights


def multi_attribution_log_ratio(
    dots: Any,
    norms: Any,
    sigma: float,
    probability: float,
    min_sep: int,
    max_user_examples: int,
    xp: Any,
    *,
    kernels: str,
) -> Any:
    """The log-ratio kernel: ``ln P/Q`` per sample from ``dots[:, i] = <c_i, y>`` and the tail
    norms ``norms[i] = ||c_i||^2`` (an ``(n,)`` array of ``xp``), run with ``kernels``."""
    weights = binomial_log_weights(max_user_examples, probability)
    scaled_dots, scaled_norms = dots / sigma**2, norms / sigma**2
    counts = [j for j in range(1, max_user_examples + 1) if math.isfinite(weights[j])]

    def term(j: int) -> Any:  # ln[Pr(j examples) r^{(j)}], one (n_samples, n) array at a time
        return weights[j] + j * scaled_dots - (0.5 * j * j) * scaled_norms

    log_go = logsumexp_terms(term, counts, xp)
    g = backward_log_recursion(log_go, weights[0], min_sep, xp, kernels=kernels)
    return g[0]


#: The largest k_u the Monte Carlo loss takes: its cost is O(n k_u) per sample and sigma, a
#: loop over the k_u binomial terms. Measured at n = 8 on one core: k_u = 10**4 takes 7 s per
#: 4096 samples (about an hour for 10**6 samples, both directions); k_u = 10**6 about 35 s
#: for a single sample.
MAX_USER_EXAMPLES = 10_000


@attrs.frozen
class MultiAttributionLossModel(BlockLossModel):
    """Dominating pair of multi-attribution b-min-sep subsampling, Algorithm 3 (cold start).

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative; not renormalised), k <= ``min_sep``.
        n_steps: number of steps n.
        min_sep: b, the user-level minimum separation.
        probability: p, the per-step holding-set probability of every example.
        max_user_examples: k_u, the most examples attributed to one user after contribution
            bounding.

    Transcript: :class:`BlockTranscript`; on the portable array path ``16 n`` bytes per sample
    under REMOVE (dense signal), ``8 n`` under ADD; on the fused paths the noise plus, under
    REMOVE, the steps and counts of the user's participations (``8 ceil(n / b)`` bytes).
    Cost per sample: n uniforms and n normals, the sliding products (O(n k) or O(n log n)),
    then O(n k_u) per sigma: on the fused path one exp and k_u multiply-adds per step (the
    block weight as a polynomial in r_i, docs/math.md §5), or one exp per step and term where
    that form would leave the float64 range.

    Paths (same random stream, same values up to rounding): fused numba kernels on host numpy
    (:mod:`.fused`), the array code's draw with a fused CUDA log-ratio on cupy
    (:mod:`.gpu_kernels`), and portable array code elsewhere.
    """

    kernel_table: ClassVar[KernelTable] = KernelTable(
        noise={"numba": host_noise},
        sparse_ratio={"numba": host_multi_attribution},
        dense_ratio={"cuda": gpu_kernels.device_multi_attribution},
    )

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    min_sep: int = attrs.field(validator=v.positive_int())
    probability: float = attrs.field(validator=v.probability())
    max_user_examples: int = attrs.field(validator=v.positive_int())

    def __attrs_post_init__(self) -> None:
        check_bands_fit(self, self.coefficients, self.min_sep)
        if self.max_user_examples > MAX_USER_EXAMPLES:
            raise v.fail(
                self,
                "max_user_examples",
                self.max_user_examples,
                f"an integer in [1, {MAX_USER_EXAMPLES}] for Monte Carlo accounting (its loss "
                "sums k_u terms per step and sample, O(n k_u) time); "
                "the gaussian accountant bounds larger k_u",
            )

    def participation(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Per-step participation counts of the user, float64 ``(n_samples, n)``."""
        self._note()
        return self._participation(n_samples, rng, backend)

    def _participation(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        return user_participation(
            n_samples,
            self.n_steps,
            self.probability,
            self.min_sep,
            self.max_user_examples,
            rng,
            backend.xp,
        )

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk (memory planning). Portable path: 10 rows of n
        float64, whatever k_u (the transcript's 2, and dots, scaled dots, one term, its peak,
        running sum and temporaries of the streamed sum over j; measured peak 72 n bytes).
        Fused path: the transcript plus one row of n (its scratch is per block)."""
        n = self.n_steps
        if self.kernel_set(backend) in self.kernel_table.sparse_ratio:
            sparse = 8 * -(-n // self.min_sep) if direction is Direction.REMOVE else 0
            return 8 * n + sparse + 8 * n
        return 8 * 10 * n

    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """Under REMOVE the user's counts x: kept at the steps where they are positive when
        ``sparse`` (the same uniforms), else as the dense signal; under ADD nothing (x = 0)."""
        if direction is not Direction.REMOVE:
            return Participation()
        if sparse:
            steps, counts = host_user_steps(
                samples, self.n_steps, self.probability, self.min_sep, self.max_user_examples, rng
            )
            return Participation(steps=steps, weights=counts)
        x = self._participation(samples, rng, backend)
        return Participation(signal=self.signal_of(x, backend.xp))

    def log_weights(self) -> tuple[float, ...]:
        """``ln Pr[Binomial(k_u, p) = j]`` for j = 0..k_u (the compiled entries read them)."""
        return tuple(binomial_log_weights(self.max_user_examples, self.probability))

    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """:func:`multi_attribution_log_ratio` (the array code)."""
        return multi_attribution_log_ratio(
            dots,
            self.tail_norms(xp),
            sigma,
            self.probability,
            self.min_sep,
            self.max_user_examples,
            xp,
            kernels=kernels,
        )


@attrs.frozen
class ConjecturedMultiAttributionLossModel(MultiAttributionLossModel):
    """Algorithm 4 (exclusion by realised batches), accounted as Algorithm 3.

    **The bound is a conjecture** (paper §6.3): the coupling proof of Algorithm 3 does not carry
    over, and no proof that Algorithm 3's dominating pair still dominates is known. Every draw
    and every evaluation emits a ``UserWarning``; ``conjectured`` is True so that accountants
    and results can flag it.
    """

    conjectured: ClassVar[bool] = True

    def _note(self) -> None:
        warnings.warn(
            "multi-attribution Algorithm 4 is accounted with Algorithm 3's dominating pair; "
            "that this bounds Algorithm 4 is a conjecture (paper §6.3), not a theorem",
            UserWarning,
            stacklevel=3,
        )
