"""Repeated trials of the betting certificate (docs/math.md §7.2) against exact epsilons.

Every certified epsilon must be at least the true one: each run fails with probability at
most its ``failure_probability`` (about 1e-5 to 1e-4 here), so over a few hundred runs any
failure is a bug. The truths are a closed form (the Poisson-subsampled Gaussian toy) and, for
b-min-sep at b = 1 (Poisson DP-SGD), dp_accounting's *optimistic* PLD, a lower bound on the true
epsilon, so the comparison needs no slack.
"""

from __future__ import annotations

import functools

import pytest
from dp_accounting.pld import privacy_loss_distribution

from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework.montecarlo import EngineConfig, certify_epsilon
from minsep.framework.registries import schemes, strategies
from tests.unit.montecarlo_toys import SubsampledGaussianToy

CONFIG = EngineConfig(chunk_size=20_000)


@functools.cache
def poisson_lower_epsilon(n: int, rate: float, sigma: float, delta: float) -> float:
    """A lower bound on the exact epsilon of n Poisson-subsampled Gaussian steps."""
    step = privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sigma,
        sampling_prob=rate,
        pessimistic_estimate=False,
        value_discretization_interval=1e-4,
    )
    return float(step.self_compose(n).get_epsilon_for_delta(delta))


def check_toy(seeds: range, samples: int, pilot: int) -> None:
    model, sigma, delta = SubsampledGaussianToy(rate=0.3), 0.7, 1e-2
    truth = model.exact_epsilon(delta, sigma)
    for seed in seeds:
        cert = certify_epsilon(
            model, sigma, delta, samples=samples, pilot_samples=pilot, seed=seed, config=CONFIG
        )
        assert cert.bound == "betting" and cert.verified, seed
        assert cert.certified >= truth, seed
        assert cert.failure_probability < delta


def check_poisson(seeds: range, samples: int) -> None:
    n, rate, sigma, delta = 64, 1 / 8, 1.0, 1e-2
    scheme = schemes.get("b_min_sep").from_rate(n, rate, min_sep=1)
    identity = strategies.get("identity").for_steps(n)
    truth = poisson_lower_epsilon(n, rate, sigma, delta)
    for seed in seeds:
        accountant = MonteCarloAccountant(
            samples=samples, seed=seed, run=RunSettings(progress=False)
        )
        result = accountant.epsilon(scheme, identity, sigma, delta)
        assert result.bound == "betting", seed
        assert result.certified_epsilon >= truth, seed
        # and tight: within 10 % of the truth at this modest sample size
        assert result.certified_epsilon <= truth * 1.10, seed


def test_toy_certificates_hold() -> None:
    check_toy(range(8), samples=20_000, pilot=5_000)


def test_poisson_b1_certificates_hold() -> None:
    check_poisson(range(2), samples=20_000)


@pytest.mark.slow
def test_toy_certificates_hold_over_many_seeds() -> None:
    check_toy(range(100, 400), samples=20_000, pilot=5_000)


@pytest.mark.slow
def test_poisson_b1_certificates_hold_over_many_seeds() -> None:
    check_poisson(range(100, 160), samples=20_000)
