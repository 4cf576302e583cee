"""Monte Carlo privacy loss of BandMF with b-min-sep subsampling (MATH.md §3, Theorem 5.1).

With min-sep b >= k bands, participations occupy disjoint blocks of rows, and

    f_i = (1-p) f_{i+1} + p r_i f_{i+b},  f_j = 1 (j > n),
    r_i(y) = exp((<c_i, y> - ||c_i||^2 / 2) / sigma^2),

gives P/Q = f_1 (cold start, Algorithm 1) or (f_1 + p sum_{i=2}^b f_i) / (1 + (b-1)p) (warm
start, Algorithm 2). b = 1 with C = I is Poisson sampling: P/Q = prod_i (1 - p + p r_i) (§4).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.schemes.losses.blocks import signal_dots, sliding_dot, tail_norms
from minsep.schemes.losses.fields import (
    as_coefficients,
    boolean,
    check_bands_fit,
    coefficients_validator,
)
from minsep.schemes.losses.recursion import (
    backward_log_recursion,
    log_or_neg_inf,
    warm_start_average,
)
from minsep.schemes.losses.sampling import chain_participation
from minsep.schemes.losses.transcript import BlockTranscript


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
    norms ``norms[i] = ||c_i||^2`` (an ``(n,)`` array of ``xp``)."""
    log_block = (dots - 0.5 * norms) / sigma**2
    log_go = math.log(probability) + log_block
    g = backward_log_recursion(log_go, log_or_neg_inf(1.0 - probability), min_sep, xp)
    return warm_start_average(g, probability, xp) if warm_start else g[0]


@attrs.frozen
class BMinSepLossModel(PrivacyLossModel):
    """Dominating pair of b-min-sep subsampling with b-banded Toeplitz C (Theorem 5.1).

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative; not renormalised), k <= ``min_sep``.
        n_steps: number of steps n.
        min_sep: b, the minimum separation between two participations.
        probability: the per-step sampling probability p of an available example (not p0).
        warm_start: Algorithm 2 (initial state from the stationary law) instead of Algorithm 1.

    Transcript: :class:`BlockTranscript`, ``16 n`` bytes per sample under REMOVE, ``8 n`` under
    ADD. Cost per sample: O(n k) (direct) or O(n log n) (FFT) for the sliding products, O(n)
    for the recursion per sigma, plus O(b) for the warm-start average.
    """

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    min_sep: int = attrs.field(validator=v.positive_int())
    probability: float = attrs.field(validator=v.probability())
    warm_start: bool = attrs.field(validator=boolean)

    def __attrs_post_init__(self) -> None:
        check_bands_fit(self, self.coefficients, self.min_sep)

    def participation(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Participation patterns x of the sensitive example, bool ``(n_samples, n)``."""
        return chain_participation(
            n_samples,
            self.n_steps,
            self.probability,
            self.min_sep,
            self.warm_start,
            rng,
            backend.xp,
        )

    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> BlockTranscript:
        """Under REMOVE draw x, then z; under ADD only z (x = 0)."""
        xp = backend.xp
        signal = None
        if direction is Direction.REMOVE:
            x = xp.astype(self.participation(n_samples, rng, backend), xp.float64)
            signal = signal_dots(x, self.coefficients, xp)
        z = rng.standard_normal((n_samples, self.n_steps))
        noise = sliding_dot(z, self.coefficients, xp)
        return BlockTranscript(direction=direction, xp=xp, noise=noise, signal=signal)

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        """``ln P(y)/Q(y)`` with ``<c_i, y> = signal_i + sigma noise_i``."""
        xp = transcript.xp
        dots = sigma * transcript.noise
        if transcript.signal is not None:
            dots = transcript.signal + dots
        return self._from_dots(dots, sigma, xp)

    def log_ratio_at(self, outputs: Any, sigma: float, xp: Any) -> Any:
        """``ln P(y)/Q(y)`` at given outputs ``y`` (float64 ``(n_samples, n)`` of ``xp``)."""
        return self._from_dots(sliding_dot(outputs, self.coefficients, xp), sigma, xp)

    def _from_dots(self, dots: Any, sigma: float, xp: Any) -> Any:
        norms = xp.asarray(tail_norms(self.coefficients, self.n_steps))
        return b_min_sep_log_ratio(
            dots, norms, sigma, self.probability, self.min_sep, self.warm_start, xp
        )
