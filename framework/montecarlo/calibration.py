"""Algorithm 5: calibrate the noise multiplier over a geometric sweep (docs/math.md §7, App. A).

Given a sweep ``sigma_1 > sigma_2 > ...`` (most private first), ``m`` verification samples
per entry and ``delta_b = base_delta(m, delta)``: walk the sweep and stop at the first entry
whose empirical ``delta_hat(eps)`` exceeds ``delta_b`` in either direction; return the entry
before it. If the first entry fails, raise :class:`CalibrationError` (the caller falls back to
a mechanism with an exact guarantee).

Why one set of draws can serve every sigma (common random numbers). For fixed eps, the true
``delta_sigma(eps)`` is non-increasing in sigma: ``N(Cx, s'^2 I)`` is ``N(Cx, s^2 I)`` plus
independent ``N(0, (s'^2 - s^2) I)`` noise for ``s' > s``, a post-processing applied to both
P and Q. So the entries whose true delta exceeds ``tau delta_b`` ("bad" entries) form a suffix
of the sweep. The walk returns a bad entry only if it accepted the *first* bad entry, an event
of probability at most ``exp(-m KL(delta_b || tau delta_b))`` by Fact 4.2 applied to that one
entry and its failing direction, whatever the dependence between entries. Hence a single
Fact 4.2 event covers the whole sweep: no union bound over the sweep, and the correlation
introduced by reusing the draws is irrelevant. The returned sigma is (eps, delta)-DP with the
failure folded in, exactly as for a single verification (``overall_delta(m, delta_b) <=
delta``).

The draws are sigma-free transcripts; each chunk is drawn once and ``privacy_loss`` is
evaluated for every sigma of the sweep on it.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import attrs

from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo.bounds import base_delta, verification_failure
from minsep.framework.montecarlo.proposals import Proposal, ProposalInfo
from minsep.framework.montecarlo.sampling import (
    PILOT_STREAM,
    VERIFY_STREAM,
    EngineConfig,
    sample,
)
from minsep.framework.validation import check_range

#: Where to turn when nothing can be certified: accountants whose guarantee is exact.
FALLBACK = (
    "fall back to an accountant with an exact guarantee: 'pld' where the scheme has an exact "
    "event, else 'gaussian' (unamplified: loose, but sound for every scheme)."
)

__all__ = [
    "SweepCalibration",
    "calibrate_sweep",
    "geometric_sweep",
    "locate_sigma",
]


def geometric_sweep(start: float, ratio: float, count: int) -> tuple[float, ...]:
    """``start / ratio**j`` for ``j = 0..count-1``: decreasing, most private first."""
    check_range("geometric_sweep", "start", start, low=0.0, low_open=True)
    check_range("geometric_sweep", "ratio", ratio, low=1.0, low_open=True)
    check_range("geometric_sweep", "count", count, low=1, integer=True)
    return tuple(float(start) / float(ratio) ** j for j in range(count))


def _check_sweep(sweep: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(s) for s in sweep)
    ok = bool(values) and all(math.isfinite(s) and s > 0 for s in values)
    if not ok or any(b >= a for a, b in itertools.pairwise(values)):
        raise ConfigurationError(
            f"calibrate_sweep.sweep = {values!r} is invalid: must be finite sigmas > 0 in "
            "strictly decreasing order (most private first)"
        )
    return values


@attrs.frozen
class SweepCalibration:
    """Result of Algorithm 5.

    ``sigma = sweep[index]`` is certified ``(epsilon, delta)``-DP with the verification failure
    ``failure_probability`` folded into ``delta`` (module docstring). ``deltas[i]`` is the
    empirical max-over-directions ``delta_hat(epsilon)`` of ``sweep[i]`` on the shared draws;
    ``at_bottom`` says every entry passed (a smaller sigma might also pass).
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

    @property
    def at_bottom(self) -> bool:
        """True when the last (least private) entry passed."""
        return self.index == len(self.sweep) - 1


def calibrate_sweep(
    model: PrivacyLossModel,
    sweep: Sequence[float],
    epsilon: float,
    delta: float,
    *,
    samples: int,
    seed: int,
    config: EngineConfig | None = None,
    stream: int = VERIFY_STREAM,
    proposal: Proposal | None = None,
) -> SweepCalibration:
    """Algorithm 5 on ``sweep`` (decreasing) with ``samples`` shared draws per direction.

    Raises CalibrationError when the first (most private) entry already fails, and
    ConfigurationError (naming ``m``) when ``samples`` is too few for ``delta``. A
    ``proposal`` that is not plain answers the question itself (e.g. the escort).
    """
    if proposal is not None and not proposal.plain:
        return proposal.calibrate_sweep(
            model, sweep, epsilon, delta, samples=samples, seed=seed, config=config, stream=stream
        )
    start = time.perf_counter()
    values = _check_sweep(sweep)
    check_range("calibrate_sweep", "epsilon", epsilon, low=0.0)
    check_range("calibrate_sweep", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    delta_b = base_delta(samples, delta)
    tally = sample(
        model,
        values,
        n_samples=samples,
        seed=seed,
        stream=stream,
        checks=(float(epsilon),),
        histograms=False,
        config=config,
        description="calibrate",
    )
    deltas = tuple(tally.delta(i, 0) for i in range(len(values)))
    index = -1
    for i, observed in enumerate(deltas):
        if observed > delta_b:
            break
        index = i
    if index < 0:
        raise CalibrationError(
            f"Algorithm 5: the most private sigma {values[0]:.6g} of the sweep fails "
            f"verification (delta_hat {deltas[0]:.3g} > base delta {delta_b:.3g} at epsilon "
            f"{epsilon:g}); no sigma is certified. Start the sweep higher, use more samples, "
            f"or {FALLBACK}"
        )
    return SweepCalibration(
        sigma=values[index],
        index=index,
        sweep=values,
        deltas=deltas,
        epsilon=float(epsilon),
        delta=float(delta),
        base_delta=delta_b,
        failure_probability=verification_failure(samples, delta_b),
        samples=samples,
        seed=seed,
        seconds=time.perf_counter() - start,
    )


def locate_sigma(
    model: PrivacyLossModel,
    epsilon: float,
    target: float,
    *,
    samples: int,
    seed: int,
    config: EngineConfig | None = None,
    low: float = 2.0**-4,
    high: float = 2.0**8,
    fine_steps: int = 8,
) -> float:
    """Pilot estimate (stream 0) of the smallest sigma with ``delta_hat(epsilon) <= target``.

    Two walks on the pilot draws, both stopping at the first failure: powers of two from
    ``high`` down to ``low`` on ``samples // 4`` draws, then ``2**(1/fine_steps)`` steps
    below the last passing power on all ``samples``. No guarantee: it only centres the sweep
    that :func:`calibrate_sweep` verifies on fresh draws. Raises CalibrationError when even
    ``high`` fails; returns ``low`` when everything passes.
    """
    check_range("locate_sigma", "target", target, low=0.0, high=1.0, low_open=True)
    check_range("locate_sigma", "low", low, low=0.0, low_open=True)
    check_range("locate_sigma", "high", high, low=low, low_open=True)
    coarse = geometric_sweep(high, 2.0, round(math.log2(high / low)) + 1)
    first = _walk(model, coarse, epsilon, target, max(samples // 4, 2), seed, config, "coarse")
    if first < 0:
        raise CalibrationError(
            f"pilot: even sigma = {high:g} has delta_hat > {target:.3g} at epsilon {epsilon:g}; "
            f"no sigma in range: raise sigma_high, or {FALLBACK}"
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
    # Each walk is its own checkpoint stage ("pilot coarse", "pilot fine").
    tally = sample(
        model,
        sweep,
        n_samples=samples,
        seed=seed,
        stream=PILOT_STREAM,
        checks=(float(epsilon),),
        histograms=False,
        config=config,
        description=f"pilot {walk}",
    )
    index = -1
    for i in range(len(sweep)):
        if tally.delta(i, 0) > target:
            break
        index = i
    return index
