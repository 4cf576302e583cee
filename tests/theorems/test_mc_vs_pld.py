"""Monte Carlo (EVR engine) against dp_accounting's exact PLD for Poisson subsampling (b = 1).

b-min-sep with b = 1 is Poisson sampling (docs/math.md §3), whose privacy is the n-fold composition
of the Poisson-subsampled Gaussian: exact by PLD. The Monte Carlo point estimate must agree
within 2% at delta = 1e-3, and the certified epsilon must not fall below the truth.
"""

from __future__ import annotations

import pytest
from dp_accounting import NeighboringRelation, dp_event
from dp_accounting.pld import pld_privacy_accountant

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.montecarlo import EngineConfig, certify_epsilon
from minsep.framework.registries import accountants, schemes, strategies
from tests.unit.montecarlo_toys import SubsampledGaussianToy

DELTA = 1e-3


def _pld_epsilon(rate: float, sigma: float, steps: int) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
    event = dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma))
    accountant.compose(event, steps)
    return float(accountant.get_epsilon(DELTA))


def test_engine_matches_pld_on_one_subsampled_gaussian_step() -> None:
    model, sigma = SubsampledGaussianToy(rate=0.25), 0.6
    exact = _pld_epsilon(0.25, sigma, 1)
    assert model.exact_epsilon(DELTA, sigma) == pytest.approx(exact, rel=1e-3)  # the toy's oracle
    cert = certify_epsilon(
        model, sigma, DELTA, samples=200_000, pilot_samples=50_000, seed=1,
        config=EngineConfig(chunk_size=50_000),
    )  # fmt: skip
    assert cert.estimate == pytest.approx(exact, rel=0.02)
    assert cert.certified >= model.exact_epsilon(DELTA, sigma)


def _compare(scheme_name: str, steps: int, rate: float, sigma: float, samples: int) -> None:
    options = {"min_sep": 1} if scheme_name == "b_min_sep" else {}
    scheme = schemes.get(scheme_name).from_rate(steps, rate, **options)
    strategy = strategies.get("identity").for_steps(steps)
    exact = _pld_epsilon(rate, sigma, steps)
    pld = accountants.get("pld")().epsilon(
        schemes.get("poisson").from_rate(steps, rate), strategy, sigma, DELTA
    )
    assert pld.epsilon == pytest.approx(exact, rel=1e-3)
    mc = accountants.get("monte_carlo")(
        samples=samples,
        pilot_samples=samples // 4,
        seed=20260214,
        run=RunSettings(chunk_size=25_000),
    ).epsilon(scheme, strategy, sigma, DELTA)
    assert mc.epsilon == pytest.approx(exact, rel=0.02)
    # the certificate never under-reports (PLD is pessimistic by its discretisation, < 1%)
    assert mc.certified_epsilon >= 0.99 * exact


@pytest.mark.parametrize("scheme_name", ["poisson", "b_min_sep"])
def test_b1_poisson_matches_pld_small(scheme_name: str) -> None:
    _compare(scheme_name, steps=16, rate=1 / 4, sigma=1.0, samples=100_000)


@pytest.mark.slow
@pytest.mark.parametrize("scheme_name", ["poisson", "b_min_sep"])
def test_b1_poisson_matches_pld_large(scheme_name: str) -> None:
    _compare(scheme_name, steps=128, rate=1 / 16, sigma=0.9, samples=1_000_000)
