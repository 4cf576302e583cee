"""Where the Monte Carlo engine draws from: a proposal, as data (docs/rdp-escort.md §8).

A proposal *plans* a question from pilot draws (stream 0) alone: the claims to check (candidate
epsilons, a delta's thresholds, a sigma sweep) and, per direction route, a :class:`Sampler`.
A sampler yields, for a model and sigma, the verified variable at checked epsilons,

    ``X = w (1 - e^{eps - L})_+ / s``  in [0, 1],

with ``L`` the privacy loss of a draw, ``w`` its importance weight and ``s`` the support bound
fixed before the draws (``w (1 - e^{eps - L})_+ <= s`` pointwise, so ``E[X] = delta / s``).
Plain sampling of the dominating pair is the proposal with ``w = 1`` and ``s = 1``
(:mod:`.plain`); the escort of docs/rdp-escort.md §8 draws from ``R_lam`` with ``s = s_lam``
(:mod:`minsep.accountants.escort_engine`). One verifier reads every plan: :mod:`.evr` (certify
epsilon, certify delta) and :mod:`.calibration` (Algorithm 5), with Fact 4.2 applied to ``X``
in units of ``s`` (docs/math.md §7), whatever drew it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from minsep.framework.errors import ConfigurationError, MinsepError
from minsep.framework.methods import ProposalKind
from minsep.framework.montecarlo.accumulators import SweepTally
from minsep.framework.montecarlo.bounds import verification_failure
from minsep.framework.montecarlo.certificates import ProposalInfo
from minsep.framework.montecarlo.estimates import Estimate

if TYPE_CHECKING:  # pragma: no cover
    from minsep.framework.interfaces import PrivacyLossModel
    from minsep.framework.montecarlo.sampling import EngineConfig

__all__ = [
    "PROPOSAL_KINDS",
    "DeltaCheck",
    "DeltaPlan",
    "EpsilonPlan",
    "EpsilonQuestion",
    "Proposal",
    "ProposalInfo",
    "Sampler",
    "SettlingSweepPlan",
    "SigmaPilot",
    "SupportBoundError",
    "SweepPlan",
    "SweepQuestion",
    "Verification",
]

#: The names the accountant and the CLI accept.
PROPOSAL_KINDS = tuple(kind.value for kind in ProposalKind)


class SupportBoundError(MinsepError):
    """An importance weight exceeded its declared support bound: the run refuses to certify."""


@runtime_checkable
class Sampler(Protocol):
    """Draws of ``X = w (1 - e^{eps - L})_+ / s`` in [0, 1] for one model and sigma.

    ``support`` is ``s``; :meth:`tally` returns the sums of ``X`` and ``X^2`` at every epsilon
    of ``checks`` (one checkpoint stage ``description``; chunk ``i`` of ``stream`` is seeded by
    ``(seed, stream, i)`` as in the plain engine).
    """

    @property
    def support(self) -> float: ...

    def tally(
        self, checks: Sequence[float], *, n_samples: int, seed: int, stream: int, description: str
    ) -> SweepTally: ...


@attrs.frozen
class Verification:
    """One direction route of an epsilon question: ``X`` drawn by ``sampler`` on the
    verification stream, a candidate accepted when its mean is at most ``base`` (units of
    ``support``). ``sampler`` None: the support bound alone certifies (``X <= 1`` pointwise, so
    the mean is at most ``base = 1``; no draws); ``draw_empty`` False: no draws without
    candidates either."""

    support: float
    base: float
    sampler: Sampler | None = None
    description: str = "verify"
    draw_empty: bool = True

    def means(
        self, candidates: Sequence[float], samples: int, seed: int, stream: int
    ) -> tuple[SweepTally | None, list[float]]:
        """The verification tally (None without draws) and the mean of ``X`` per candidate."""
        if self.sampler is None or not (candidates or self.draw_empty):
            return None, [1.0] * len(candidates)
        tally = self.sampler.tally(
            candidates, n_samples=samples, seed=seed, stream=stream, description=self.description
        )
        return tally, [tally.delta(0, j) for j in range(len(candidates))]

    def failure(self, samples: int, declared: int) -> float:
        """Fact 4.2's failure probability of this route (0 when it accepts at 1: no draws)."""
        if self.base >= 1.0:
            return 0.0
        return verification_failure(samples, self.base, candidates=declared)


@attrs.frozen
class EpsilonQuestion:
    """An epsilon question as the verifier hands it to a proposal's pilot: certify an epsilon
    at ``delta`` for ``sigma``, candidates at the fractions ``kappa_r`` (decreasing) of the
    base delta, ``samples`` verification and ``pilot_samples`` pilot draws per route."""

    sigma: float
    delta: float
    fractions: tuple[float, ...]
    samples: int
    pilot_samples: int
    seed: int
    config: EngineConfig


@attrs.frozen
class SweepQuestion:
    """Algorithm 5's question as the walk hands it to a proposal: the ``sweep`` (decreasing,
    checked), ``epsilon`` and ``delta``, ``samples`` draws per direction and entry, on
    ``stream``; ``walks``: how many walks may release an entry (2 when the walk starts inside
    the sweep, docs/math.md §7), the claims the base delta is shared by."""

    sweep: tuple[float, ...]
    epsilon: float
    delta: float
    samples: int
    seed: int
    config: EngineConfig | None
    stream: int
    walks: int = 1


@attrs.frozen
class SigmaPilot:
    """Where a pilot (stream 0) looks for a sweep's centre: the smallest sigma in ``[low,
    high]`` with ``delta_hat(epsilon) <= target``, on ``samples`` draws; ``steps`` refines the
    search (None: the proposal's default)."""

    epsilon: float
    target: float
    samples: int
    seed: int
    config: EngineConfig | None = None
    low: float = 2.0**-4
    high: float = 2.0**8
    steps: int | None = None


@attrs.frozen
class EpsilonPlan:
    """An epsilon question planned on the pilot, before any verification draw.

    Attributes:
        candidates: the epsilons to verify (non-decreasing); the smallest accepted is released.
        samples: verification samples per route.
        checks: the direction routes; a candidate is accepted when every route accepts it.
        declared: ``R``, the candidates declared to the union bound.
        estimate: the point estimate fixed by the pilot, or None to pool ``pool`` with the
            first route's verification draws.
        info: what an importance-sampling proposal did (None: plain).
        add_delta: the deterministic add-direction delta at the released epsilon, when that
            route certified the add direction (recorded in ``info``).
        empty_reason, failed_reason: why nothing is certified when no candidate was proposed,
            and when none passed (``{smallest}``: the smallest verification delta).
    """

    candidates: tuple[float, ...]
    samples: int
    checks: tuple[Verification, ...]
    declared: int
    estimate: Estimate | None = None
    pool: SweepTally | None = None
    info: ProposalInfo | None = None
    add_delta: Callable[[float], float] | None = None
    empty_reason: str = ""
    failed_reason: str = ""

    def __attrs_post_init__(self) -> None:
        if self.estimate is None and self.pool is None:
            raise ConfigurationError(
                "EpsilonPlan.estimate = None is invalid without a pilot to pool: give one"
            )


@attrs.frozen
class DeltaCheck:
    """One direction route of a delta question: ``sampler`` draws a pilot and a verification.

    ``ceiling`` is a bound on this route's delta that holds without draws (``inf``: none). When
    it is at most what the routes before it released, it is released without drawing (route
    ``skip_route``); otherwise the sampled release is capped by it.
    """

    sampler: Sampler
    pilot_description: str = "pilot"
    verify_description: str = "verify"
    ceiling: float = math.inf
    skip_route: str = "deterministic"


@attrs.frozen
class DeltaPlan:
    """A delta question's routes (the first carries the point estimate), and ``info(routes,
    released)``: what the proposal did given each route's name (``"plain"`` when it drew) and
    release (None: plain)."""

    checks: tuple[DeltaCheck, ...]
    info: Callable[[Sequence[str], Sequence[float]], ProposalInfo] | None = None


class SweepPlan(Protocol):
    """Algorithm 5 on one proposal's draws: per sweep entry, the observed delta and whether it
    passed (:meth:`check`, drawing as needed), what is known of an entry after the walk stopped
    (:meth:`unchecked`), the base delta and failure probability of the certificate, and the
    refusal when the first entry fails."""

    @property
    def base_delta(self) -> float: ...

    @property
    def failure_probability(self) -> float: ...

    @property
    def info(self) -> ProposalInfo | None: ...

    def check(self, index: int) -> tuple[float, bool]: ...

    def unchecked(self, index: int) -> float: ...

    def refusal(self, deltas: Sequence[float]) -> str: ...


@runtime_checkable
class SettlingSweepPlan(Protocol):
    """A :class:`SweepPlan` that confirms the entry a walk releases (:meth:`settle`): some of
    its checks are deferred to that entry (docs/math.md §7, "deferred add checks")."""

    def settle(self, passed: Sequence[int], observed: dict[int, float]) -> int:
        """The entry released among ``passed`` (the walk's entries whose checks passed, in
        walk order; -1: none), recording in ``observed`` what the deferred checks saw."""
        ...


@runtime_checkable
class Proposal(Protocol):
    """The law the engine samples from, planning each question from its pilot.

    ``betting``: whether the betting bound (docs/math.md §7.2) can verify its epsilon questions.
    """

    @property
    def betting(self) -> bool: ...

    def check_epsilon(
        self, sigma: float, delta: float, samples: int, pilot_samples: int, seed: int
    ) -> None: ...

    def plan_epsilon(self, model: PrivacyLossModel, question: EpsilonQuestion) -> EpsilonPlan: ...

    def check_delta(
        self, sigma: float, epsilon: float, samples: int, pilot_samples: int, seed: int
    ) -> None: ...

    def plan_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        config: EngineConfig,
        seed: int = 0,
    ) -> DeltaPlan: ...

    def plan_sweep(self, model: PrivacyLossModel, question: SweepQuestion) -> SweepPlan: ...

    def pilot_target(self, samples: int, delta: float) -> float: ...

    def locate(self, model: PrivacyLossModel, pilot: SigmaPilot) -> float: ...
