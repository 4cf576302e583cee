"""The exact accountants: PLD (dp_accounting) and unamplified Gaussian.

Values are pinned against dp_accounting driven by hand, against closed forms (the subsampled
Gaussian's hockey stick for one step, the analytic Gaussian mechanism), and calibration is
checked to be conservative and tight.
"""

from __future__ import annotations

import math

import dp_accounting as dpa
import pytest
from dp_accounting.pld import pld_privacy_accountant
from scipy import stats

from minsep.accountants.gaussian import GaussianAccountant, gaussian_delta
from minsep.accountants.pld import PLDAccountant, conservative_sigma
from minsep.framework.errors import CalibrationError, ConfigurationError, NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.registries import accountants
from minsep.framework.results import Result
from minsep.framework.setup import accountants_supporting
from tests.contracts.base import AccountantContract
from tests.unit.accountants.accountants_exact_toys import (
    BANDED,
    IDENTITY,
    ToyCyclic,
    ToyOpaque,
    ToyPoisson,
    ToyTruncated,
)

VDI = 1e-3


def direct_epsilon(event: dpa.DpEvent, delta: float, vdi: float = VDI) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=vdi)
    return float(accountant.compose(event).get_epsilon(delta))


def direct_delta(event: dpa.DpEvent, epsilon: float, vdi: float = VDI) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=vdi)
    return float(accountant.compose(event).get_delta(epsilon))


def poisson_event(p: float, sigma: float, count: int) -> dpa.DpEvent:
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(p, dpa.GaussianDpEvent(sigma)), count)


def truncated_event(size: int, p: float, bmax: int, sigma: float, count: int) -> dpa.DpEvent:
    return dpa.SelfComposedDpEvent(
        dpa.TruncatedSubsampledGaussianDpEvent(size, p, bmax, sigma), count
    )


# (scheme, strategy, sigma, the event written out from docs/math.md §4 / §6)
ROUTES = {
    "poisson": (ToyPoisson(steps=64, p=1 / 32), IDENTITY, 0.9, poisson_event(1 / 32, 0.9, 64)),
    "cyclic": (
        ToyCyclic(steps=64, p=1 / 32, groups=3),
        BANDED,
        1.2,
        poisson_event(3 / 32, 1.2, 22),
    ),
    "truncated_poisson": (
        ToyTruncated(steps=40, p=1 / 20, dataset_size=400, max_batch_size=24),
        IDENTITY,
        1.0,
        truncated_event(400, 1 / 20, 24, 1.0, 40),
    ),
    "truncated_cyclic": (
        ToyTruncated(steps=40, p=1 / 20, dataset_size=400, max_batch_size=24, groups=4),
        BANDED,
        1.5,
        truncated_event(100, 4 / 20, 24, 1.5, 10),
    ),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_pld_matches_dp_accounting(route: str) -> None:
    scheme, strategy, sigma, event = ROUTES[route]
    accountant = PLDAccountant(value_discretization_interval=VDI)
    delta = 1e-4
    eps = accountant.epsilon(scheme, strategy, sigma, delta)
    expected = direct_epsilon(event, delta)
    assert eps.epsilon == pytest.approx(expected, rel=1e-12)
    assert eps.certified_epsilon == eps.epsilon
    assert (eps.method, eps.failure_probability, eps.accountant) == ("exact", 0.0, "pld")
    assert eps.epsilon > 0.05  # a meaningful, non-degenerate value
    dlt = accountant.delta(scheme, strategy, sigma, eps.epsilon / 2)
    assert dlt.delta == pytest.approx(direct_delta(event, eps.epsilon / 2), rel=1e-12)
    assert dlt.delta > delta
    assert dlt.certified_delta == dlt.delta


def test_truncation_costs_privacy() -> None:
    plain = ToyPoisson(steps=40, p=1 / 20)
    tight = ToyTruncated(steps=40, p=1 / 20, dataset_size=400, max_batch_size=22)
    accountant = PLDAccountant()
    loose = accountant.epsilon(plain, IDENTITY, 1.0, 1e-5).epsilon
    assert accountant.epsilon(tight, IDENTITY, 1.0, 1e-5).epsilon > loose + 1e-3


def _subsampled_gaussian_delta(p: float, sigma: float, eps: float) -> float:
    """Exact hockey stick of one Poisson-subsampled Gaussian step, max of both directions.

    P = (1-p) N(0, s^2) + p N(1, s^2), Q = N(0, s^2); P/Q is increasing in y, so each
    direction's hockey stick integrates over a half line with a closed-form end.
    """
    norm = stats.norm
    # remove: integral of (P - e^eps Q)_+ over y > y*.
    y = sigma**2 * math.log((math.exp(eps) - (1 - p)) / p) + 0.5
    remove = (1 - p) * norm.sf(y / sigma) + p * norm.sf((y - 1) / sigma)
    remove -= math.exp(eps) * norm.sf(y / sigma)
    # add: integral of (Q - e^eps P)_+ over y < y' (empty when e^-eps <= 1 - p).
    add = 0.0
    if math.exp(-eps) > 1 - p:
        y = sigma**2 * math.log((math.exp(-eps) - (1 - p)) / p) + 0.5
        add = norm.cdf(y / sigma) - math.exp(eps) * (
            (1 - p) * norm.cdf(y / sigma) + p * norm.cdf((y - 1) / sigma)
        )
    return max(remove, add, 0.0)


@pytest.mark.parametrize(("p", "sigma", "eps"), [(0.1, 0.8, 0.5), (0.5, 1.5, 0.2), (1.0, 1.0, 1.0)])
def test_pld_delta_is_a_tight_upper_bound_for_one_step(p: float, sigma: float, eps: float) -> None:
    scheme = ToyPoisson(steps=1, p=p)
    exact = _subsampled_gaussian_delta(p, sigma, eps)
    got = PLDAccountant(value_discretization_interval=1e-4).delta(scheme, IDENTITY, sigma, eps)
    assert exact > 1e-3
    assert exact <= got.delta <= exact * 1.01


def test_pld_full_batch_is_the_composed_gaussian() -> None:
    # p = 1: n Gaussian steps = one Gaussian with multiplier sigma / sqrt(n) (Balle-Wang).
    scheme, sigma, delta = ToyPoisson(steps=16, p=1.0), 6.0, 1e-5
    got = PLDAccountant().epsilon(scheme, IDENTITY, sigma, delta).epsilon
    exact = dpa.get_epsilon_gaussian(sigma / 4.0, delta)
    assert exact <= got <= exact + 0.01


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_pld_calibration_is_conservative_and_tight(route: str) -> None:
    scheme, strategy, _, _ = ROUTES[route]
    accountant = PLDAccountant(sigma_rtol=1e-3)
    target, delta = 1.5, 1e-5
    cal = accountant.calibrate(scheme, strategy, target, delta)
    assert (cal.method, cal.certified, cal.epsilon, cal.delta) == ("exact", True, target, delta)
    assert accountant.epsilon(scheme, strategy, cal.sigma, delta).epsilon <= target
    below = cal.sigma / (1 + 2 * accountant.sigma_rtol)
    assert accountant.epsilon(scheme, strategy, below, delta).epsilon > target
    assert cal.sigma in cal.candidates
    assert list(cal.candidates) == sorted(cal.candidates, reverse=True)


def test_pld_calibration_matches_dp_accounting_calibration() -> None:
    scheme, strategy, _, _ = ROUTES["poisson"]
    target, delta = 2.0, 1e-5
    # Same grid as the reference (the accountant's default grid is finer since issue 13).
    accountant = PLDAccountant(sigma_rtol=1e-4, value_discretization_interval=VDI)
    sigma = accountant.calibrate(scheme, strategy, target, delta).sigma
    reference = dpa.calibrate_dp_mechanism(
        lambda: pld_privacy_accountant.PLDAccountant(value_discretization_interval=VDI),
        lambda s: poisson_event(1 / 32, s, 64),
        target,
        delta,
        bracket_interval=dpa.ExplicitBracketInterval(0.3, 5.0),
        tol=1e-6,
    )
    # dp_accounting's answer is within its tol (1e-6) of the smallest passing sigma.
    assert reference - 1e-6 <= sigma <= reference * (1 + 1e-4) + 1e-6
    assert direct_epsilon(poisson_event(1 / 32, sigma, 64), delta) <= target


def test_pld_calibration_refuses_an_unreachable_target() -> None:
    with pytest.raises(CalibrationError, match="no noise multiplier"):
        conservative_sigma(lambda s: 1.0, 0.5, rtol=1e-3)


def test_conservative_sigma_brackets_both_ways() -> None:
    for guess in (0.01, 1.0, 300.0):
        sigma, achieved, examined = conservative_sigma(
            lambda s: 1.0 / s, 0.5, rtol=1e-4, guess=guess
        )
        assert 2.0 <= sigma <= 2.0 * (1 + 1e-4)
        assert achieved == 1.0 / sigma <= 0.5
        assert sigma in examined


def test_conservative_sigma_never_returns_an_unchecked_point() -> None:
    # A non-monotone (noisy) epsilon: the answer must still be a point that met the target.
    def wobbly(s: float) -> float:
        return 1.0 / s + (0.3 if 2.0 < s < 2.2 else 0.0)

    sigma, achieved, _ = conservative_sigma(wobbly, 0.5, rtol=1e-4)
    assert wobbly(sigma) == achieved <= 0.5


def test_conservative_sigma_floor() -> None:
    sigma, achieved, _ = conservative_sigma(lambda s: 0.0, 1.0, rtol=1e-3, sigma_min=0.1)
    assert (sigma, achieved) == (0.1, 0.0)


# --- support is declared by the hooks ---------------------------------------------------------


def test_pld_why_not_is_the_scheme_hook_message() -> None:
    accountant = PLDAccountant()
    assert accountant.why_not(ToyPoisson(steps=4, p=0.1), IDENTITY) is None
    assert "identity strategy" in str(accountant.why_not(ToyPoisson(steps=4, p=0.1), BANDED))
    assert "no exact PLD event" in str(accountant.why_not(ToyOpaque(steps=4, p=0.1), IDENTITY))


@pytest.mark.parametrize("method", ["epsilon", "delta", "calibrate"])
def test_unsupported_pair_names_the_accountants_that_can(method: str) -> None:
    scheme = ToyOpaque(steps=8, p=0.1)
    with pytest.raises(NotAccountableError) as info:
        getattr(PLDAccountant(), method)(scheme, IDENTITY, 1.0, 1e-5)
    message = str(info.value)
    assert "'pld' cannot account scheme 'ToyOpaque'" in message
    assert "no exact PLD event" in message
    able = message.split("Accountants that can: ")[1].split(", ")
    assert "gaussian" in able and "pld" not in able


def test_supporting_lists_pld_only_where_the_hook_answers() -> None:
    assert "pld" in accountants_supporting(ToyPoisson(steps=4, p=0.1), IDENTITY)
    assert "pld" not in accountants_supporting(ToyPoisson(steps=4, p=0.1), BANDED)
    assert "gaussian" in accountants_supporting(ToyOpaque(steps=4, p=0.1), BANDED)


def test_registered_by_name() -> None:
    assert accountants.get("pld") is PLDAccountant
    assert accountants.get("gaussian") is GaussianAccountant


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda a, s, c: a.epsilon(s, c, -1.0, 1e-5), "sigma"),
        (lambda a, s, c: a.epsilon(s, c, 1.0, 0.0), "delta"),
        (lambda a, s, c: a.epsilon(s, c, 1.0, 1.0), "delta"),
        (lambda a, s, c: a.delta(s, c, 1.0, -0.1), "epsilon"),
        (lambda a, s, c: a.delta(s, c, math.nan, 1.0), "sigma"),
        (lambda a, s, c: a.calibrate(s, c, math.inf, 1e-5), "epsilon"),
        (lambda a, s, c: a.calibrate(s, c, 1.0, 2.0), "delta"),
    ],
)
@pytest.mark.parametrize("accountant", [PLDAccountant(), GaussianAccountant()])
def test_bad_queries_name_the_parameter(accountant, call, parameter) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match=parameter):
        call(accountant, ToyPoisson(steps=4, p=0.1), IDENTITY)


def test_results_round_trip() -> None:
    scheme, strategy, sigma, _ = ROUTES["cyclic"]
    for accountant in (PLDAccountant(), GaussianAccountant()):
        for result in (
            accountant.epsilon(scheme, strategy, sigma, 1e-5),
            accountant.delta(scheme, strategy, sigma, 1.0),
            accountant.calibrate(scheme, strategy, 2.0, 1e-5),
        ):
            assert Result.from_json(result.to_json()) == result
            assert result.strategy == strategy.public_parameters()
            assert result.strategy["bands"] == 3
            assert result.scheme["groups"] == 3


# --- the unamplified Gaussian accountant -------------------------------------------------------


def balle_wang_delta(noise_multiplier: float, eps: float) -> float:
    """Balle & Wang (2018) Thm. 8 at unit sensitivity, written directly."""
    s = noise_multiplier
    return stats.norm.cdf(0.5 / s - eps * s) - math.exp(eps) * stats.norm.cdf(-0.5 / s - eps * s)


# min_sep 4 over 16 steps: K = 4 participations, the toy's S = sqrt(4) = 2.
UNAMPLIFIED = ToyOpaque(steps=16, p=0.25, sep=4)


@pytest.mark.parametrize(("s", "eps"), [(0.5, 1.0), (1.0, 0.3), (2.0, 0.0), (5.0, 0.05)])
def test_gaussian_delta_formula(s: float, eps: float) -> None:
    assert gaussian_delta(s, eps) == pytest.approx(balle_wang_delta(s, eps), rel=1e-10)


@pytest.mark.parametrize(("sigma", "delta"), [(1.0, 1e-5), (3.0, 1e-3), (10.0, 1e-6)])
def test_gaussian_epsilon_is_balle_wang_with_the_sensitivity(sigma: float, delta: float) -> None:
    result = GaussianAccountant().epsilon(UNAMPLIFIED, BANDED, sigma, delta)
    s = sigma / 2.0
    assert balle_wang_delta(s, result.epsilon) <= delta * (1 + 1e-9)
    assert balle_wang_delta(s, result.epsilon - 1e-8) > delta
    assert gaussian_delta(s, result.epsilon) <= delta
    assert result.certified_epsilon == result.epsilon
    assert "sensitivity 2.0" in result.notes[0]


@pytest.mark.parametrize(("sigma", "delta"), [(1.0, 1e-5), (3.0, 1e-3)])
def test_gaussian_agrees_with_dp_accounting_pld(sigma: float, delta: float) -> None:
    # The PLD of the Gaussian event is a pessimistic upper bound of the analytic value.
    got = GaussianAccountant().epsilon(UNAMPLIFIED, BANDED, sigma, delta).epsilon
    pld = direct_epsilon(dpa.GaussianDpEvent(sigma / 2.0), delta, vdi=1e-4)
    assert got <= pld <= got + 2e-3


def test_gaussian_delta_query() -> None:
    result = GaussianAccountant().delta(UNAMPLIFIED, BANDED, 3.0, 0.5)
    assert result.delta == pytest.approx(balle_wang_delta(1.5, 0.5), rel=1e-10)


@pytest.mark.parametrize(("eps", "delta"), [(2.0, 1e-3), (0.5, 1e-6), (8.0, 1e-5)])
def test_gaussian_calibration_is_conservative_and_tight(eps: float, delta: float) -> None:
    cal = GaussianAccountant().calibrate(UNAMPLIFIED, BANDED, eps, delta)
    assert gaussian_delta(cal.sigma / 2.0, eps) <= delta
    assert balle_wang_delta(cal.sigma / 2.0 * (1 - 1e-7), eps) > delta
    assert GaussianAccountant().epsilon(UNAMPLIFIED, BANDED, cal.sigma, delta).epsilon <= eps + 1e-9


def test_gaussian_supports_everything() -> None:
    for scheme, strategy, _, _ in ROUTES.values():
        assert GaussianAccountant().supports(scheme, strategy)


def test_amplification_beats_unamplified() -> None:
    scheme, sigma, delta = ToyPoisson(steps=64, p=1 / 32), 1.0, 1e-5
    amplified = PLDAccountant().epsilon(scheme, IDENTITY, sigma, delta).epsilon
    unamplified = GaussianAccountant().epsilon(scheme, IDENTITY, sigma, delta).epsilon
    assert amplified < unamplified / 3


# --- the shared accountant contract, on the toy pairs ------------------------------------------


@pytest.fixture(params=["pld", "gaussian"])
def accountant(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return accountants.get(request.param).example()


@pytest.fixture
def pairs() -> list[tuple[SamplingScheme, Strategy]]:
    return [
        (ToyOpaque(steps=8, p=0.1), IDENTITY),
        (ToyPoisson(steps=8, p=0.1), IDENTITY),
        (ToyCyclic(steps=8, p=0.1, groups=3), BANDED),
    ]


class TestExactAccountantContract(AccountantContract):
    pass
