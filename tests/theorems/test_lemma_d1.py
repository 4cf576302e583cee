"""Lemma D.1 / App. D in one dimension: the (+2, -1) pair dominates the actual truncated step.

One step of truncated Poisson sampling (C = 1), conditioned on the set R of other examples
sampled (|R| = r, public as in docs/math.md §6), with the other examples' clipped gradients g_j
in [-1, 1] and the sensitive example's g_s in [-1, 1]:

* D: s is sampled with probability p; if the r + 1 sampled examples exceed B_max, a uniform
  B_max-subset is kept (s survives with probability t = B_max / (r + 1));
* D': s replaced by the zero-gradient example ⊥, sampled and truncated the same way.

The output laws P_act (D) and Q_act (D') are finite Gaussian mixtures, enumerated exactly over
the kept subsets; their hockey-stick divergences (both directions) are integrated on a fine 1-D
grid (trapezoid, 40,001 points over ±12σ: error well below the 1e-6 tolerance) and compared with
those of the pair of docs/math.md §6 given r: P = mixture of N(0), N(1) (r < B_max) or N(2)
(survives) and Q = N(0) or N(-1). Only one dimension (one step) is checked here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy.special import logsumexp

Mixture = dict[float, float]  # mean -> probability


def _add(mix: Mixture, mean: float, prob: float) -> None:
    key = round(mean, 12)
    mix[key] = mix.get(key, 0.0) + prob


def kept_sums(grads: Sequence[float], slots: int) -> Mixture:
    """Law of the sum over a uniform ``slots``-subset of ``grads`` (all of them if they fit)."""
    out: Mixture = {}
    if len(grads) <= slots:
        _add(out, float(sum(grads)), 1.0)
        return out
    subsets = list(itertools.combinations(grads, slots))
    for subset in subsets:
        _add(out, float(sum(subset)), 1.0 / len(subsets))
    return out


def actual_law(sensitive: float, others: Sequence[float], p: float, b_max: int) -> Mixture:
    """Output mean law of one truncated step given the sampled others R (gradients ``others``)."""
    r = len(others)
    out: Mixture = {}
    for mean, prob in kept_sums(others, b_max).items():  # s not sampled
        _add(out, mean, (1 - p) * prob)
    if r + 1 <= b_max:
        _add(out, sensitive + sum(others), p)
        return out
    t = b_max / (r + 1)
    for mean, prob in kept_sums(others, b_max - 1).items():  # s kept
        _add(out, sensitive + mean, p * t * prob)
    for mean, prob in kept_sums(others, b_max).items():  # s dropped
        _add(out, mean, p * (1 - t) * prob)
    return out


def pair_laws(r: int, p: float, b_max: int) -> tuple[Mixture, Mixture]:
    """The App. D pair given r: P entries 0/1/2, Q entries 0/-1."""
    if r < b_max:
        return {0.0: 1 - p, 1.0: p}, {0.0: 1.0}
    t = b_max / (r + 1)
    return {0.0: 1 - p * t, 2.0: p * t}, {0.0: 1 - p * t, -1.0: p * t}


def hockey_sticks(
    first: Mixture, second: Mixture, sigma: float, epsilons: Sequence[float]
) -> np.ndarray:
    """max(H(first||second), H(second||first)) at each e^eps, by a fine trapezoid rule."""
    means = list(first) + list(second)
    y = np.linspace(min(means) - 12 * sigma, max(means) + 12 * sigma, 40_001)

    def density(mix: Mixture) -> np.ndarray:
        mu = np.asarray(list(mix))
        w = np.asarray(list(mix.values()))
        log = -0.5 * ((y[:, None] - mu[None, :]) / sigma) ** 2
        return np.exp(logsumexp(log, axis=1, b=w)) / (sigma * math.sqrt(2 * math.pi))

    f, g = density(first), density(second)
    out = []
    for eps in epsilons:
        a = math.exp(eps)
        out.append(
            max(
                np.trapezoid(np.maximum(f - a * g, 0.0), y),
                np.trapezoid(np.maximum(g - a * f, 0.0), y),
            )
        )
    return np.asarray(out)


EPSILONS = (0.0, 0.1, 0.3, 0.6, 1.0, 2.0)
GRADIENTS = (-1.0, -0.5, 0.0, 0.5, 1.0)


def worst_gap(r: int, b_max: int, p: float, sigma: float) -> float:
    """max over gradient configurations (g_s, g_R on a grid) of delta_act - delta_pair."""
    pair = hockey_sticks(*pair_laws(r, p, b_max), sigma, EPSILONS)
    worst = -math.inf
    for g_s in (-1.0, 0.5, 1.0):
        for others in itertools.combinations_with_replacement(GRADIENTS, r):
            actual = actual_law(g_s, others, p, b_max)
            neighbour = actual_law(0.0, others, p, b_max)
            gap = hockey_sticks(actual, neighbour, sigma, EPSILONS) - pair
            worst = max(worst, float(np.max(gap)))
    return worst


def test_actual_law_sums_to_one_and_reduces_without_truncation() -> None:
    law = actual_law(1.0, (0.5, -1.0), 0.3, 3)
    assert sum(law.values()) == pytest.approx(1.0)
    assert sorted(law) == [-0.5, 0.5]
    assert law[-0.5] == pytest.approx(0.7) and law[0.5] == pytest.approx(0.3)


@pytest.mark.parametrize(("r", "b_max"), [(0, 1), (1, 1), (2, 2)])
def test_pair_dominates_the_truncated_step(r: int, b_max: int) -> None:
    assert worst_gap(r, b_max, p=0.5, sigma=1.0) <= 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.2, 0.8])
@pytest.mark.parametrize("sigma", [0.4, 2.0])
@pytest.mark.parametrize(("r", "b_max"), [(1, 1), (2, 1), (3, 1), (3, 2), (4, 3)])
def test_pair_dominates_the_truncated_step_grid(r: int, b_max: int, p: float, sigma: float) -> None:
    assert worst_gap(r, b_max, p, sigma) <= 1e-6
