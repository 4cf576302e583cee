"""Estimate-verify-release and Algorithm 5 on toy models with closed-form privacy curves."""

from __future__ import annotations

import math

import pytest

from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.montecarlo import (
    EngineConfig,
    base_delta,
    calibrate_sweep,
    certified_curve,
    certify_delta,
    certify_epsilon,
    estimate_epsilon,
    geometric_sweep,
    locate_sigma,
    overall_delta,
    sample,
)
from minsep.framework.montecarlo.evr import DEFAULT_LADDER
from tests.unit.montecarlo_toys import GaussianToy, SubsampledGaussianToy

CONFIG = EngineConfig(chunk_size=20_000)


@pytest.mark.parametrize("seed", range(6))
def test_certified_epsilon_is_never_below_the_truth(seed: int) -> None:
    model, sigma, delta = SubsampledGaussianToy(rate=0.3), 0.7, 1e-3
    cert = certify_epsilon(
        model,
        sigma,
        delta,
        samples=60_000,
        pilot_samples=20_000,
        seed=seed,
        config=CONFIG,
        bound="fact42",
    )
    truth = model.exact_epsilon(delta, sigma)
    assert cert.verified
    assert cert.certified >= truth
    # and not absurdly loose: below the truth at a much smaller delta
    assert cert.certified <= model.exact_epsilon(cert.base_delta / 20, sigma)
    assert abs(cert.estimate - truth) <= 5 * cert.std_error + 2e-3
    assert overall_delta(60_000, cert.base_delta, candidates=len(DEFAULT_LADDER)) <= delta
    assert 0 < cert.failure_probability < delta
    assert "certified" in cert.notes()[0]


def test_candidates_come_from_the_pilot_only() -> None:
    model, sigma, delta = GaussianToy(), 1.0, 1e-3
    cert = certify_epsilon(
        model,
        sigma,
        delta,
        samples=50_000,
        pilot_samples=10_000,
        seed=3,
        config=CONFIG,
        bound="fact42",
    )
    pilot = sample(model, [sigma], n_samples=10_000, seed=3, config=CONFIG)
    expected = sorted(estimate_epsilon(pilot, k * cert.base_delta).value for k in DEFAULT_LADDER)
    assert cert.candidates == pytest.approx(tuple(expected), abs=0)
    # the released epsilon is the smallest verified candidate
    passed = [
        c
        for c, d in zip(cert.candidates, cert.candidate_deltas, strict=True)
        if d <= cert.base_delta
    ]
    assert cert.certified == max(passed[0], cert.estimate)


def test_failed_verification_certifies_nothing() -> None:
    """With one candidate at kappa = 1 verification fails about half the time: find a seed."""
    model, sigma, delta = GaussianToy(), 1.0, 1e-2
    outcomes = []
    for seed in range(40):
        cert = certify_epsilon(
            model,
            sigma,
            delta,
            samples=20_000,
            pilot_samples=20_000,
            seed=seed,
            config=CONFIG,
            ladder=(1.0,),
            bound="fact42",
        )
        outcomes.append(cert.verified)
        if not cert.verified:
            assert cert.certified == math.inf
            assert cert.notes()[0].startswith("NOT CERTIFIED")
            break
    assert not all(outcomes)


def test_too_few_samples_is_refused_naming_m() -> None:
    with pytest.raises(ConfigurationError, match=r"base_delta\.m"):
        certify_epsilon(GaussianToy(), 1.0, 1e-6, samples=1000, pilot_samples=1000, seed=0)
    with pytest.raises(ConfigurationError, match="ladder"):
        certify_epsilon(
            GaussianToy(), 1.0, 1e-2, samples=10**5, pilot_samples=10, seed=0, ladder=(2.0,)
        )


@pytest.mark.parametrize("seed", range(4))
def test_certified_delta_is_never_below_the_truth(seed: int) -> None:
    model, sigma, eps = SubsampledGaussianToy(rate=0.3), 0.7, 1.0
    cert = certify_delta(
        model, sigma, eps, samples=60_000, pilot_samples=20_000, seed=seed, config=CONFIG
    )
    truth = model.exact_delta(eps, sigma)
    assert cert.verified
    assert cert.certified >= truth
    assert cert.certified <= 3 * truth
    assert abs(cert.estimate - truth) <= 5 * cert.std_error
    assert cert.certified == pytest.approx(
        max(overall_delta(60_000, cert.base_delta, candidates=len(cert.thresholds)), cert.estimate)
    )


def test_certified_curve_bounds_the_truth_everywhere() -> None:
    model, sigma = SubsampledGaussianToy(rate=0.3), 0.7
    grid = [0.25 * i for i in range(17)]
    curve = certified_curve(
        model, sigma, grid, samples=50_000, seed=2, failure_probability=1e-3, config=CONFIG
    )
    uppers = list(curve.delta_upper)
    assert uppers == sorted(uppers, reverse=True)
    for eps, upper, hat in zip(grid, uppers, curve.delta_hat, strict=True):
        assert upper >= model.exact_delta(eps, sigma)
        assert upper >= hat - 1e-15
    eps = curve.epsilon_at(1e-2)
    assert math.isfinite(eps)
    assert model.exact_delta(eps, sigma) <= 1e-2
    assert curve.delta_at(eps + 0.1) <= 1e-2
    assert curve.delta_at(-1.0) == 1.0
    with pytest.raises(ConfigurationError, match="epsilons"):
        certified_curve(model, sigma, [1.0, 0.5], samples=100, seed=0)


def test_geometric_sweep_and_validation() -> None:
    sweep = geometric_sweep(2.0, 2.0, 4)
    assert sweep == (2.0, 1.0, 0.5, 0.25)
    with pytest.raises(ConfigurationError, match="ratio"):
        geometric_sweep(1.0, 1.0, 3)
    with pytest.raises(ConfigurationError, match="sweep"):
        calibrate_sweep(GaussianToy(), [1.0, 2.0], 1.0, 1e-3, samples=10**5, seed=0)


def test_algorithm5_returns_a_certified_sigma_and_stops_at_first_failure() -> None:
    model, eps, delta = GaussianToy(), 2.0, 1e-3
    sweep = geometric_sweep(3.0, 1.05, 40)
    cal = calibrate_sweep(model, sweep, eps, delta, samples=100_000, seed=5, config=CONFIG)
    assert model.exact_delta(eps, cal.sigma) <= delta
    assert cal.base_delta == pytest.approx(base_delta(100_000, delta))
    assert all(d <= cal.base_delta for d in cal.deltas[: cal.index + 1])
    assert cal.deltas[cal.index + 1] > cal.base_delta
    assert not cal.at_bottom
    # the sweep resolution bounds the slack: one step down is already worse than delta_b
    # at the truth within sampling error
    assert model.exact_delta(eps, sweep[cal.index + 2]) > cal.base_delta


def test_algorithm5_raises_when_the_first_entry_fails() -> None:
    with pytest.raises(CalibrationError, match="exact guarantee"):
        calibrate_sweep(GaussianToy(), [0.5, 0.4], 1.0, 1e-3, samples=50_000, seed=0, config=CONFIG)


def test_algorithm5_is_deterministic_and_reuses_draws() -> None:
    model = SubsampledGaussianToy(rate=0.2)
    sweep = geometric_sweep(2.0, 1.1, 12)
    a = calibrate_sweep(model, sweep, 1.0, 1e-2, samples=30_000, seed=1, config=CONFIG)
    b = calibrate_sweep(model, sweep[3:], 1.0, 1e-2, samples=30_000, seed=1, config=CONFIG)
    assert a.deltas[3:] == b.deltas  # the same draws serve each sigma, whatever the sweep
    assert a.sigma == b.sigma or a.index < 3


def test_locate_sigma_brackets_the_truth() -> None:
    model, eps, target = GaussianToy(), 1.0, 1e-3
    centre = locate_sigma(model, eps, target, samples=40_000, seed=0, config=CONFIG)
    assert model.exact_delta(eps, centre * 1.3) < target < model.exact_delta(eps, centre / 1.3)
    with pytest.raises(CalibrationError):
        locate_sigma(model, eps, target, samples=4_000, seed=0, high=0.5, low=0.1)
    assert locate_sigma(model, eps, target, samples=4_000, seed=0, high=64.0, low=16.0) == 16.0


@pytest.mark.slow
def test_certificates_hold_over_many_seeds() -> None:
    """200 independent certifications at a modest sample size: none under-reports.

    Each fails with probability <= failure_probability (~1e-4 here), so any failure is a bug.
    """
    model, sigma, delta = SubsampledGaussianToy(rate=0.3), 0.7, 1e-2
    truth = model.exact_epsilon(delta, sigma)
    for seed in range(200):
        cert = certify_epsilon(
            model, sigma, delta, samples=20_000, pilot_samples=5_000, seed=1000 + seed,
            config=CONFIG, bound="fact42",
        )  # fmt: skip
        assert cert.certified >= truth, seed
