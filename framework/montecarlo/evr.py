"""Estimate-verify-release: certified epsilon, certified delta and a certified curve.

EVR (Wang et al. 2023; paper §2.5 and App. A; docs/math.md §7) separates **choosing** a claim from
**verifying** it. Choosing uses a *pilot* sample (stream 0); verifying uses a *fresh*
verification sample (stream 1) drawn independently of the pilot. The candidates are fixed before
a single verification sample is drawn, so Fact 4.2 applies to each of them; never search the
verification sample for a claim (that would void Fact 4.2).

What :func:`certify_epsilon` guarantees. Let ``m`` be the verification samples per direction,
``R`` the number of candidates declared (``len(ladder)``) and ``delta_b = base_delta(m, delta,
candidates=R)``. A candidate ``eps`` is *accepted* when in **both** directions the mean of
``X = (1 - e^{eps - L})_+`` over the verification samples is ``<= delta_b``; the smallest
accepted candidate is released. For any ``tau``, a candidate whose true ``delta(eps)`` exceeds
``tau delta_b`` is accepted with probability ``<= exp(-m KL(delta_b || tau delta_b))`` (Fact
4.2, for the failing direction); a union bound over the ``R`` candidates bounds the chance of
releasing such a candidate by ``beta = R exp(-m KL)``. Folding that data-independent failure
into delta as in EVR, the released mechanism is ``(eps, tau delta_b + beta (1 - tau delta_b))``-
DP, and ``delta_b`` was chosen so that this is ``<= delta`` at the best ``tau``
(:func:`~minsep.framework.montecarlo.bounds.overall_delta`). ``failure_probability`` reports
``beta``. If no candidate is accepted, nothing is certified (``certified = inf``).

:func:`certify_delta` is the same with a ladder of base deltas at a fixed epsilon; the released
value is ``overall_delta(m, t, candidates=R)`` for the smallest accepted threshold ``t``.

:func:`certified_curve` gives upper bounds on ``delta(eps)`` holding **simultaneously** on a grid
of epsilons fixed in advance: a KL upper confidence bound per grid point and direction at level
``beta / (2 G)`` (union bound over the ``G`` points and two directions), applied to the
conservative histogram mean (which is >= the exact mean, and the bound is monotone), then made
monotone using that ``delta(eps)`` is non-increasing in eps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo.accumulators import (
    BinSpec,
    LossHistogram,
    SweepTally,
    hockey_stick,
)
from minsep.framework.montecarlo.betting import (
    BettingPlan,
    choose_bets,
    choose_failure,
    plan_grid,
    walk,
)
from minsep.framework.montecarlo.bounds import (
    base_delta,
    check_feasible_delta,
    kl_upper_confidence,
    overall_delta,
    verification_failure,
)
from minsep.framework.montecarlo.estimates import estimate_delta, estimate_epsilon
from minsep.framework.montecarlo.proposals import Proposal, ProposalInfo
from minsep.framework.montecarlo.sampling import (
    MIN_SIGMA,
    PILOT_STREAM,
    VERIFY_STREAM,
    EngineConfig,
    engine_config,
    sample,
)
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_FACTORS",
    "DEFAULT_LADDER",
    "EPSILON_BOUNDS",
    "CertifiedCurve",
    "DeltaCertificate",
    "EpsilonCertificate",
    "certified_curve",
    "certify_delta",
    "certify_epsilon",
]

#: Fractions kappa of delta_b at which the pilot's eps_hat proposes candidates (the paper
#: estimates at delta/2; the larger fractions release a tighter epsilon when they verify).
DEFAULT_LADDER: tuple[float, ...] = (1.0, 0.8, 0.65, 0.5, 0.35, 0.25, 0.125, 1.0 / 32)
#: The wider histogram a pilot is redone on when losses beyond the default range hid
#: candidates: 4096 nats at h = 2**-6 (the same 2**18 bins, so the same memory).
WIDE_BINS = BinSpec(bin_bits=6, max_loss=4096.0)
#: The bounds :func:`certify_epsilon` can verify with (the first is the default).
EPSILON_BOUNDS: tuple[str, ...] = ("betting", "fact42")
#: The betting walk's grid is at full resolution up to where the pilot's delta falls to this
#: fraction of delta_u, and coarsens (steps doubling) up to TOP_FRACTION.
FINE_FRACTION = 1.0 / 4
TOP_FRACTION = 1.0 / 64
#: Multipliers of the pilot's delta upper estimate proposing base deltas for certify_delta.
DEFAULT_FACTORS: tuple[float, ...] = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0)


@attrs.frozen
class EpsilonCertificate:
    """The outcome of :func:`certify_epsilon` (see the module docstring for the guarantee).

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
    """The outcome of :func:`certify_delta`.

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


def _check_common(owner: str, sigma: float, samples: int, pilot_samples: int, seed: int) -> None:
    check_range(owner, "sigma", sigma, low=MIN_SIGMA)
    check_range(owner, "samples", samples, low=2, integer=True)
    check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)
    check_range(owner, "seed", seed, low=0, integer=True)


def certify_epsilon(
    model: PrivacyLossModel,
    sigma: float,
    delta: float,
    *,
    samples: int,
    pilot_samples: int,
    seed: int,
    config: EngineConfig | None = None,
    ladder: Sequence[float] = DEFAULT_LADDER,
    proposal: Proposal | None = None,
    bound: str = "betting",
) -> EpsilonCertificate:
    """Certify an epsilon at ``delta`` by EVR (module docstring states the guarantee).

    ``bound="betting"`` (default) walks a fine epsilon grid with the betting test of
    :mod:`~minsep.framework.montecarlo.betting` (docs/math.md §7.2; ``ladder`` unused).
    ``bound="fact42"`` is the candidate ladder verified by Fact 4.2:

    1. ``delta_b = base_delta(samples, delta, candidates=len(ladder))`` (raises naming
       ``m`` when ``samples`` is too small for ``delta``).
    2. Pilot (stream 0, ``pilot_samples``): candidates ``eps_r = eps_hat_pilot(kappa_r
       delta_b)`` for ``kappa_r`` in ``ladder``, made non-decreasing.
    3. Verification (stream 1, ``samples``): exact means of X at every candidate; release the
       smallest candidate with both directions' mean ``<= delta_b``.
    """
    if proposal is not None and not proposal.plain:
        return proposal.certify_epsilon(
            model,
            sigma,
            delta,
            samples=samples,
            pilot_samples=pilot_samples,
            seed=seed,
            config=config,
            ladder=ladder,
        )
    start = time.perf_counter()
    _check_common("certify_epsilon", sigma, samples, pilot_samples, seed)
    check_range("certify_epsilon", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if not ladder or not all(0.0 < k <= 1.0 for k in ladder):
        raise ConfigurationError(
            f"certify_epsilon.ladder = {tuple(ladder)!r} is invalid: must be fractions in (0, 1]"
        )
    if bound not in EPSILON_BOUNDS:
        raise ConfigurationError(
            f"certify_epsilon.bound = {bound!r} is invalid: must be one of {list(EPSILON_BOUNDS)}"
        )
    config = engine_config(config, "certify_epsilon")
    if bound == "betting":
        return _certify_betting(model, sigma, delta, samples, pilot_samples, seed, config, start)
    fractions = sorted((float(k) for k in ladder), reverse=True)
    count = len(fractions)
    delta_b = base_delta(samples, delta, candidates=count)
    pilot, candidates = _propose(model, sigma, fractions, delta_b, pilot_samples, seed, config)
    if len(candidates) < count and _overflow(pilot) > fractions[-1] * delta_b:
        # losses beyond the histogram hid candidates: propose again on a wider grid (still
        # the pilot stream and before any verification draw, so Fact 4.2 is untouched)
        wide = attrs.evolve(config, bins=WIDE_BINS)
        if wide.bins.max_loss > config.bins.max_loss:
            config = wide
            pilot, candidates = _propose(
                model, sigma, fractions, delta_b, pilot_samples, seed, config, "pilot wide"
            )
    verify = sample(
        model,
        [sigma],
        n_samples=samples,
        seed=seed,
        stream=VERIFY_STREAM,
        checks=candidates,
        config=config,
        description="verify",
    )
    deltas = tuple(verify.delta(0, j) for j in range(len(candidates)))
    accepted = [c for c, d in zip(candidates, deltas, strict=True) if d <= delta_b]
    estimate = estimate_epsilon([pilot, verify], delta)
    certified = max(accepted[0], estimate.value) if accepted else math.inf
    reason = ""
    if not candidates:
        reason = (
            f"the losses exceed the histogram's range: a fraction {_overflow(pilot):.3g} of the "
            f"{pilot_samples} pilot losses lies above {config.bins.max_loss:g} nats (or is "
            f"infinite), more than the base delta {delta_b:.6g}, so no finite epsilon could be "
            "proposed; more samples cannot help: epsilon at this sigma is larger than the range "
            "or infinite (raise sigma, or check the model)."
        )
    elif not accepted:
        reason = (
            f"none of {len(candidates)} candidate epsilons (up to {candidates[-1]:.6g}) passed "
            f"verification at base delta {delta_b:.6g} with {samples} samples (smallest "
            f"verification mean {min(deltas):.3g}); more verification or pilot samples may "
            "certify it, or use an exact accountant."
        )
    return EpsilonCertificate(
        sigma=float(sigma),
        delta=float(delta),
        estimate=estimate.value,
        std_error=estimate.std_error,
        certified=certified,
        verified=bool(accepted),
        base_delta=delta_b,
        failure_probability=verification_failure(samples, delta_b, candidates=count),
        candidates=candidates,
        candidate_deltas=deltas,
        samples=samples,
        pilot_samples=pilot_samples,
        seed=seed,
        seconds=time.perf_counter() - start,
        reason=reason,
        declared=count,
    )


def _certify_betting(
    model: PrivacyLossModel,
    sigma: float,
    delta: float,
    samples: int,
    pilot_samples: int,
    seed: int,
    config: EngineConfig,
    start: float,
) -> EpsilonCertificate:
    """:func:`certify_epsilon` with the betting bound (docs/math.md §7.2).

    The pilot (stream 0) alone fixes ``beta``, ``delta_u``, the grid and the bets; the
    verification sample (stream 1) is only read by
    :func:`~minsep.framework.montecarlo.betting.walk`.
    """
    check_feasible_delta("certify_epsilon", delta)
    base_delta(samples, delta)  # refuses (naming m) a sample too small for any certificate
    pilot = _pilot(model, sigma, pilot_samples, seed, config, "pilot")
    if _overflow(pilot) > TOP_FRACTION * delta:
        wide = attrs.evolve(config, bins=WIDE_BINS)
        if wide.bins.max_loss > config.bins.max_loss:  # same remedy as the ladder's
            config = wide
            pilot = _pilot(model, sigma, pilot_samples, seed, config, "pilot wide")
    hists = [pilot.histogram(0, d) for d in pilot.directions]
    at = max(h.epsilon(delta) for h in hists)  # the pilot's answer: E[X^2] there sets beta
    variance = max(_second_moment(h, at) for h in hists) if math.isfinite(at) else 1.0
    beta, delta_u = choose_failure(delta, samples, min(max(variance, 1.0 / pilot_samples), 1.0))
    fine = max(h.epsilon(FINE_FRACTION * delta_u) for h in hists)
    top = max(h.epsilon(TOP_FRACTION * delta_u) for h in hists)
    verify = None
    released: int | None = None
    plan = None
    if math.isfinite(top):
        verify = sample(
            model,
            [sigma],
            n_samples=samples,
            seed=seed,
            stream=VERIFY_STREAM,
            config=config,
            description="verify",
        )
        # the plan reads the pilot only, so it is independent of the verification draws
        grid = plan_grid(fine, top, config.bins.width)
        bets = tuple(choose_bets(h, grid, delta_u, beta, samples) for h in hists)
        plan = BettingPlan(delta_u=delta_u, failure=beta, grid=grid, bets=bets)
        released, _ = walk([verify.histogram(0, d) for d in verify.directions], plan)
    runs = [pilot] if verify is None else [pilot, verify]
    estimate = estimate_epsilon(runs, delta)
    point = math.inf if plan is None or released is None else float(plan.grid[released])
    observed = (
        ()
        if verify is None or not math.isfinite(point)
        else (max(verify.histogram(0, d).delta(point) for d in verify.directions),)
    )
    reason = ""
    if plan is None:
        reason = (
            f"the losses exceed the histogram's range: a fraction {_overflow(pilot):.3g} of the "
            f"{pilot_samples} pilot losses lies above {config.bins.max_loss:g} nats (or is "
            f"infinite), so no finite grid could be laid; more samples cannot help: epsilon at "
            "this sigma is larger than the range or infinite (raise sigma, or check the model)."
        )
    elif released is None:
        reason = (
            f"no grid point passed verification: even the top of the grid, epsilon "
            f"{plan.grid[-1]:.6g}, failed the betting test "
            f"at level delta_u {delta_u:.6g} with {samples} samples; more verification or pilot "
            "samples may certify it, or use an exact accountant."
        )
    return EpsilonCertificate(
        sigma=float(sigma),
        delta=float(delta),
        estimate=estimate.value,
        std_error=estimate.std_error,
        certified=max(point, estimate.value) if math.isfinite(point) else math.inf,
        verified=math.isfinite(point),
        base_delta=delta_u,
        failure_probability=beta,
        candidates=(point,) if math.isfinite(point) else (),
        candidate_deltas=observed,
        samples=samples,
        pilot_samples=pilot_samples,
        seed=seed,
        seconds=time.perf_counter() - start,
        reason=reason,
        bound="betting",
    )


def _pilot(
    model: PrivacyLossModel,
    sigma: float,
    pilot_samples: int,
    seed: int,
    config: EngineConfig,
    description: str,
) -> SweepTally:
    return sample(
        model,
        [sigma],
        n_samples=pilot_samples,
        seed=seed,
        stream=PILOT_STREAM,
        config=config,
        description=description,
    )


def _second_moment(hist: LossHistogram, epsilon: float) -> float:
    """Conservative empirical ``E[X^2]`` at ``epsilon`` (samples at their upper edges)."""
    occupied = np.flatnonzero(hist.counts)
    x = hockey_stick(np, occupied.astype(np.float64) * hist.spec.width, epsilon)
    total = hist.total
    return float(hist.counts[occupied] @ (x * x) + hist.overflow) / total if total else 1.0


def _propose(
    model: PrivacyLossModel,
    sigma: float,
    fractions: Sequence[float],
    delta_b: float,
    pilot_samples: int,
    seed: int,
    config: EngineConfig,
    description: str = "pilot",
) -> tuple[SweepTally, tuple[float, ...]]:
    """The pilot (stream 0) and its finite candidates ``eps_hat(kappa delta_b)``, made
    non-decreasing."""
    pilot = sample(
        model,
        [sigma],
        n_samples=pilot_samples,
        seed=seed,
        stream=PILOT_STREAM,
        config=config,
        description=description,
    )
    proposed = [estimate_epsilon(pilot, k * delta_b).value for k in fractions]
    proposed = [float(x) for x in np.maximum.accumulate(proposed)]
    return pilot, tuple(x for x in proposed if math.isfinite(x))


def _overflow(tally: SweepTally) -> float:
    """Largest fraction, over directions, of losses above the histogram's range."""
    fractions = []
    for direction in tally.directions:
        hist = tally.histogram(0, direction)
        fractions.append(hist.overflow / hist.total if hist.total else 0.0)
    return max(fractions)


def certify_delta(
    model: PrivacyLossModel,
    sigma: float,
    epsilon: float,
    *,
    samples: int,
    pilot_samples: int,
    seed: int,
    config: EngineConfig | None = None,
    factors: Sequence[float] = DEFAULT_FACTORS,
    proposal: Proposal | None = None,
) -> DeltaCertificate:
    """Certify a delta at ``epsilon`` by EVR.

    The pilot (stream 0) gives ``u = max(delta_hat + 2 se, 1/samples)``; the declared base
    deltas are ``t_r = min(u f_r, 1)`` for ``f_r`` in ``factors``. The verification (stream 1)
    mean (max over directions) is compared with them; the smallest accepted ``t`` releases
    ``overall_delta(samples, t, candidates=R)``.
    """
    if proposal is not None and not proposal.plain:
        return proposal.certify_delta(
            model,
            sigma,
            epsilon,
            samples=samples,
            pilot_samples=pilot_samples,
            seed=seed,
            config=config,
            factors=factors,
        )
    start = time.perf_counter()
    _check_common("certify_delta", sigma, samples, pilot_samples, seed)
    check_range("certify_delta", "epsilon", epsilon, low=0.0)
    if not factors or not all(f >= 1.0 and math.isfinite(f) for f in factors):
        raise ConfigurationError(
            f"certify_delta.factors = {tuple(factors)!r} is invalid: must be finite and >= 1"
        )
    config = engine_config(config, "certify_delta")
    eps = float(epsilon)
    pilot = sample(
        model,
        [sigma],
        n_samples=pilot_samples,
        seed=seed,
        stream=PILOT_STREAM,
        checks=(eps,),
        histograms=False,
        config=config,
        description="pilot",
    )
    pilot_est = estimate_delta(pilot, eps)
    se = pilot_est.std_error if math.isfinite(pilot_est.std_error) else 0.0
    anchor = max(pilot_est.value + 2.0 * se, 1.0 / samples)
    thresholds = tuple(sorted(min(anchor * f, 1.0) for f in factors))
    count = len(thresholds)
    verify = sample(
        model,
        [sigma],
        n_samples=samples,
        seed=seed,
        stream=VERIFY_STREAM,
        checks=(eps,),
        histograms=False,
        config=config,
        description="verify",
    )
    observed = verify.delta(0, 0)
    accepted = [t for t in thresholds if observed <= t]
    estimate = estimate_delta([pilot, verify], eps)
    if accepted:
        t = accepted[0]
        certified = max(overall_delta(samples, t, candidates=count), estimate.value)
        failure = verification_failure(samples, t, candidates=count) if t < 1.0 else 0.0
    else:
        t, certified, failure = math.nan, 1.0, 0.0
    return DeltaCertificate(
        sigma=float(sigma),
        epsilon=eps,
        estimate=estimate.value,
        std_error=estimate.std_error,
        certified=min(certified, 1.0),
        verified=bool(accepted),
        base_delta=t,
        failure_probability=failure,
        thresholds=thresholds,
        verification_delta=observed,
        samples=samples,
        pilot_samples=pilot_samples,
        seed=seed,
        seconds=time.perf_counter() - start,
    )


def certified_curve(
    model: PrivacyLossModel,
    sigma: float,
    epsilons: Sequence[float],
    *,
    samples: int,
    seed: int,
    failure_probability: float = 1e-6,
    config: EngineConfig | None = None,
    stream: int = VERIFY_STREAM,
) -> CertifiedCurve:
    """Simultaneous upper bounds on ``delta(eps)`` over a grid fixed before sampling.

    Per grid point and direction, the KL upper confidence bound of the conservative histogram
    mean at level ``failure_probability / (2 G)``; the max over directions, then the running
    minimum along the increasing grid (delta is non-increasing in eps).
    """
    start = time.perf_counter()
    check_range("certified_curve", "sigma", sigma, low=MIN_SIGMA)
    check_range("certified_curve", "samples", samples, low=1, integer=True)
    check_range(
        "certified_curve",
        "failure_probability",
        failure_probability,
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
    )
    grid = tuple(float(e) for e in epsilons)
    if (
        not grid
        or any(not (math.isfinite(e) and e >= 0) for e in grid)
        or list(grid) != sorted(set(grid))
    ):
        raise ConfigurationError(
            f"certified_curve.epsilons = {grid!r} is invalid: must be distinct finite values "
            ">= 0 in increasing order"
        )
    config = engine_config(config, "certified_curve")
    tally = sample(
        model,
        [sigma],
        n_samples=samples,
        seed=seed,
        stream=stream,
        config=config,
        description="curve",
    )
    level = math.log(2 * len(grid) / failure_probability)
    hats, uppers = [], []
    for eps in grid:
        per_direction = [tally.histogram(0, d).delta(eps) for d in tally.directions]
        hats.append(max(per_direction))
        uppers.append(max(kl_upper_confidence(min(h, 1.0), samples, level) for h in per_direction))
    monotone = tuple(float(u) for u in np.minimum.accumulate(uppers))
    return CertifiedCurve(
        sigma=float(sigma),
        epsilons=grid,
        delta_hat=tuple(hats),
        delta_upper=monotone,
        failure_probability=float(failure_probability),
        samples=samples,
        seed=seed,
        seconds=time.perf_counter() - start,
    )
