"""What the escort engine needs from a loss model's participation law (docs/rdp-escort.md §8).

A loss model the escort can serve returns an :class:`EscortLaw` from ``escort_law()``. The
engine (:mod:`.escort_setup`, :mod:`.escort_sampling`, :mod:`.escort_add`) talks to the law
only, never to its type:

- ``ln Z_lam`` at sigma (the exact moment; the engine inflates it by ``INFLATE``), and which
  orders are affordable under a memory budget;
- exact draws of the escort's tuple law (:class:`~minsep.accountants.escort.EscortDraw`: the
  per-step participation counts of the lam copies);
- ``ln pi(empty)`` (the add direction is exactly 0 at and above ``ln(1 / pi(empty))``, §5) and
  the deterministic add-direction bound (:class:`~minsep.accountants.add_bound.
  AddDirectionBound`, docs/math.md §10), and where the law has one the sampled block bound
  (:class:`~minsep.accountants.block_add_bound.BlockAddBound`, docs/math.md §10.1).

Three laws exist: :class:`ChainEscortLaw` (b-min-sep BandMF, Poisson as b = 1; §2-§6),
:class:`PhaseEscortLaw` (random-phase cyclic Poisson; §10) and
:class:`~minsep.accountants.bins_escort.BinsEscortLaw` (balls-in-bins; §10.8). All escorts are
``R_lam = u^lam Q / Z_lam`` of a mixture of Gaussians ``N(C x, sigma^2 I)``, so the weight
``W`` and its bound ``s_lam(eps)`` (§6) and the certificate of §8 are the same for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs
import numpy as np

from minsep.accountants import multiset_moments, phase_moments
from minsep.accountants.add_bound import (
    AddDirectionBound,
    ChernoffAddBound,
    banded_operator_norm_upper,
    chain_add_bound,
    phase_add_bound,
)
from minsep.accountants.bins_escort import BinsEscortLaw
from minsep.accountants.block_add_bound import BlockAddBound, certify_block_bound
from minsep.accountants.escort import EscortDraw
from minsep.accountants.multiset_escort import (
    forward_log_moment,
    sample_multiset_escort_batch,
    sample_multiset_escort_counts,
)
from minsep.accountants.phase_escort import sample_phase_escort_counts
from minsep.framework.participation import ParticipationChain
from minsep.framework.phase_mixture import PhaseMixture

__all__ = [
    "CHAIN_MAX_WORK",
    "PHASE_MAX_WORK",
    "BinsEscortLaw",
    "ChainEscortLaw",
    "EscortLaw",
    "PhaseEscortLaw",
]

#: Element operations one forward pass of a phase mixture may cost (the ``rdp`` accountant's
#: default ``max_work``): each escort sampling call runs it, so an order beyond it is skipped
#: (b = 8, n = 1024: orders 2-4).
PHASE_MAX_WORK = 2**25
#: Operations (:func:`~minsep.accountants.multiset_moments.work`) one multiset pass of a
#: b-min-sep chain may cost: every sampling call runs two (about 2-4 s each at the cap), and
#: the sampler keeps about ``2 sqrt(n)`` messages. At n = 1024 it allows every default order
#: at b = 8 and order 4 at b = 64; at the paper's n = 7200, b = 256 order 2 only.
CHAIN_MAX_WORK = 2**30


def _float_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


class EscortLaw(Protocol):
    """The participation law of a loss model, as the escort engine uses it (module docstring)."""

    @property
    def n_steps(self) -> int: ...

    @property
    def coefficients(self) -> np.ndarray:
        """c_0..c_{k-1} of the banded C the draws' outputs ``y = C sum_j x_j + sigma z`` use."""

    @property
    def budget_note(self) -> str:
        """How the memory of an order grows, for refusals (e.g. ``min-sep 4 (C(b + lam - 1, lam)
        states)``)."""

    def affordable(self, order: int, max_states: int) -> bool:
        """Whether order ``order``'s forward pass fits ``max_states`` (and the law's time)."""

    def log_moment(self, sigma: float, order: int, max_states: int) -> float:
        """The exact ``ln Z_lam`` (ConfigurationError when the pass cannot run at sigma)."""

    def sample(
        self, sigma: float, order: int, n_samples: int, rng: np.random.Generator, max_states: int
    ) -> EscortDraw:
        """``n_samples`` exact independent draws of the escort's per-step counts."""

    def log_no_participation(self) -> float:
        """``ln pi(empty)`` (``-inf`` when every unit participates)."""

    def add_bound(self, sigma: float) -> ChernoffAddBound:
        """The deterministic add-direction bound at sigma (docs/math.md §10, §10.2)."""

    def sampled_add_bound(
        self,
        sigma: float,
        delta: float,
        seed: int,
        at_epsilon: float | None = None,
        enough: float | None = None,
    ) -> BlockAddBound | None:
        """The sampled block bound of docs/math.md §10.1 aimed at ``delta`` (or at the add delta
        at ``at_epsilon``) from ``seed``'s block stream, verified on the fewest rows predicted
        to reach ``enough`` (:func:`~.block_add_bound.certify_block_bound`), or None where the
        law has none."""


@attrs.frozen
class ChainEscortLaw:
    """b-min-sep availability chain under banded C (docs/rdp-escort.md §2-§6; Poisson as
    b = 1): the multiset chain of §3.1 (``C(b + lam - 1, lam)`` states) and its compiled
    backward walk, the chain's §10 bound with ``||C||_op`` bounded by Collatz-Wielandt."""

    chain: ParticipationChain
    coefficients: np.ndarray = attrs.field(converter=_float_array, eq=False)

    @property
    def n_steps(self) -> int:
        return self.chain.n_steps

    @property
    def budget_note(self) -> str:
        return (
            f"min-sep {self.chain.min_sep} (C(b + lam - 1, lam) states, at most "
            f"{CHAIN_MAX_WORK} operations per pass)"
        )

    def affordable(self, order: int, max_states: int) -> bool:
        b, n = self.chain.min_sep, self.chain.n_steps
        return (
            multiset_moments.stored_states(b, order) <= max_states
            and multiset_moments.work(n, b, order) <= CHAIN_MAX_WORK
        )

    def log_moment(self, sigma: float, order: int, max_states: int) -> float:
        # the escort's checkpointing pass: the same float, kept for the draws that follow
        return forward_log_moment(
            self.chain, self.coefficients, sigma, order, max_states=max_states
        )

    def sample(
        self, sigma: float, order: int, n_samples: int, rng: np.random.Generator, max_states: int
    ) -> EscortDraw:
        return sample_multiset_escort_counts(
            self.chain, self.coefficients, sigma, order, n_samples, rng, max_states=max_states
        )

    def sample_batch(
        self,
        sigma: float,
        order: int,
        sizes: list[int],
        rngs: list[np.random.Generator],
        max_states: int,
    ) -> list[EscortDraw]:
        """:meth:`sample` on each generator, the same draws, one message recomputation."""
        return sample_multiset_escort_batch(
            self.chain, self.coefficients, sigma, order, sizes, rngs, max_states=max_states
        )

    def log_no_participation(self) -> float:
        return self.chain.log_no_participation()

    def add_bound(self, sigma: float) -> AddDirectionBound:
        norm = banded_operator_norm_upper(self.coefficients, self.chain.n_steps)
        return chain_add_bound(self.chain, norm, sigma)

    def sampled_add_bound(
        self,
        sigma: float,
        delta: float,
        seed: int,
        at_epsilon: float | None = None,
        enough: float | None = None,
    ) -> BlockAddBound | None:
        """§10.1 needs p < 1 and bands <= b (disjoint columns within a pattern)."""
        if self.chain.probability >= 1.0 or self.coefficients.size > self.chain.min_sep:
            return None
        return certify_block_bound(
            self.chain, self.coefficients, sigma, delta, seed, at_epsilon=at_epsilon, enough=enough
        )


@attrs.frozen
class PhaseEscortLaw:
    """Random-phase cyclic Poisson (docs/rdp-escort.md §10): ``C(b + lam - 1, lam) 2^lam``
    entries, passes within :data:`PHASE_MAX_WORK` operations, draws by
    :func:`~minsep.accountants.phase_escort.sample_phase_escort_counts` (§10.6) and the
    per-phase Chernoff bound (§10.4). ``ln Z`` comes from the same pass as the draws (b = 1
    too, where the ``rdp`` accountant uses Poisson's closed form)."""

    mixture: PhaseMixture
    coefficients: np.ndarray = attrs.field(converter=_float_array, eq=False)

    @property
    def n_steps(self) -> int:
        return self.mixture.n_steps

    @property
    def budget_note(self) -> str:
        return (
            f"{self.mixture.phases} phases (C(b + lam - 1, lam) * 2^lam entries, at most "
            f"{PHASE_MAX_WORK} operations per pass)"
        )

    def affordable(self, order: int, max_states: int) -> bool:
        b, n = self.mixture.phases, self.mixture.n_steps
        return (
            phase_moments.stored_entries(b, order) <= max_states
            and phase_moments.work(n, b, order) <= PHASE_MAX_WORK
        )

    def log_moment(self, sigma: float, order: int, max_states: int) -> float:
        return phase_moments.log_moment(
            self.mixture, self.coefficients, sigma, order, max_entries=max_states
        )

    def sample(
        self, sigma: float, order: int, n_samples: int, rng: np.random.Generator, max_states: int
    ) -> EscortDraw:
        return sample_phase_escort_counts(
            self.mixture, self.coefficients, sigma, order, n_samples, rng, max_entries=max_states
        )

    def log_no_participation(self) -> float:
        return self.mixture.log_no_participation()

    def add_bound(self, sigma: float) -> AddDirectionBound:
        return phase_add_bound(self.mixture, self.coefficients, sigma)

    def sampled_add_bound(
        self,
        sigma: float,
        delta: float,
        seed: int,
        at_epsilon: float | None = None,
        enough: float | None = None,
    ) -> BlockAddBound | None:
        """None: the phase mixture's patterns do not restart at block boundaries (§10.1)."""
        return None
