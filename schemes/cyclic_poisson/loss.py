"""Monte Carlo privacy loss of cyclic Poisson with a uniformly random phase (docs/math.md §4.1).

The sensitive example belongs to a uniform group g of b, independently of every other example,
and is Poisson(q)-sampled at the steps i with i mod b = g. With bands <= b its blocks are
disjoint, so given g the ratio is a product of one-block mixtures, and mixing over the phase,

    ln P/Q (y) = logsumexp_g [ sum_{i mod b = g} ln(1 - q + q r_i(y)) ] - ln b,
    r_i(y) = exp((<c_i, y> - ||c_i||^2 / 2) / sigma^2).

Phases with no step (b > n) contribute exp(0). b = 1 is Poisson sampling at rate q.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource, default_kernels
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.schemes.balls_in_bins.loss import balls_in_bins_log_ratio, fold_bins
from minsep.schemes.cyclic_poisson.fused import host_phase_steps, host_random_phase
from minsep.schemes.kernels.blocks import signal_dots, sliding_dot, tail_norms
from minsep.schemes.kernels.fields import as_coefficients, check_bands_fit, coefficients_validator
from minsep.schemes.kernels.fused import correlated_noise
from minsep.schemes.kernels.jit import CompiledKernels
from minsep.schemes.kernels.transcript import BlockTranscript


def random_phase_log_ratio(
    dots: Any, norms: Any, sigma: float, group_rate: float, groups: int, xp: Any
) -> Any:
    """``ln P/Q`` per sample from ``dots[:, i] = <c_i, y>`` and ``norms[i] = ||c_i||^2``."""
    log_block = (dots - 0.5 * norms) / sigma**2
    if group_rate >= 1.0:
        per_step = log_block
    else:
        per_step = xp.logaddexp(
            xp.full_like(log_block, math.log1p(-group_rate)), math.log(group_rate) + log_block
        )
    phases = fold_bins(per_step, groups, xp)
    n_phases = int(phases.shape[1])
    zero = xp.zeros((n_phases,), dtype=xp.float64)
    return balls_in_bins_log_ratio(phases, zero, 1.0, groups, groups - n_phases, xp)


@attrs.frozen
class RandomPhaseCyclicLossModel(CompiledKernels, PrivacyLossModel):
    """Dominating pair of cyclic Poisson with an independent uniform group per example.

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative), k <= ``groups``.
        n_steps: number of steps n.
        groups: b, the number of groups (step i samples group ``i mod b``).
        group_rate: q = b·p0, the sampling probability within the active group.

    Transcript: :class:`BlockTranscript` with the noise ``<c_i, z>`` (``8 n`` bytes per
    sample) and, under REMOVE, the participation: its steps on the fused kernels
    (:mod:`.fused`, ``4 ceil(n / b)`` bytes), the dense signal ``<c_i, C x>`` on the array code
    (``8 n``); sigma-free. Both paths draw the same stream and agree to rounding.
    """

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    groups: int = attrs.field(validator=v.positive_int())
    group_rate: float = attrs.field(validator=v.probability())

    def __attrs_post_init__(self) -> None:
        check_bands_fit(self, self.coefficients, self.groups)

    def participation(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Patterns x: a uniform phase g, then Bernoulli(q) at the steps ``i mod b = g``
        (bool ``(n_samples, n)``)."""
        xp = backend.xp
        u = rng.random((n_samples,))
        phase = xp.minimum(xp.astype(xp.floor(u * self.groups), xp.int64), self.groups - 1)
        coins = rng.random((n_samples, self.n_steps)) < self.group_rate
        step_phase = xp.arange(self.n_steps, dtype=xp.int64) % self.groups
        on_phase = xp.expand_dims(step_phase, axis=0) == xp.expand_dims(phase, axis=1)
        return xp.logical_and(on_phase, coins)

    def transcript_bytes(self, n_samples: int, direction: Direction, backend: Backend) -> int:
        """Bytes of the transcript :meth:`draw` returns: the noise, and under REMOVE the steps
        (fused kernels) or the dense signal (array code)."""
        per_sample = 8 * self.n_steps
        if direction is Direction.REMOVE:
            fused = self.kernel_set(backend) in _FUSED
            per_sample += 4 * -(-self.n_steps // self.groups) if fused else 8 * self.n_steps
        return n_samples * per_sample

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk: on the fused kernels the transcript plus one row
        of n (the kernels' scratch is per block or per row, not per sample); on the array code
        10 rows of n under REMOVE (coins, pattern, signal, noise, dots and the log-domain
        temporaries) and 7 under ADD (measured peaks: 56 n and 48 n bytes at n = 1500)."""
        n = self.n_steps
        if self.kernel_set(backend) in _FUSED:
            return self.transcript_bytes(1, direction, backend) + 8 * n
        return 8 * n * (10 if direction is Direction.REMOVE else 7)

    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> BlockTranscript:
        """Under REMOVE draw x (phase and coins), then z; under ADD only z (x = 0). On the
        fused kernels x is kept as its steps (the same draws)."""
        xp = backend.xp
        kernels = self.kernel_set(backend)
        signal = steps = None
        if direction is Direction.REMOVE:
            if kernels in _FUSED:
                steps = host_phase_steps(n_samples, self.n_steps, self.groups, self.group_rate, rng)
            else:
                pattern = xp.astype(self.participation(n_samples, rng, backend), xp.float64)
                signal = signal_dots(pattern, self.coefficients, xp)
        noise = correlated_noise(
            n_samples, self.n_steps, self.coefficients, rng, xp, kernels=backend.kernels
        )
        return BlockTranscript(
            direction=direction,
            xp=xp,
            noise=noise,
            signal=signal,
            steps=steps,
            coefficients=self.coefficients,
            kernels=kernels,
        )

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        """``ln P(y)/Q(y)`` with ``<c_i, y> = signal_i + sigma noise_i``."""
        fused = _FUSED.get(transcript.kernels)
        if fused is not None and transcript.stored_signal is None:
            return fused(
                transcript.noise,
                transcript.steps,
                self.coefficients,
                sigma,
                1.0 / sigma,
                self.group_rate,
                self.groups,
            )
        dots = sigma * transcript.noise
        if transcript.signal is not None:
            dots = transcript.signal + dots
        return self._from_dots(dots, sigma, transcript.xp)

    def log_ratio_at(self, outputs: Any, sigma: float, xp: Any, kernels: str | None = None) -> Any:
        """``ln P(y)/Q(y)`` at given outputs ``y`` (float64 ``(n_samples, n)`` of ``xp``), with
        ``kernels`` (default: those of a default backend over ``xp``)."""
        dots = sliding_dot(outputs, self.coefficients, xp)
        fused = _FUSED.get(kernels or default_kernels(xp))
        if fused is not None:
            args = (self.coefficients, sigma, 1.0 / sigma**2, self.group_rate, self.groups)
            return fused(dots, None, *args)
        return self._from_dots(dots, sigma, xp)

    def _from_dots(self, dots: Any, sigma: float, xp: Any) -> Any:
        norms = xp.asarray(tail_norms(self.coefficients, self.n_steps))
        return random_phase_log_ratio(dots, norms, sigma, self.group_rate, self.groups, xp)


#: The fused log-ratio of each kernel set that has one (others: portable array code).
_FUSED: dict[str, Callable[..., Any]] = {"numba": host_random_phase}
