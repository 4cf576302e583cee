"""The unamplified Gaussian accountant at the edges (issue 13 §1-§2).

Reference values come from the Balle & Wang formula evaluated with mpmath at 200 digits.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from minsep.accountants.gaussian import (
    GaussianAccountant,
    gaussian_delta,
    log_gaussian_delta,
    smallest_epsilon,
    unit_noise_multiplier,
)
from minsep.framework.errors import ConfigurationError, MinsepError
from minsep.framework.registries import schemes, strategies

mpmath.mp.dps = 200


def exact_delta(s: float, eps: float) -> mpmath.mpf:
    """``Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)`` in 200-digit arithmetic."""
    s_, e_ = mpmath.mpf(s), mpmath.mpf(eps)
    return mpmath.ncdf(1 / (2 * s_) - e_ * s_) - mpmath.exp(e_) * mpmath.ncdf(
        -1 / (2 * s_) - e_ * s_
    )


GRID = [
    (s, eps)
    for s in (1e-4, 0.1, 0.5, 1.0, 2.0, 30.0, 1e3, 1e8, 1e16, 1e30)
    for eps in (0.0, 1e-40, 1e-16, 3e-16, 1e-12, 1e-6, 0.1, 1.0, 5.0, 30.0, 1e3)
]


@pytest.mark.parametrize(("s", "eps"), GRID)
def test_gaussian_delta_is_a_tight_upper_bound(s: float, eps: float) -> None:
    exact = exact_delta(s, eps)
    got = gaussian_delta(s, eps)
    if exact < mpmath.mpf("1e-300"):  # below the doubles: the smallest positive one, never 0
        assert 0.0 < got <= 1e-300
        return
    assert mpmath.mpf(got) >= exact
    assert mpmath.mpf(got) <= exact * (1 + mpmath.mpf("2e-9"))


def test_gaussian_delta_is_not_zero_near_epsilon_zero() -> None:
    # Before: 0.0 at sigma = 1e16 (a claim of pure DP); the truth is about 4e-17.
    for eps in (0.0, 1e-30, 1e-17):
        got = gaussian_delta(1e16, eps)
        assert got == pytest.approx(float(exact_delta(1e16, eps)), rel=1e-9)
        assert got > 3.9e-17 if eps <= 1e-30 else got > 0.0
    # epsilon = 0 exactly is erf(1/(2 sqrt(2) s)).
    assert gaussian_delta(3.0, 0.0) == pytest.approx(math.erf(1 / (2 * math.sqrt(2) * 3.0)), 1e-13)


def test_gaussian_delta_only_zero_at_infinite_epsilon() -> None:
    assert gaussian_delta(1.0, math.inf) == 0.0
    assert log_gaussian_delta(1.0, math.inf) == -math.inf
    assert gaussian_delta(1.0, 1e6) > 0.0


@pytest.mark.parametrize(("eps", "delta"), [(0.0, 1e-15), (0.0, 0.5), (1.0, 1e-5), (50.0, 1e-300)])
def test_unit_noise_multiplier_verifies_its_answer(eps: float, delta: float) -> None:
    s = unit_noise_multiplier(eps, delta)
    assert exact_delta(s, eps) <= delta
    assert exact_delta(s * (1 - 1e-9), eps) > delta  # and it is tight


def test_calibration_at_epsilon_zero_meets_delta() -> None:
    # Before: sigma whose true delta was 1.05e-15.
    scheme = schemes.get("poisson")(n_steps=4, rate=0.1)
    strategy = strategies.get("identity")()
    accountant = GaussianAccountant()
    cal = accountant.calibrate(scheme, strategy, 0.0, 1e-15)
    sens = accountant.sensitivity(scheme, strategy)
    assert exact_delta(cal.sigma / sens, 0.0) <= mpmath.mpf("1e-15")
    assert exact_delta(cal.sigma / sens * (1 - 1e-9), 0.0) > mpmath.mpf("1e-15")


def test_calibration_refuses_an_astronomical_epsilon_clearly() -> None:
    # Before: a ValueError from brentq deep inside dp_accounting.
    scheme = schemes.get("poisson")(n_steps=4, rate=0.1)
    strategy = strategies.get("identity")()
    with pytest.raises(ConfigurationError, match=r"epsilon = 1e\+308 is invalid.*1000000"):
        GaussianAccountant().calibrate(scheme, strategy, 1e308, 1e-5)
    cal = GaussianAccountant().calibrate(scheme, strategy, 1e6, 1e-10)
    assert exact_delta(cal.sigma / 2.0, 1e6) <= mpmath.mpf("1e-10")


def test_epsilon_at_a_calibrated_sigma_never_exceeds_the_target() -> None:
    for eps, delta in ((2.0, 1e-3), (0.3, 1e-9), (8.0, 1e-5)):
        s = unit_noise_multiplier(eps, delta)
        assert smallest_epsilon(s, delta) <= eps
        assert exact_delta(s, smallest_epsilon(s, delta)) <= delta


def test_errors_are_minsep_errors() -> None:
    with pytest.raises(MinsepError):
        GaussianAccountant().calibrate(
            schemes.get("poisson")(n_steps=4, rate=0.1), strategies.get("identity")(), -1.0, 0.1
        )


def test_epsilon_at_extreme_sigmas_is_a_clear_answer() -> None:
    # Before: dp_accounting's root finder raised RuntimeError at sigma = 1e-300.
    scheme = schemes.get("poisson")(n_steps=4, rate=0.1)
    strategy = strategies.get("identity")()
    assert GaussianAccountant().epsilon(scheme, strategy, 1e-300, 1e-5).epsilon == math.inf
    huge = GaussianAccountant().epsilon(scheme, strategy, 1e-150, 1e-5).epsilon
    assert math.isfinite(huge) and gaussian_delta(1e-150 / 2.0, huge) <= 1e-5
    assert GaussianAccountant().epsilon(scheme, strategy, 1e16, 1e-5).epsilon == 0.0
