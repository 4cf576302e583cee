"""Fact 4.2 bounds at tiny deltas: clear refusals instead of OverflowError or a false message."""

from __future__ import annotations

import math

import pytest

from minsep.accountants.monte_carlo import CalibrationSweep, MonteCarloAccountant, RunSettings
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import bounds
from minsep.framework.registries import schemes, strategies


@pytest.mark.parametrize("delta", [4e-300, 1e-305, 1e-310, 5e-324])
def test_tiny_delta_is_refused_not_an_overflow(delta: float) -> None:
    # Before: OverflowError in bounds._objective below about 5e-300.
    for call in (
        lambda: bounds.base_delta(10**6, delta),
        lambda: bounds.min_samples(delta / 4.0, delta),
    ):
        with pytest.raises(ConfigurationError, match=r"delta = .* is invalid: .*2\^62"):
            call()


def test_subnormal_base_delta_is_refused_naming_it() -> None:
    with pytest.raises(ConfigurationError, match=r"overall_delta\.delta_b = 1e-310"):
        bounds.overall_delta(10**6, 1e-310)
    # A normal but tiny base delta evaluates (tau = 1/delta_b stays finite).
    assert 0.0 < bounds.overall_delta(10**6, 1e-300) <= 1.0


@pytest.mark.parametrize("delta", [1e-17, 1e-18, 1e-20])
def test_infeasible_delta_says_it_needs_more_than_2_62_samples(delta: float) -> None:
    # Before: "no m reaches delta", which is false: it needs more than 2^62 samples.
    with pytest.raises(ConfigurationError) as info:
        bounds.min_samples(delta / 4.0, delta)
    message = str(info.value)
    assert "2^62" in message and "no m reaches" not in message
    with pytest.raises(ConfigurationError, match=r"2\^62"):
        bounds.base_delta(10**6, delta)


def test_the_lower_bound_on_samples_is_consistent_with_min_samples() -> None:
    # ln(1/delta)/delta is necessary; min_samples finds a feasible m above it.
    for delta in (1e-3, 1e-6, 1e-15):
        need = bounds.min_samples(delta / 4.0, delta)
        assert need >= math.log(1.0 / delta) / delta
        assert bounds.overall_delta(need, delta / 4.0) <= delta


def test_the_accountant_checks_delta_at_its_boundary() -> None:
    scheme, strategy = schemes.get("poisson").example(), strategies.get("identity")()
    accountant = MonteCarloAccountant.example()
    for delta in (1e-310, 1e-18):
        with pytest.raises(ConfigurationError, match=r"MonteCarloAccountant\.epsilon\.delta"):
            accountant.epsilon(scheme, strategy, 1.0, delta)
    with pytest.raises(ConfigurationError, match=r"MonteCarloAccountant\.calibrate\.delta"):
        accountant.calibrate(scheme, strategy, 1.0, 1e-18)


def test_an_uncertifiable_calibration_points_to_sound_fallbacks() -> None:
    # The fallback named must be sound: pld where it exists, else gaussian (loose but sound).
    from minsep.framework.errors import CalibrationError

    accountant = MonteCarloAccountant(
        samples=4000,
        pilot_samples=2000,
        seed=5,
        sweep=CalibrationSweep(sigma_low=0.05, sigma_high=0.1),
        run=RunSettings(chunk_size=4096),
    )
    scheme = schemes.get("poisson")(n_steps=8, rate=0.5)
    with pytest.raises(CalibrationError) as info:
        accountant.calibrate(scheme, strategies.get("identity")(), 0.5, 1e-2)
    message = str(info.value)
    assert "'pld'" in message and "'gaussian'" in message and "sound" in message
