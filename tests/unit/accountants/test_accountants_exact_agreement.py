"""b = 1: the Monte Carlo accountant agrees with the exact PLD accountant.

b-min-sep with b = 1 and one band is Poisson DP-SGD, whose exact privacy is the n-fold
Poisson-subsampled Gaussian (docs/math.md §3, §4). The Monte Carlo point estimates must match the
PLD values within their standard errors, and the Monte Carlo certified bounds must not fall
below them (the PLD is pessimistic only by about its discretisation interval).
"""

from __future__ import annotations

import pytest

from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.accountants.pld import PLDAccountant
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies

#: How far the pessimistic PLD (interval 1e-4) may sit above the true epsilon.
PLD_SLACK = 0.01


def setup(n: int, rate: float) -> tuple[SamplingScheme, SamplingScheme, Strategy]:
    exact = schemes.get("poisson").from_rate(n, rate)
    b1 = schemes.get("b_min_sep").from_rate(n, rate, min_sep=1)
    return exact, b1, strategies.get("identity").for_steps(n)


def check_agreement(n: int, rate: float, sigma: float, samples: int, seed: int) -> None:
    exact, b1, identity = setup(n, rate)
    pld = PLDAccountant(value_discretization_interval=1e-4)
    eps = pld.epsilon(exact, identity, sigma, 1e-3).epsilon
    dlt = pld.delta(exact, identity, sigma, eps).delta
    mc = MonteCarloAccountant(samples=samples, seed=seed, run=RunSettings(progress=False))
    for scheme in (b1, exact):  # b-min-sep at b = 1, and Poisson's own Monte Carlo route
        e = mc.epsilon(scheme, identity, sigma, 1e-3)
        assert e.std_error is not None and e.std_error < 0.1
        assert abs(e.epsilon - eps) <= 4 * e.std_error + PLD_SLACK
        assert e.certified_epsilon >= eps - PLD_SLACK
        d = mc.delta(scheme, identity, sigma, eps)
        assert d.std_error is not None
        assert abs(d.delta - dlt) <= 4 * d.std_error + 1e-6
        assert d.certified_delta >= dlt * 0.99


def test_b1_monte_carlo_matches_pld() -> None:
    check_agreement(n=64, rate=1 / 8, sigma=1.0, samples=50_000, seed=11)


def test_b1_monte_carlo_calibration_is_no_smaller_than_exact() -> None:
    exact, b1, identity = setup(64, 1 / 8)
    target, delta = 4.0, 1e-2
    exact_sigma = PLDAccountant().calibrate(exact, identity, target, delta).sigma
    mc_sigma = MonteCarloAccountant(
        samples=30_000, seed=5, run=RunSettings(progress=False)
    ).calibrate(b1, identity, target, delta)
    # Certified (up to the failure probability folded into delta), hence not below the exact
    # answer beyond the PLD's pessimism, and close to it: the base delta costs a few percent.
    assert mc_sigma.sigma >= exact_sigma * 0.99
    assert mc_sigma.sigma <= exact_sigma * 1.25


@pytest.mark.slow
@pytest.mark.parametrize(("n", "rate", "sigma"), [(64, 1 / 8, 1.0), (256, 1 / 16, 0.8)])
def test_b1_monte_carlo_matches_pld_closely(n: int, rate: float, sigma: float) -> None:
    check_agreement(n=n, rate=rate, sigma=sigma, samples=400_000, seed=23)
