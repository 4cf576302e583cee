"""The exact accountants on the real registered schemes, against dp_accounting by hand.

Each case writes the dp_accounting event out from docs/math.md §4 / §6 and compares epsilon and
delta with what the PLD accountant finds through the scheme's own hook.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import pytest
from dp_accounting.pld import pld_privacy_accountant

from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.pld import PLDAccountant
from minsep.framework.errors import NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.registries import schemes, strategies

VDI = 1e-3
N, RATE = 48, 1 / 16


def banded(bands: int) -> Strategy:
    if bands == 1:
        return strategies.get("identity").for_steps(N)
    return strategies.get("banded_toeplitz").for_steps(N, bands=bands)


def direct(event: dpa.DpEvent) -> pld_privacy_accountant.PLDAccountant:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=VDI)
    return accountant.compose(event)


def subsampled(p: float, sigma: float, count: int) -> dpa.DpEvent:
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(sigma)), count)


def truncated(size: int, p: float, bmax: int, sigma: float, count: int) -> dpa.DpEvent:
    return dpa.SelfComposedDpEvent(
        dpa.TruncatedSubsampledGaussianDpEvent(size, p, bmax, sigma), count
    )


def scheme(name: str, **options: object) -> SamplingScheme:
    return schemes.get(name).from_rate(N, RATE, **options)


SIGMA = 0.9
CASES = {
    "poisson": (lambda: scheme("poisson"), 1, subsampled(RATE, SIGMA, N)),
    # b = 5 groups: ceil(48 / 5) = 10 compositions at q = 5 p0.
    "cyclic_poisson": (
        lambda: scheme("cyclic_poisson", min_sep=5),
        4,
        subsampled(5 * RATE, SIGMA, 10),
    ),
    "truncated_poisson": (
        lambda: scheme("truncated", base="poisson", max_batch_size=40, dataset_size=480),
        1,
        truncated(480, RATE, 40, SIGMA, N),
    ),
    # group size 480 / 4 = 120, rate 4 p0, ceil(48 / 4) = 12 compositions.
    "truncated_cyclic_poisson": (
        lambda: scheme(
            "truncated", base="cyclic_poisson", min_sep=4, max_batch_size=40, dataset_size=480
        ),
        4,
        truncated(120, 4 * RATE, 40, SIGMA, 12),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_pld_on_real_schemes_matches_dp_accounting(case: str, delta: float) -> None:
    make, bands, event = CASES[case]
    accountant = PLDAccountant(value_discretization_interval=VDI)
    result = accountant.epsilon(make(), banded(bands), SIGMA, delta)
    expected = direct(event).get_epsilon(delta)
    assert result.epsilon == pytest.approx(expected, rel=1e-12)
    assert result.epsilon > 0.1
    half = accountant.delta(make(), banded(bands), SIGMA, result.epsilon / 2).delta
    assert half == pytest.approx(direct(event).get_delta(result.epsilon / 2), rel=1e-12)


def test_truncation_that_never_binds_changes_nothing() -> None:
    plain = PLDAccountant().epsilon(scheme("poisson"), banded(1), SIGMA, 1e-5).epsilon
    loose = scheme("truncated", base="poisson", max_batch_size=480, dataset_size=480)
    assert PLDAccountant().epsilon(loose, banded(1), SIGMA, 1e-5).epsilon == pytest.approx(plain)


def test_cyclic_needs_bands_at_most_groups() -> None:
    cyclic = scheme("cyclic_poisson", min_sep=4)
    assert PLDAccountant().supports(cyclic, banded(4))
    with pytest.raises(NotAccountableError, match=r"Accountants that can: .*gaussian"):
        PLDAccountant().epsilon(cyclic, banded(8), SIGMA, 1e-5)


@pytest.mark.parametrize("name", ["b_min_sep", "balls_in_bins"])
def test_pld_refuses_schemes_without_an_event(name: str) -> None:
    options = {"min_sep": 4} if name == "b_min_sep" else {}
    sch = scheme(name, **options)
    reason = PLDAccountant().why_not(sch, banded(4))
    assert reason is not None and "no exact PLD event" in reason
    with pytest.raises(NotAccountableError) as info:
        PLDAccountant().calibrate(sch, banded(4), 2.0, 1e-5)
    able = str(info.value).split("Accountants that can: ")[1].split(", ")
    assert "pld" not in able and "gaussian" in able


@pytest.mark.parametrize(("min_sep", "bands"), [(16, 4), (8, 8), (1, 1)])
def test_gaussian_uses_the_strategy_sensitivity(min_sep: int, bands: int) -> None:
    sch = scheme("b_min_sep", min_sep=min_sep)
    strategy = banded(bands)
    participations = math.ceil(N / min_sep)
    sens = strategy.sensitivity(N, min_sep, participations)
    assert sens == pytest.approx(math.sqrt(participations), rel=1e-9)  # disjoint unit columns
    result = GaussianAccountant().epsilon(sch, strategy, 3.0, 1e-5)
    assert result.epsilon == pytest.approx(dpa.get_epsilon_gaussian(3.0 / sens, 1e-5), abs=1e-9)


def test_calibrated_real_cyclic_is_conservative() -> None:
    sch, strategy = scheme("cyclic_poisson", min_sep=4), banded(4)
    accountant = PLDAccountant()
    cal = accountant.calibrate(sch, strategy, 1.0, 1e-5)
    assert direct(subsampled(4 * RATE, cal.sigma, 12)).get_epsilon(1e-5) <= 1.0
    smaller = cal.sigma / (1 + 2 * accountant.sigma_rtol)
    assert direct(subsampled(4 * RATE, smaller, 12)).get_epsilon(1e-5) > 1.0
