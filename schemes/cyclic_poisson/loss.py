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
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.kernel_table import KernelTable, Participation
from minsep.framework.loss_model import Direction
from minsep.framework.phase_mixture import PhaseMixture
from minsep.schemes.balls_in_bins.loss import balls_in_bins_log_ratio, fold_bins
from minsep.schemes.cyclic_poisson.fused import host_phase_steps, host_random_phase
from minsep.schemes.kernels.fields import as_coefficients, check_bands_fit, coefficients_validator
from minsep.schemes.kernels.fused import host_noise
from minsep.schemes.kernels.model import BlockLossModel

if TYPE_CHECKING:
    from minsep.accountants.escort_law import PhaseEscortLaw


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
class RandomPhaseCyclicLossModel(BlockLossModel):
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

    kernel_table: ClassVar[KernelTable] = KernelTable(
        noise={"numba": host_noise}, sparse_ratio={"numba": host_random_phase}
    )

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    groups: int = attrs.field(validator=v.positive_int())
    group_rate: float = attrs.field(validator=v.probability())

    def __attrs_post_init__(self) -> None:
        check_bands_fit(self, self.coefficients, self.groups)

    def phase_mixture(self) -> PhaseMixture:
        """The sensitive example's law: a uniform phase, then Bernoulli(q) at its steps."""
        return PhaseMixture(n_steps=self.n_steps, phases=self.groups, probability=self.group_rate)

    def escort_law(self) -> PhaseEscortLaw:
        """The escort proposal's view of :meth:`phase_mixture` (docs/rdp-escort.md §10.6)."""
        from minsep.accountants.escort_law import PhaseEscortLaw

        return PhaseEscortLaw(self.phase_mixture(), self.coefficients)

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
            fused = self.kernel_set(backend) in self.kernel_table.sparse_ratio
            per_sample += 4 * -(-self.n_steps // self.groups) if fused else 8 * self.n_steps
        return n_samples * per_sample

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes per sample of a chunk: on the fused kernels the transcript plus one row
        of n (the kernels' scratch is per block or per row, not per sample); on the array code
        10 rows of n under REMOVE (coins, pattern, signal, noise, dots and the log-domain
        temporaries) and 7 under ADD (measured peaks: 56 n and 48 n bytes at n = 1500)."""
        n = self.n_steps
        if self.kernel_set(backend) in self.kernel_table.sparse_ratio:
            return self.transcript_bytes(1, direction, backend) + 8 * n
        return 8 * n * (10 if direction is Direction.REMOVE else 7)

    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """Under REMOVE x (phase and coins): its steps when ``sparse`` (the same draws), else
        its dense signal; under ADD nothing (x = 0)."""
        if direction is not Direction.REMOVE:
            return Participation()
        if sparse:
            steps = host_phase_steps(samples, self.n_steps, self.groups, self.group_rate, rng)
            return Participation(steps=steps)
        pattern = self.participation(samples, rng, backend)
        return Participation(signal=self.signal_of(pattern, backend.xp))

    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """:func:`random_phase_log_ratio` (the array code)."""
        return random_phase_log_ratio(
            dots, self.tail_norms(xp), sigma, self.group_rate, self.groups, xp
        )
