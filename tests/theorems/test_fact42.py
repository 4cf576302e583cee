"""Fact 4.2 and the EVR guarantee: docs/math.md §7 oracles pinned, and brute-force checks.

The brute-force checks enumerate the exact law of the sample mean (binomial, or a small
multinomial for a three-point [0, 1] variable) and compare the true acceptance probability
with the bound.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo.bounds import (
    base_delta,
    fact42_bound,
    kl_bernoulli,
    kl_upper_confidence,
    min_samples,
    overall_delta,
    verification_failure,
)


@pytest.mark.parametrize(
    ("m", "tau", "delta_b", "expected"),
    [(3, 2, 1 / 3, 1 / 2), (6, 2, 1 / 3, 1 / 4), (2, 3, 1 / 4, 1 / 3), (4, 3, 1 / 4, 1 / 9)],
)
def test_fact42_oracles(m: int, tau: float, delta_b: float, expected: float) -> None:
    assert fact42_bound(m, tau, delta_b) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("m", "delta_b", "expected"), [(10**6, 1e-5, 3.77978e-5), (10**7, 1e-6, 4.09237e-6)]
)
def test_overall_delta_oracles(m: int, delta_b: float, expected: float) -> None:
    assert overall_delta(m, delta_b) == pytest.approx(expected, rel=2e-6)


def test_overall_delta_is_the_minimum_over_tau() -> None:
    """Compare with a dense brute-force grid over tau (never below it by more than rounding,
    never above it by more than the grid's own coarseness)."""
    for m, delta_b in [(1000, 0.01), (10**5, 1e-4), (10**6, 1e-5), (50, 0.2)]:
        taus = np.exp(np.linspace(0.0, -math.log(delta_b), 200_001))
        values = [
            t * delta_b
            + math.exp(-m * kl_bernoulli(delta_b, min(t * delta_b, 1.0))) * (1 - t * delta_b)
            for t in taus[::50]
        ]
        grid_min = min(values)
        got = overall_delta(m, delta_b)
        assert got <= grid_min * (1 + 1e-9)
        assert got >= grid_min * (1 - 1e-4)


def test_kl_bernoulli_edge_cases() -> None:
    assert kl_bernoulli(0.3, 0.3) == 0.0
    assert kl_bernoulli(0.0, 0.5) == pytest.approx(math.log(2))
    assert kl_bernoulli(1.0, 0.5) == pytest.approx(math.log(2))
    assert kl_bernoulli(0.1, 0.0) == math.inf
    assert kl_bernoulli(0.1, 1.0) == math.inf
    # tiny arguments keep relative accuracy: KL(a||2a) ~ a (1 - ln 2) for small a
    assert kl_bernoulli(1e-12, 2e-12) == pytest.approx(1e-12 * (1 - math.log(2)), rel=1e-6)
    with pytest.raises(ConfigurationError):
        kl_bernoulli(-0.1, 0.5)


@pytest.mark.parametrize("m", [1, 5, 20, 80])
@pytest.mark.parametrize("delta_b", [0.05, 0.2, 0.4])
@pytest.mark.parametrize("tau", [1.0, 1.5, 2.0])
def test_fact42_bounds_exact_binomial_acceptance(m: int, delta_b: float, tau: float) -> None:
    """Bernoulli(tau delta_b) samples: Pr[mean <= delta_b] (exact binomial) <= the bound."""
    mu = tau * delta_b
    accept = stats.binom.cdf(math.floor(m * delta_b + 1e-12), m, mu)
    assert accept <= fact42_bound(m, tau, delta_b) * (1 + 1e-12)


def test_fact42_bounds_a_three_point_variable() -> None:
    """A [0, 1]-valued (non-Bernoulli) X: enumerate all outcomes of m = 8 samples."""
    values = np.array([0.0, 0.5, 1.0])
    probs = np.array([0.7, 0.2, 0.1])
    mu = float(values @ probs)  # 0.2
    m = 8
    for delta_b in [0.05, 0.1, 0.15, 0.2]:
        accept = 0.0
        for outcome in itertools.product(range(3), repeat=m):
            if values[list(outcome)].mean() <= delta_b + 1e-12:
                accept += float(np.prod(probs[list(outcome)]))
        assert accept <= fact42_bound(m, mu / delta_b, delta_b) * (1 + 1e-12)


@pytest.mark.parametrize("m", [10**4, 10**6, 10**8])
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
@pytest.mark.parametrize("candidates", [1, 8])
def test_base_delta_inverts_overall_delta(m: int, delta: float, candidates: int) -> None:
    try:
        b = base_delta(m, delta, candidates=candidates)
    except ConfigurationError as exc:
        assert "m" in str(exc)
        assert overall_delta(m, delta * 1e-9, candidates=candidates) > delta
        return
    assert overall_delta(m, b, candidates=candidates) <= delta
    assert overall_delta(m, b * (1 + 1e-8), candidates=candidates) > delta * (1 - 1e-7)
    assert 0 < b < delta


def test_base_delta_refuses_too_few_samples_naming_m() -> None:
    with pytest.raises(ConfigurationError, match=r"base_delta\.m = 100 .*need --samples >= \d+"):
        base_delta(100, 1e-5)


@pytest.mark.parametrize(("delta_b", "delta"), [(1e-5, 3.78e-5), (2.5e-4, 1e-3), (0.01, 0.03)])
def test_min_samples_is_the_smallest_m(delta_b: float, delta: float) -> None:
    m = min_samples(delta_b, delta)
    assert overall_delta(m, delta_b) <= delta
    assert overall_delta(m - 1, delta_b) > delta


def test_overall_delta_is_monotone() -> None:
    bs = [1e-6, 1e-5, 1e-4, 1e-3]
    values = [overall_delta(10**6, b) for b in bs]
    assert values == sorted(values)
    ms = [10**4, 10**5, 10**6, 10**7]
    values = [overall_delta(m, 1e-4) for m in ms]
    assert values == sorted(values, reverse=True)
    assert overall_delta(10**6, 1e-4, candidates=8) > overall_delta(10**6, 1e-4)


def test_verification_failure_is_part_of_overall_delta() -> None:
    m, b = 10**6, 1e-5
    beta = verification_failure(m, b)
    assert 0 < beta < overall_delta(m, b)
    beta4 = verification_failure(m, b, candidates=4)
    assert 0 < beta4 < overall_delta(m, b, candidates=4)


@pytest.mark.parametrize("m", [10, 40, 200])
@pytest.mark.parametrize("p", [0.01, 0.1, 0.5])
def test_kl_upper_confidence_coverage_exact(m: int, p: float) -> None:
    """Pr[UCB(mean) < p] <= beta, by enumerating the binomial law."""
    beta = 0.05
    miss = sum(
        stats.binom.pmf(k, m, p)
        for k in range(m + 1)
        if kl_upper_confidence(k / m, m, math.log(1 / beta)) < p
    )
    assert miss <= beta


def test_kl_upper_confidence_is_monotone_and_above_the_mean() -> None:
    ucbs = [kl_upper_confidence(x, 1000, 10.0) for x in [0.0, 1e-4, 1e-3, 0.01, 0.5, 1.0]]
    assert ucbs == sorted(ucbs)
    assert all(u >= x for u, x in zip(ucbs, [0.0, 1e-4, 1e-3, 0.01, 0.5, 1.0], strict=True))
    assert ucbs[-1] == 1.0
