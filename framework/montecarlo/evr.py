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

Any proposal (:mod:`.proposals`). The verifier above reads ``X = w (1 - e^{eps - L})_+ / s`` in
[0, 1] per direction route, ``s`` the route's support bound fixed by the pilot (plain: ``w =
1``, ``s = 1``, both directions in one route). Fact 4.2 applies to ``X`` unchanged, so accepting
at base ``x_b`` certifies ``delta_route <= s overall_delta(m, x_b)`` (and ``delta_route <= s``
in any case); a claim is accepted when every route accepts it, and the released delta is the
largest route's.

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

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.methods import EpsilonBound
from minsep.framework.montecarlo.accumulators import LossHistogram, hockey_stick
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
from minsep.framework.montecarlo.certificates import (
    CertifiedCurve,
    DeltaCertificate,
    EpsilonCertificate,
)
from minsep.framework.montecarlo.estimates import Estimate, estimate_delta, estimate_epsilon
from minsep.framework.montecarlo.plain import PLAIN, WIDE_BINS, overflow, pilot_tally
from minsep.framework.montecarlo.proposals import (
    DeltaCheck,
    EpsilonPlan,
    EpsilonQuestion,
    Proposal,
)
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
    "WIDE_BINS",
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
#: The bounds :func:`certify_epsilon` can verify with (the first is the default).
EPSILON_BOUNDS: tuple[str, ...] = tuple(bound.value for bound in EpsilonBound)
#: The betting walk's grid is at full resolution up to where the pilot's delta falls to this
#: fraction of delta_u, and coarsens (steps doubling) up to TOP_FRACTION.
FINE_FRACTION = 1.0 / 4
TOP_FRACTION = 1.0 / 64
#: Multipliers of the pilot's delta upper estimate proposing base deltas for certify_delta.
DEFAULT_FACTORS: tuple[float, ...] = (1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0)


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
    """Certify an epsilon at ``delta`` by EVR on a proposal's draws (plain when None); the
    module docstring states the guarantee.

    ``bound="betting"`` (default, where the proposal supports it: plain sampling) walks a fine
    epsilon grid with the betting test of :mod:`~minsep.framework.montecarlo.betting`
    (docs/math.md §7.2; ``ladder`` unused). Otherwise the candidate ladder verified by Fact
    4.2:

    1. The proposal's pilot (stream 0, ``pilot_samples``) plans the candidates (for plain:
       ``eps_r = eps_hat_pilot(kappa_r delta_b)`` for ``kappa_r`` in ``ladder`` with
       ``delta_b = base_delta(samples, delta, candidates=len(ladder))``, made non-decreasing)
       and its direction routes (:class:`~.proposals.EpsilonPlan`).
    2. Verification (stream 1, ``samples``): exact means of ``X`` at every candidate, per
       route; release the smallest candidate every route accepts (:func:`_release_epsilon`).
    """
    start = time.perf_counter()
    chosen: Proposal = PLAIN if proposal is None else proposal
    chosen.check_epsilon(sigma, delta, samples, pilot_samples, seed)
    if not ladder or not all(0.0 < k <= 1.0 for k in ladder):
        raise ConfigurationError(
            f"certify_epsilon.ladder = {tuple(ladder)!r} is invalid: must be fractions in (0, 1]"
        )
    if bound not in EPSILON_BOUNDS:
        raise ConfigurationError(
            f"certify_epsilon.bound = {bound!r} is invalid: must be one of {list(EPSILON_BOUNDS)}"
        )
    config = engine_config(config, "certify_epsilon")
    if bound == "betting" and chosen.betting:
        return _certify_betting(model, sigma, delta, samples, pilot_samples, seed, config, start)
    fractions = tuple(sorted((float(k) for k in ladder), reverse=True))
    question = EpsilonQuestion(sigma, delta, fractions, samples, pilot_samples, seed, config)
    plan = chosen.plan_epsilon(model, question)
    return _release_epsilon(plan, sigma, delta, pilot_samples, seed, start)


def _release_epsilon(
    plan: EpsilonPlan, sigma: float, delta: float, pilot_samples: int, seed: int, start: float
) -> EpsilonCertificate:
    """Verify ``plan`` (stream 1, every route) and release the smallest candidate every route
    accepts, at least the point estimate; ``delta_r`` of a candidate is the largest of its
    routes' verification means times their support bounds."""
    candidates, samples = plan.candidates, plan.samples
    drawn = [c.means(candidates, samples, seed, VERIFY_STREAM) for c in plan.checks]
    deltas = [
        max(means[j] * check.support for check, (_, means) in zip(plan.checks, drawn, strict=True))
        for j in range(len(candidates))
    ]
    accepted = [
        c
        for j, c in enumerate(candidates)
        if all(means[j] <= check.base for check, (_, means) in zip(plan.checks, drawn, strict=True))
    ]
    estimate = plan.estimate
    if estimate is None:  # pool the pilot with the first route's verification draws
        runs = [t for t in (plan.pool, drawn[0][0]) if t is not None]
        estimate = estimate_epsilon(runs, delta)
    reason = ""
    if not accepted:
        smallest = min(deltas) if deltas else math.nan
        no_candidate = not candidates and plan.empty_reason
        reason = plan.empty_reason if no_candidate else plan.failed_reason.format(smallest=smallest)
    info = plan.info
    if info is not None and plan.add_delta is not None and accepted:
        info = attrs.evolve(info, add_delta=plan.add_delta(accepted[0]))
    first = plan.checks[0]
    return EpsilonCertificate(
        sigma=float(sigma),
        delta=float(delta),
        estimate=estimate.value,
        std_error=estimate.std_error,
        certified=max(accepted[0], estimate.value) if accepted else math.inf,
        verified=bool(accepted),
        base_delta=min(first.base * first.support, 1.0),
        failure_probability=max(c.failure(samples, plan.declared) for c in plan.checks),
        candidates=tuple(candidates),
        candidate_deltas=tuple(float(d) for d in deltas),
        samples=samples,
        pilot_samples=pilot_samples,
        seed=seed,
        seconds=time.perf_counter() - start,
        reason=reason,
        proposal=info,
        declared=plan.declared,
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
    pilot = pilot_tally(model, sigma, pilot_samples, seed, config)
    if overflow(pilot) > TOP_FRACTION * delta:
        wide = attrs.evolve(config, bins=WIDE_BINS)
        if wide.bins.max_loss > config.bins.max_loss:  # same remedy as the ladder's
            config = wide
            pilot = pilot_tally(model, sigma, pilot_samples, seed, config, "pilot wide")
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
            f"the losses exceed the histogram's range: a fraction {overflow(pilot):.3g} of the "
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


def _second_moment(hist: LossHistogram, epsilon: float) -> float:
    """Conservative empirical ``E[X^2]`` at ``epsilon`` (samples at their upper edges)."""
    occupied = np.flatnonzero(hist.counts)
    x = hockey_stick(np, occupied.astype(np.float64) * hist.spec.width, epsilon)
    total = hist.total
    return float(hist.counts[occupied] @ (x * x) + hist.overflow) / total if total else 1.0


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
    """Certify a delta at ``epsilon`` by EVR, on any proposal's draws (plain when None).

    Per direction route (:class:`~.proposals.DeltaCheck`), in units of its support bound
    ``s``: the pilot (stream 0) gives ``u = max(x_hat + 2 se, 1/samples)``; the declared base
    deltas are ``t_r = min(u f_r, 1)`` for ``f_r`` in ``factors``; the verification (stream
    1) mean is compared with them and the smallest accepted ``t < 1`` releases ``s
    overall_delta(samples, t, candidates=R)`` (``s`` itself, a valid bound, when none does).
    The certified delta is the largest route's release.
    """
    start = time.perf_counter()
    chosen: Proposal = PLAIN if proposal is None else proposal
    chosen.check_delta(sigma, epsilon, samples, pilot_samples, seed)
    if not factors or not all(f >= 1.0 and math.isfinite(f) for f in factors):
        raise ConfigurationError(
            f"certify_delta.factors = {tuple(factors)!r} is invalid: must be finite and >= 1"
        )
    config = engine_config(config, "certify_delta")
    eps = float(epsilon)
    plan = chosen.plan_delta(model, sigma, eps, config=config, seed=seed)
    routes: list[str] = []
    released: list[float] = []
    releases: list[_Release] = []
    for check in plan.checks:
        if released and check.ceiling <= max(released):
            routes.append(check.skip_route)
            released.append(check.ceiling)
            continue
        release = _release_delta(check, eps, samples, pilot_samples, seed, factors)
        routes.append("plain")
        released.append(min(release.released, check.ceiling))
        releases.append(release)
    first = releases[0]
    return DeltaCertificate(
        sigma=float(sigma),
        epsilon=eps,
        estimate=first.estimate.value * first.support,
        std_error=first.estimate.std_error * first.support,
        certified=min(max(released), 1.0),
        verified=first.accepted or first.support < 1.0,
        base_delta=first.threshold * first.support,
        failure_probability=max(r.failure for r in releases),
        thresholds=first.thresholds,
        verification_delta=max(r.observed * r.support for r in releases),
        samples=samples,
        pilot_samples=pilot_samples,
        seed=seed,
        seconds=time.perf_counter() - start,
        proposal=None if plan.info is None else plan.info(routes, released),
    )


@attrs.frozen
class _Release:
    """One route's delta release (units of its support bound ``support`` except
    ``released``, which is absolute)."""

    released: float
    failure: float
    threshold: float
    thresholds: tuple[float, ...]
    accepted: bool
    observed: float
    estimate: Estimate
    support: float


def _release_delta(
    check: DeltaCheck,
    eps: float,
    samples: int,
    pilot_samples: int,
    seed: int,
    factors: Sequence[float],
) -> _Release:
    """Pilot, thresholds, verification and release of one route (:func:`certify_delta`)."""
    sampler = check.sampler
    pilot = sampler.tally(
        (eps,),
        n_samples=pilot_samples,
        seed=seed,
        stream=PILOT_STREAM,
        description=check.pilot_description,
    )
    pilot_est = estimate_delta(pilot, eps)
    se = pilot_est.std_error if math.isfinite(pilot_est.std_error) else 0.0
    anchor = max(pilot_est.value + 2.0 * se, 1.0 / samples)
    thresholds = tuple(sorted(min(anchor * f, 1.0) for f in factors))
    count = len(thresholds)
    verify = sampler.tally(
        (eps,), n_samples=samples, seed=seed, stream=VERIFY_STREAM,
        description=check.verify_description,
    )  # fmt: skip
    observed = verify.delta(0, 0)
    accepted = [t for t in thresholds if observed <= t]
    estimate = estimate_delta([pilot, verify], eps)
    scale = sampler.support
    released, failure, t = scale, 0.0, accepted[0] if accepted else math.nan
    if accepted and t < 1.0:
        bound = max(overall_delta(samples, t, candidates=count), estimate.value)
        released = min(bound, 1.0) * scale
        failure = verification_failure(samples, t, candidates=count)
    return _Release(released, failure, t, thresholds, bool(accepted), observed, estimate, scale)


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
