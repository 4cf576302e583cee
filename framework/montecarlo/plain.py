"""Plain sampling of the dominating pair: the proposal with weight 1 and support bound 1.

Every draw of a direction is a privacy loss ``L`` of the dominating pair itself, so ``X = (1 -
e^{eps - L})_+`` lies in [0, 1] with mean ``delta(eps)`` (docs/math.md §7). Its pilots (stream
0) plan the questions for the one verifier of :mod:`.evr` and :mod:`.calibration`: candidate
epsilons from the pilot's conservative histogram, a delta's thresholds, and a sweep tallied
on one set of draws for every sigma (common random numbers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from minsep.framework.errors import CalibrationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.accumulators import BinSpec, SweepTally
from minsep.framework.montecarlo.bounds import base_delta, verification_failure
from minsep.framework.montecarlo.certificates import ProposalInfo
from minsep.framework.montecarlo.estimates import estimate_epsilon
from minsep.framework.montecarlo.proposals import (
    DeltaCheck,
    DeltaPlan,
    EpsilonPlan,
    EpsilonQuestion,
    SigmaPilot,
    SweepQuestion,
    Verification,
)
from minsep.framework.montecarlo.sampling import (
    BOTH,
    MIN_SIGMA,
    PILOT_STREAM,
    EngineConfig,
    sample,
)
from minsep.framework.montecarlo.sweeps import FALLBACK, geometric_sweep
from minsep.framework.validation import check_range

__all__ = [
    "PLAIN",
    "WIDE_BINS",
    "PlainProposal",
    "PlainSampler",
    "check_common",
    "overflow",
    "pilot_tally",
    "sweep_tally",
]

#: The wider histogram a pilot is redone on when losses beyond the default range hid
#: candidates: 4096 nats at h = 2**-6 (the same 2**18 bins, so the same memory).
WIDE_BINS = BinSpec(bin_bits=6, max_loss=4096.0)
#: Steps per power of two of the pilot's fine walk (:meth:`PlainProposal.locate`).
FINE_STEPS = 8


def check_common(owner: str, sigma: float, samples: int, pilot_samples: int, seed: int) -> None:
    """The refusals every plain EVR question shares (sigma, sample counts, seed)."""
    check_range(owner, "sigma", sigma, low=MIN_SIGMA)
    check_range(owner, "samples", samples, low=2, integer=True)
    check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)
    check_range(owner, "seed", seed, low=0, integer=True)


def overflow(tally: SweepTally) -> float:
    """Largest fraction, over directions, of losses above the histogram's range."""
    fractions = []
    for direction in tally.directions:
        hist = tally.histogram(0, direction)
        fractions.append(hist.overflow / hist.total if hist.total else 0.0)
    return max(fractions)


@attrs.frozen
class PlainSampler:
    """Plain draws of ``directions`` at ``sigma`` (:func:`~.sampling.sample`): ``w = 1``,
    ``s = 1``; ``histograms`` keeps the conservative histogram for epsilon estimates."""

    model: PrivacyLossModel
    sigma: float
    config: EngineConfig | None
    directions: tuple[Direction, ...] = BOTH
    histograms: bool = True
    support: float = attrs.field(default=1.0, init=False)

    def tally(
        self, checks: Sequence[float], *, n_samples: int, seed: int, stream: int, description: str
    ) -> SweepTally:
        """The plain engine's tally of ``X = (1 - e^{eps - L})_+`` at ``checks``."""
        return sample(
            self.model,
            [self.sigma],
            n_samples=n_samples,
            seed=seed,
            stream=stream,
            checks=checks,
            directions=self.directions,
            histograms=self.histograms,
            config=self.config,
            description=description,
        )


def pilot_tally(
    model: PrivacyLossModel,
    sigma: float,
    pilot_samples: int,
    seed: int,
    config: EngineConfig,
    description: str = "pilot",
) -> SweepTally:
    """The plain pilot (stream 0) at ``sigma``: both directions, with histograms."""
    return sample(
        model,
        [sigma],
        n_samples=pilot_samples,
        seed=seed,
        stream=PILOT_STREAM,
        config=config,
        description=description,
    )


def sweep_tally(
    model: PrivacyLossModel,
    sigmas: Sequence[float],
    epsilon: float,
    *,
    samples: int,
    seed: int,
    stream: int,
    config: EngineConfig | None,
    description: str,
    directions: tuple[Direction, ...] = BOTH,
) -> SweepTally:
    """Plain draws shared by every sigma of a sweep (common random numbers), exact sums of
    ``X`` at ``epsilon``, no histogram."""
    return sample(
        model,
        sigmas,
        n_samples=samples,
        seed=seed,
        stream=stream,
        checks=(float(epsilon),),
        directions=directions,
        histograms=False,
        config=config,
        description=description,
    )


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
    pilot = pilot_tally(model, sigma, pilot_samples, seed, config, description)
    proposed = [estimate_epsilon(pilot, k * delta_b).value for k in fractions]
    proposed = [float(x) for x in np.maximum.accumulate(proposed)]
    return pilot, tuple(x for x in proposed if math.isfinite(x))


@attrs.frozen
class _PlainSweep:
    """Algorithm 5 on one plain tally shared by every sigma of the sweep."""

    values: tuple[float, ...]
    epsilon: float
    deltas: tuple[float, ...]
    base_delta: float
    failure_probability: float
    info: ProposalInfo | None = None

    def check(self, index: int) -> tuple[float, bool]:
        observed = self.deltas[index]
        return observed, not observed > self.base_delta

    def unchecked(self, index: int) -> float:
        return self.deltas[index]

    def refusal(self, deltas: Sequence[float]) -> str:
        return (
            f"Algorithm 5: the most private sigma {self.values[0]:.6g} of the sweep fails "
            f"verification (delta_hat {deltas[0]:.3g} > base delta {self.base_delta:.3g} at "
            f"epsilon {self.epsilon:g}); no sigma is certified. Start the sweep higher, use "
            f"more samples, or {FALLBACK}"
        )


@attrs.frozen
class PlainProposal:
    """Plain sampling of the dominating pair (both directions, ``w = 1``, ``s = 1``)."""

    betting = True

    def check_epsilon(
        self, sigma: float, delta: float, samples: int, pilot_samples: int, seed: int
    ) -> None:
        check_common("certify_epsilon", sigma, samples, pilot_samples, seed)
        check_range(
            "certify_epsilon", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True
        )

    def plan_epsilon(self, model: PrivacyLossModel, question: EpsilonQuestion) -> EpsilonPlan:
        """Candidates ``eps_hat(kappa delta_b)`` from the pilot's histogram (redone on
        :data:`WIDE_BINS` when losses beyond the range hid some: still the pilot stream and
        before any verification draw, so Fact 4.2 is untouched)."""
        sigma, delta, fractions = question.sigma, question.delta, question.fractions
        samples, pilot_samples, seed = question.samples, question.pilot_samples, question.seed
        config = question.config
        count = len(fractions)
        delta_b = base_delta(samples, delta, candidates=count)
        pilot, candidates = _propose(model, sigma, fractions, delta_b, pilot_samples, seed, config)
        if len(candidates) < count and overflow(pilot) > fractions[-1] * delta_b:
            wide = attrs.evolve(config, bins=WIDE_BINS)
            if wide.bins.max_loss > config.bins.max_loss:
                config = wide
                pilot, candidates = _propose(
                    model, sigma, fractions, delta_b, pilot_samples, seed, config, "pilot wide"
                )
        empty = (
            f"the losses exceed the histogram's range: a fraction {overflow(pilot):.3g} of the "
            f"{pilot_samples} pilot losses lies above {config.bins.max_loss:g} nats (or is "
            f"infinite), more than the base delta {delta_b:.6g}, so no finite epsilon could be "
            "proposed; more samples cannot help: epsilon at this sigma is larger than the range "
            "or infinite (raise sigma, or check the model)."
        )
        failed = ""
        if candidates:
            failed = (
                f"none of {len(candidates)} candidate epsilons (up to {candidates[-1]:.6g}) "
                f"passed verification at base delta {delta_b:.6g} with {samples} samples "
                "(smallest verification mean {smallest:.3g}); more verification or pilot "
                "samples may certify it, or use an exact accountant."
            )
        verify = Verification(1.0, delta_b, PlainSampler(model, sigma, config))
        return EpsilonPlan(
            candidates, samples, (verify,), count, pool=pilot, empty_reason=empty,
            failed_reason=failed,
        )  # fmt: skip

    def check_delta(
        self, sigma: float, epsilon: float, samples: int, pilot_samples: int, seed: int
    ) -> None:
        check_common("certify_delta", sigma, samples, pilot_samples, seed)
        check_range("certify_delta", "epsilon", epsilon, low=0.0)

    def plan_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        config: EngineConfig,
        seed: int = 0,
    ) -> DeltaPlan:
        """Both directions drawn plainly, pilot and verification (exact sums at epsilon)."""
        return DeltaPlan((DeltaCheck(PlainSampler(model, sigma, config, histograms=False)),))

    def plan_sweep(self, model: PrivacyLossModel, question: SweepQuestion) -> _PlainSweep:
        """One plain tally of every sigma at ``epsilon`` (common random numbers), against
        ``delta_b = base_delta(samples, delta)`` (shared by ``question.walks`` claims)."""
        sweep, epsilon, samples = question.sweep, question.epsilon, question.samples
        seed, stream, config = question.seed, question.stream, question.config
        walks = question.walks
        delta_b = base_delta(samples, question.delta, candidates=walks)
        tally = sweep_tally(
            model, sweep, epsilon, samples=samples, seed=seed, stream=stream, config=config,
            description="calibrate",
        )  # fmt: skip
        deltas = tuple(tally.delta(i, 0) for i in range(len(sweep)))
        failure = verification_failure(samples, delta_b, candidates=walks)
        return _PlainSweep(sweep, epsilon, deltas, delta_b, failure)

    def pilot_target(self, samples: int, delta: float) -> float:
        """The pilot locates where ``delta_hat`` crosses the verification's base delta."""
        return base_delta(samples, delta)

    def locate(self, model: PrivacyLossModel, pilot: SigmaPilot) -> float:
        """Pilot estimate (stream 0) of the smallest sigma with ``delta_hat(epsilon) <= target``.

        Two walks on the pilot draws, both stopping at the first failure: powers of two from
        ``high`` down to ``low`` on ``samples // 4`` draws, then ``2**(1/steps)`` steps (8 by
        default) below the last passing power on all ``samples``. No guarantee: it only
        centres the sweep that Algorithm 5 verifies on fresh draws. Raises CalibrationError
        when even ``high`` fails; returns ``low`` when everything passes.
        """
        epsilon, target, samples, seed = pilot.epsilon, pilot.target, pilot.samples, pilot.seed
        config, low, high = pilot.config, pilot.low, pilot.high
        fine_steps = FINE_STEPS if pilot.steps is None else pilot.steps
        check_range("locate_sigma", "target", target, low=0.0, high=1.0, low_open=True)
        check_range("locate_sigma", "low", low, low=0.0, low_open=True)
        check_range("locate_sigma", "high", high, low=low, low_open=True)
        coarse = geometric_sweep(high, 2.0, round(math.log2(high / low)) + 1)
        quarter = max(samples // 4, 2)
        first = _walk(model, coarse, epsilon, target, quarter, seed, config, "coarse")
        if first < 0:
            raise CalibrationError(
                f"pilot: even sigma = {high:g} has delta_hat > {target:.3g} at epsilon "
                f"{epsilon:g}; no sigma in range: raise sigma_high, or {FALLBACK}"
            )
        if first == len(coarse) - 1:
            return coarse[-1]
        fine = geometric_sweep(coarse[first], 2.0 ** (1.0 / fine_steps), fine_steps + 1)
        second = _walk(model, fine, epsilon, target, samples, seed, config, "fine")
        return fine[max(second, 0)]


def _walk(
    model: PrivacyLossModel,
    sweep: tuple[float, ...],
    epsilon: float,
    target: float,
    samples: int,
    seed: int,
    config: EngineConfig | None,
    walk: str,
) -> int:
    """Index of the last sweep entry before the first with ``delta_hat > target`` (-1 when
    the first fails); one checkpoint stage per walk ("pilot coarse", "pilot fine")."""
    tally = sweep_tally(
        model, sweep, epsilon, samples=samples, seed=seed, stream=PILOT_STREAM, config=config,
        description=f"pilot {walk}",
    )  # fmt: skip
    index = -1
    for i in range(len(sweep)):
        if tally.delta(i, 0) > target:
            break
        index = i
    return index


#: The plain proposal (the engine's default).
PLAIN = PlainProposal()
