"""Point estimates with standard errors from tallies (no guarantee attached).

``delta_hat(eps) = max_direction mean(X)`` and ``eps_hat(delta) = max_direction
eps_hat_direction(delta)`` (delta(eps) is the max over directions, so its inverse is the max of
the inverses). Exact sums are used when the epsilon was a check of the run, else the
conservative histogram (never below the exact empirical value, see
:mod:`~minsep.framework.montecarlo.accumulators`).
"""

from __future__ import annotations

import math

import attrs

from minsep.framework.montecarlo.accumulators import LossHistogram, SweepTally

__all__ = ["Estimate", "estimate_delta", "estimate_epsilon", "merged_histograms"]


@attrs.frozen
class Estimate:
    """A point estimate, its standard error and the samples per direction behind it."""

    value: float
    std_error: float
    samples: int


def merged_histograms(tallies: list[SweepTally], sigma_index: int = 0) -> list[LossHistogram]:
    """Per direction, the histogram of ``sigma_index`` summed over several runs."""
    first = tallies[0]
    out = []
    for direction in first.directions:
        hist = LossHistogram(first.histogram(sigma_index, direction).spec)
        for tally in tallies:
            hist.merge(tally.histogram(sigma_index, direction))
        out.append(hist)
    return out


def estimate_epsilon(
    tallies: SweepTally | list[SweepTally], delta: float, sigma_index: int = 0
) -> Estimate:
    """``eps_hat(delta)`` (max over directions) with a delta-method standard error."""
    runs = tallies if isinstance(tallies, list) else [tallies]
    hists = merged_histograms(runs, sigma_index)
    values = [h.epsilon(delta) for h in hists]
    k = max(range(len(values)), key=lambda i: values[i])
    return Estimate(values[k], hists[k].epsilon_std_error(delta), hists[k].total)


def estimate_delta(
    tallies: SweepTally | list[SweepTally], epsilon: float, sigma_index: int = 0
) -> Estimate:
    """``delta_hat(eps)`` (max over directions) with its standard error.

    Uses the exact sums when ``epsilon`` is a check of every run, else the histograms.
    """
    runs = tallies if isinstance(tallies, list) else [tallies]
    first = runs[0]
    best = Estimate(-math.inf, math.nan, 0)
    for direction in first.directions:
        parts = [run.tally(sigma_index, direction) for run in runs]
        if all(epsilon in part.checks for part in parts):
            count = sum(p.count for p in parts)
            s1 = sum(float(p.sum_x[p.checks.index(epsilon)]) for p in parts)
            s2 = sum(float(p.sum_x2[p.checks.index(epsilon)]) for p in parts)
            value = s1 / count
            se = (
                math.sqrt(max(s2 / count - value * value, 0.0) / (count - 1))
                if count > 1
                else math.nan
            )
            est = Estimate(value, se, count)
        else:
            hist = merged_histograms(runs, sigma_index)[first.directions.index(direction)]
            est = Estimate(hist.delta(epsilon), hist.std_error(epsilon), hist.total)
        if est.value > best.value:
            best = est
    return best
