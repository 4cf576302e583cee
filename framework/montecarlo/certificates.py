"""What the Monte Carlo engine certifies: the records its questions return.

:class:`EpsilonCertificate` and :class:`DeltaCertificate` (estimate-verify-release,
docs/math.md §7), :class:`CertifiedCurve` (simultaneous KL bounds) and
:class:`SweepCalibration` (Algorithm 5), with :class:`ProposalInfo`, what an
importance-sampling proposal did (docs/rdp-escort.md §8). Plain data: the engine
(:mod:`.evr`, :mod:`.calibration`) fills them, :mod:`.trust` re-derives from their evidence.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = [
    "CertifiedCurve",
    "DeltaCertificate",
    "EpsilonCertificate",
    "ProposalInfo",
    "SweepCalibration",
]


@attrs.frozen
class ProposalInfo:
    """What a proposal did for one question (reported in the results).

    Attributes:
        method: ``"plain"`` or ``"escort"``.
        order: the Renyi order lam of the escort (None for plain).
        log_z: ``ln Z_lam`` used (inflated by 1e-10 relative; None for plain).
        support: the support bound ``s`` the weights were normalised by (None for plain).
        add: how the add direction was handled: ``"exact zero"`` (eps >= ln 1/pi(empty)),
            ``"deterministic"`` (the Chernoff bound of docs/math.md §10, no samples),
            ``"block bound"`` (the sampled block bound of docs/math.md §10.1, its failure
            folded in) or ``"plain"`` (plain Monte Carlo).
        add_delta: the add-direction bound at the released claim (routes ``"deterministic"``
            and ``"block bound"``; None otherwise).
    """

    method: str
    order: int | None = None
    log_z: float | None = None
    support: float | None = None
    add: str = "plain"
    add_delta: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the results' ``proposal`` field."""
        return attrs.asdict(self)


@attrs.frozen
class EpsilonCertificate:
    """The outcome of :func:`~.evr.certify_epsilon` (:mod:`.evr` states the guarantee).

    ``certified`` is the released epsilon (``inf`` when no candidate verified; then
    ``verified`` is False, nothing is claimed and ``reason`` says why: the losses exceed the
    histogram's range, so no finite candidate could be proposed (more samples cannot help), or
    every candidate failed verification (more samples may help)). The run is ``(certified,
    delta)``-DP with the verification failure ``failure_probability`` already folded into
    ``delta``. ``estimate`` is the point estimate ``eps_hat(delta)`` from pilot and
    verification samples together (no guarantee), with ``std_error``.
    """

    sigma: float
    delta: float
    estimate: float
    std_error: float
    certified: float
    verified: bool
    base_delta: float
    failure_probability: float
    candidates: tuple[float, ...]
    candidate_deltas: tuple[float, ...]
    samples: int
    pilot_samples: int
    seed: int
    seconds: float
    reason: str = ""
    proposal: ProposalInfo | None = None
    bound: str = "fact42"
    declared: int = 1

    def evidence(self) -> dict[str, Any] | None:
        """What the verification saw, for re-deriving ``certified`` from a stored result
        (:mod:`.trust`): the candidates with their verification means (max over directions)
        and the number ``R`` declared; for betting, the released point and its mean. None for
        an importance-sampling proposal (its own rule)."""
        if self.proposal is not None:
            return None
        if self.bound == "betting":
            released = self.candidates[0] if self.candidates else None
            mean = self.candidate_deltas[0] if self.candidate_deltas else None
            return {"rule": "betting", "released": released, "verification_mean": mean}
        return {
            "rule": "fact42",
            "declared": self.declared,
            "candidates": list(self.candidates),
            "verification_means": list(self.candidate_deltas),
        }

    def notes(self) -> tuple[str, ...]:
        """Human-readable statement of what is guaranteed (or why nothing is)."""
        if not self.verified:
            return (f"NOT CERTIFIED: {self.reason} certified_epsilon = inf.",)
        if self.bound == "betting":
            return (
                f"certified ({self.certified:.6g}, {self.delta:.6g})-DP by estimate-verify-"
                f"release with the betting bound (docs/math.md §7.2): on {self.samples} fresh "
                "samples per direction, every grid point from the top down to the released one "
                f"refuted delta(eps) >= {self.base_delta:.6g} in both directions (wealth >= "
                f"1/beta); one failure event of probability {self.failure_probability:.3g} "
                f"covers the whole grid and is folded into delta (bets and grid fixed by "
                f"{self.pilot_samples} pilot samples).",
            )
        return (
            f"certified ({self.certified:.6g}, {self.delta:.6g})-DP by estimate-verify-release: "
            f"the candidate passed verification (mean of X <= base delta {self.base_delta:.6g} "
            f"in both directions) on {self.samples} fresh samples per direction; the chance of "
            f"passing a wrong candidate ({self.failure_probability:.3g}, Fact 4.2 with a union "
            f"bound over {len(self.candidates)} candidates fixed by {self.pilot_samples} pilot "
            "samples) is folded into delta.",
        )


@attrs.frozen
class DeltaCertificate:
    """The outcome of :func:`~.evr.certify_delta`.

    ``certified`` is a delta at which the run is ``(epsilon, certified)``-DP, the verification
    failure ``failure_probability`` folded in (1.0 when nothing verified). ``estimate`` is the
    exact empirical ``delta_hat(epsilon)`` over pilot and verification samples.
    """

    sigma: float
    epsilon: float
    estimate: float
    std_error: float
    certified: float
    verified: bool
    base_delta: float
    failure_probability: float
    thresholds: tuple[float, ...]
    verification_delta: float
    samples: int
    pilot_samples: int
    seed: int
    seconds: float
    proposal: ProposalInfo | None = None

    def evidence(self) -> dict[str, Any] | None:
        """The declared thresholds and the verification mean, for re-deriving ``certified``
        from a stored result (:mod:`.trust`); None for an importance-sampling proposal."""
        if self.proposal is not None:
            return None
        return {
            "rule": "fact42",
            "thresholds": list(self.thresholds),
            "verification_mean": self.verification_delta,
        }

    def notes(self) -> tuple[str, ...]:
        """Human-readable statement of what is guaranteed."""
        if not self.verified:
            return (
                f"NOT CERTIFIED: the verification mean {self.verification_delta:.6g} exceeded "
                "every declared base delta; certified_delta = 1 (trivial).",
            )
        return (
            f"certified ({self.epsilon:.6g}, {self.certified:.6g})-DP by estimate-verify-"
            f"release: verification mean <= base delta {self.base_delta:.6g} in both directions "
            f"on {self.samples} fresh samples; failure probability "
            f"{self.failure_probability:.3g} (Fact 4.2, union bound over "
            f"{len(self.thresholds)} declared thresholds) is folded into delta.",
        )


@attrs.frozen
class CertifiedCurve:
    """Upper bounds on ``delta(eps)`` that hold simultaneously on ``epsilons``.

    With probability at least ``1 - failure_probability`` over the engine's randomness,
    ``delta(eps) <= delta_upper[g]`` for every ``g`` and, since delta is non-increasing, for
    every ``eps >= epsilons[g]``. Not folded: a user folding the failure into delta adds
    ``failure_probability``.
    """

    sigma: float
    epsilons: tuple[float, ...]
    delta_hat: tuple[float, ...]
    delta_upper: tuple[float, ...]
    failure_probability: float
    samples: int
    seed: int
    seconds: float

    def delta_at(self, epsilon: float) -> float:
        """Certified upper bound on ``delta(epsilon)`` (1.0 below the grid)."""
        best = 1.0
        for eps, upper in zip(self.epsilons, self.delta_upper, strict=True):
            if eps <= epsilon:
                best = min(best, upper)
        return best

    def epsilon_at(self, delta: float) -> float:
        """Smallest grid epsilon whose certified delta is ``<= delta`` (``inf`` if none)."""
        for eps, upper in zip(self.epsilons, self.delta_upper, strict=True):
            if upper <= delta:
                return eps
        return math.inf


@attrs.frozen
class SweepCalibration:
    """Result of Algorithm 5.

    ``sigma = sweep[index]`` is certified ``(epsilon, delta)``-DP with the verification failure
    ``failure_probability`` folded into ``delta`` (:mod:`.calibration`). ``deltas[i]`` is the
    empirical max-over-directions ``delta_hat(epsilon)`` of ``sweep[i]`` on the shared draws;
    ``at_bottom`` says every entry passed (a smaller sigma might also pass); ``start``: the
    entry the first walk began at (0: the top; else two walks, :func:`.calibrate_sweep`).
    """

    sigma: float
    index: int
    sweep: tuple[float, ...]
    deltas: tuple[float, ...]
    epsilon: float
    delta: float
    base_delta: float
    failure_probability: float
    samples: int
    seed: int
    seconds: float
    proposal: ProposalInfo | None = None
    start: int = 0

    @property
    def at_bottom(self) -> bool:
        """True when the last (least private) entry passed."""
        return self.index == len(self.sweep) - 1
