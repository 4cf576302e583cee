"""Certified curves as dominating pairs / dp_accounting PLDs (docs/math.md §7.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.common import DifferentialPrivacyParameters

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework import setup
from minsep.framework.compose import CertifiedPLD, DominatingPair, dominating_pair
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant
from minsep.framework.registries import accountants
from minsep.framework.results import CurveResult, Result
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme, ToyStrategy

H = 1e-3  # PLD grid step (dp_accounting's default is 1e-4; coarser keeps the tests fast)
FINE = np.linspace(0.0, 8.0, 801)
#: Float tolerance of the exact pair's profile against other float computations.
TOL = 1e-12


def _deltas(pld: pld_lib.PrivacyLossDistribution, grid: np.ndarray) -> np.ndarray:
    return np.asarray(pld.get_delta_for_epsilon(grid), dtype=float)


def _pair_deltas(pair: DominatingPair, grid: np.ndarray) -> np.ndarray:
    return np.array([pair.delta(float(e)) for e in grid])


def _dpsgd(
    sigma: float = 1.0, rate: float = 1 / 16, steps: int = 64
) -> pld_lib.PrivacyLossDistribution:
    single = pld_lib.from_gaussian_mechanism(
        sigma, sampling_prob=rate, value_discretization_interval=H
    )
    return single.self_compose(steps)


def _is_distribution(pair: DominatingPair) -> None:
    assert all(m >= 0 for m in pair.masses) and 0 <= pair.infinity_mass <= 1
    assert math.fsum(pair.masses) + pair.infinity_mass == pytest.approx(1.0, abs=1e-12)
    # Q's mass where P > 0 is at most 1 (the rest of Q sits where P = 0: loss -inf).
    assert (
        math.fsum(m * math.exp(-l) for l, m in zip(pair.losses, pair.masses, strict=True))
        <= 1 + 1e-12
    )


def test_one_guarantee_is_dp_accountings_pessimistic_pld_of_it() -> None:
    pair = dominating_pair([1.0], [1e-3])
    _is_distribution(pair)
    ref = pld_lib.from_privacy_parameters(DifferentialPrivacyParameters(1.0, 1e-3), H)
    mine = pair.to_pld(H)
    np.testing.assert_allclose(_deltas(mine, FINE), _deltas(ref, FINE), rtol=1e-12, atol=1e-15)
    assert pair.losses == (-1.0, 1.0)


def test_exact_points_are_reproduced_and_the_gaussian_is_dominated_between_them() -> None:
    gaussian = pld_lib.from_gaussian_mechanism(1.0, value_discretization_interval=H)
    grid = np.linspace(0.0, 6.0, 25)
    values = _deltas(gaussian, grid)
    pair = dominating_pair(grid, values)
    _is_distribution(pair)
    # Points of a true profile are in convex position: the envelope passes through each.
    np.testing.assert_allclose(_pair_deltas(pair, grid), values, rtol=1e-12, atol=1e-15)
    assert np.all(_pair_deltas(pair, FINE) >= _deltas(gaussian, FINE) - TOL)
    assert np.all(_deltas(pair.to_pld(H), FINE) >= _pair_deltas(pair, FINE) - TOL)
    # ... and strictly above it between grid points (a chord of a strictly convex profile).
    assert pair.delta(0.125) > float(gaussian.get_delta_for_epsilon(0.125)) + 1e-4


def test_a_redundant_point_is_tightened_never_loosened() -> None:
    # (1, 0.25) is implied by (0, 0.3) and (2, 0.01) (their chord in e^eps is at 0.222 at
    # eps = 1): the envelope goes below it.
    epsilons, deltas = [0.0, 1.0, 2.0], [0.3, 0.25, 0.01]
    pair = dominating_pair(epsilons, deltas)
    _is_distribution(pair)
    at = _pair_deltas(pair, np.array(epsilons))
    assert np.all(at <= np.array(deltas) + TOL)
    chord = 0.3 - 0.29 * (math.e - 1) / (math.e**2 - 1)
    assert at[1] == pytest.approx(chord, rel=1e-12)
    # Never looser than any single guarantee of the curve, anywhere.
    for eps, delta in zip(epsilons, deltas, strict=True):
        single = dominating_pair([eps], [delta])
        assert np.all(_pair_deltas(pair, FINE) <= _pair_deltas(single, FINE) + TOL)


def test_vacuous_points_say_nothing() -> None:
    assert dominating_pair([0.5, 1.0], [1.0, 1.0]).to_pld(H).get_delta_for_epsilon(3.0) == 1.0
    with_one = dominating_pair([0.5, 1.0], [1.0, 0.1])
    assert with_one == dominating_pair([1.0], [0.1])


@pytest.mark.parametrize(
    ("epsilons", "deltas", "parameter"),
    [([1.0, 0.5], [0.1, 0.2], "epsilons"), ([1.0, 1.0], [0.1, 0.1], "epsilons"),
     ([-1.0], [0.1], "epsilons"), ([math.nan], [0.1], "epsilons"), ([], [], "epsilons"),
     ([1.0], [0.1, 0.2], "deltas"), ([1.0], [1.5], "deltas"), ([1.0], [math.nan], "deltas")],
)  # fmt: skip
def test_bad_curves_are_refused(epsilons: list[float], deltas: list[float], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        dominating_pair(epsilons, deltas)


def _poisson_curve(grid: np.ndarray) -> CurveResult:
    scheme = setup.build_scheme("poisson", 64, 1 / 16)
    strategy = setup.build_strategy(64, 1)
    accountant = setup.build_accountant("pld", {"value_discretization_interval": H})
    return accountant.delta_curve(scheme, strategy, 1.0, grid)


def test_the_exact_accountants_curve_dominates_the_exact_pld_and_composes_soundly() -> None:
    grid = np.linspace(0.0, 6.0, 13)
    curve = _poisson_curve(grid)
    assert curve.method == "exact" and curve.failure_probability == 0.0
    exact = _dpsgd()
    np.testing.assert_allclose(curve.certified_delta, _deltas(exact, grid), rtol=1e-9, atol=1e-15)
    certified = curve.certified_pld(H)
    assert certified.failure_probability == 0.0
    assert np.all(_deltas(certified.pld, FINE) >= _deltas(exact, FINE) - TOL)
    # Composition with another release (a Gaussian mechanism) is never below the exact one.
    other = pld_lib.from_gaussian_mechanism(2.0, value_discretization_interval=H)
    composed = certified.compose(other)
    truth = _deltas(exact.compose(other), FINE)
    ours = _deltas(composed.pld, FINE) + composed.failure_probability
    assert np.all(ours >= truth - TOL)
    assert float(np.max(ours - truth)) < 0.05  # and useful: a 0.5-spaced grid loses little


def test_monte_carlo_curve_becomes_a_certified_pld_that_carries_its_failure() -> None:
    toy = SubsampledGaussianToy(rate=0.3)
    mc = accountants.get("monte_carlo")(samples=40_000, seed=11, run=RunSettings(chunk_size=10_000))
    grid = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
    curve = mc.delta_curve(ToyScheme(rate=0.3), ToyStrategy(), 0.7, grid, 1e-6)
    assert curve.method == "monte_carlo" and curve.failure_probability == 1e-6
    assert curve.samples == 40_000 and curve.seed == 11
    truth = [toy.exact_delta(e, 0.7) for e in grid]
    assert all(u >= t for u, t in zip(curve.certified_delta, truth, strict=True))
    pair = dominating_pair(curve.epsilons, curve.certified_delta)
    assert np.all(_pair_deltas(pair, np.array(grid)) <= np.array(curve.certified_delta) + TOL)
    fine = np.linspace(0.0, 4.0, 81)
    exact = np.array([toy.exact_delta(float(e), 0.7) for e in fine])
    certified = curve.certified_pld(H)
    ours = np.array([certified.get_delta_for_epsilon(float(e)) for e in fine])
    assert np.all(ours >= exact)
    bare = _deltas(certified.pld, fine)
    np.testing.assert_allclose(ours, np.minimum(bare + 1e-6, 1.0))
    assert curve.guarantee(1.2) == pytest.approx(curve.certified_delta[2] + 1e-6)
    assert curve.guarantee(0.0) == pytest.approx(curve.certified_delta[0] + 1e-6)


def test_failure_probabilities_add_over_compositions() -> None:
    base = dominating_pair([1.0], [1e-3]).to_pld(H)
    a, b = CertifiedPLD(base, 1e-6), CertifiedPLD(base, 2e-6)
    both = a.compose(b).compose(
        pld_lib.from_gaussian_mechanism(3.0, value_discretization_interval=H)
    )
    assert both.failure_probability == pytest.approx(3e-6)
    assert both.get_delta_for_epsilon(5.0) >= 3e-6
    assert both.get_epsilon_for_delta(3e-6) == math.inf
    eps = both.get_epsilon_for_delta(1e-2)
    assert both.get_delta_for_epsilon(eps) <= 1e-2 + 1e-12
    with pytest.raises(ConfigurationError, match="other"):
        a.compose(dominating_pair([1.0], [1e-3]).to_pld(H / 10))
    with pytest.raises(ConfigurationError, match="failure_probability"):
        CertifiedPLD(base, 1.5)


def test_the_per_point_route_sums_its_failure_probabilities() -> None:
    class PerPoint(accountants.get("monte_carlo")):  # type: ignore[misc]
        _delta_curve = Accountant._delta_curve

    mc = PerPoint(samples=20_000, pilot_samples=5_000, seed=3, run={"chunk_size": 10_000})
    curve = mc.delta_curve(ToyScheme(rate=0.3), ToyStrategy(), 0.7, (0.5, 1.0))
    singles = [mc.delta(ToyScheme(rate=0.3), ToyStrategy(), 0.7, e) for e in (0.5, 1.0)]
    assert curve.failure_probability == pytest.approx(sum(s.failure_probability for s in singles))
    assert curve.failure_probability > 0
    assert curve.certified_delta == tuple(s.certified_delta for s in singles)


def test_curve_results_round_trip_and_are_checked() -> None:
    curve = _poisson_curve(np.array([0.5, 1.0, 2.0]))
    again = Result.from_json(curve.to_json())
    assert again == curve and isinstance(again, CurveResult)
    grid = np.linspace(0, 3, 7)
    np.testing.assert_array_equal(
        _deltas(again.certified_pld(H).pld, grid), _deltas(curve.certified_pld(H).pld, grid)
    )
    data = curve.to_dict()
    data["certified_delta"] = data["certified_delta"][:2]
    with pytest.raises(ConfigurationError, match="certified_delta"):
        Result.from_dict(data)
    for field, value in [("epsilons", [2.0, 1.0, 0.5]), ("epsilons", ["a", 1.0, 2.0]),
                         ("epsilons", 3), ("delta", [0.1, True, 0.0]),
                         ("certified_delta", [0.1, 1.5, 0.0]), ("delta", "abc")]:  # fmt: skip
        data = curve.to_dict()
        data[field] = value
        with pytest.raises(ConfigurationError, match=field):
            Result.from_dict(data)


def test_the_exact_curve_is_the_exact_delta_at_each_point() -> None:
    scheme = setup.build_scheme("cyclic_poisson", 64, 1 / 16, {"min_sep": 4})
    strategy = setup.build_strategy(64, 4)
    for name in ("pld", "rdp", "gaussian"):
        accountant = setup.build_accountant(name, {})
        if not accountant.supports(scheme, strategy):
            continue
        curve = accountant.delta_curve(scheme, strategy, 1.0, (0.5, 1.0, 2.0))
        singles = [
            accountant.delta(scheme, strategy, 1.0, e).certified_delta for e in curve.epsilons
        ]
        assert curve.certified_delta == tuple(singles) == curve.delta, name
        assert curve.failure_probability == 0.0


def test_delta_curve_checks_its_arguments() -> None:
    scheme, strategy = setup.build_scheme("poisson", 8, 0.25), setup.build_strategy(8, 1)
    gaussian = setup.build_accountant("gaussian", {})
    with pytest.raises(ConfigurationError, match="epsilons"):
        gaussian.delta_curve(scheme, strategy, 1.0, [1.0, 0.5])
    with pytest.raises(ConfigurationError, match="failure_probability"):
        gaussian.delta_curve(scheme, strategy, 1.0, [1.0], 0.0)
    with pytest.raises(ConfigurationError, match=r"delta_curve\.sigma"):
        gaussian.delta_curve(scheme, strategy, -1.0, [1.0])
    with pytest.raises(ConfigurationError, match=r"delta_curve\.scheme"):
        gaussian.delta_curve(strategy, scheme, 1.0, [1.0])


def test_epsilon_of_delta_reads_the_pair_between_grid_points() -> None:
    grid = np.linspace(0.0, 8.0, 33)
    curve = _poisson_curve(grid).with_epsilons([1e-3, 1e-5, 1e-30])
    exact = _dpsgd()
    pair = dominating_pair(curve.epsilons, curve.certified_delta)
    for delta, eps in zip(curve.target_deltas[:2], curve.certified_epsilons[:2], strict=True):
        assert eps >= float(exact.get_epsilon_for_delta(delta))  # never below the truth
        assert pair.delta(eps) <= delta  # certified where it says
        assert eps < float(exact.get_epsilon_for_delta(delta)) + 0.05  # and close to it
        below = grid[grid <= eps].max()
        assert eps > below  # between grid points, not at the next one up
    assert curve.certified_epsilons[2] == math.inf  # beyond what the grid certifies
    assert Result.from_json(curve.to_json()) == curve
    with pytest.raises(ConfigurationError, match="certified_epsilons"):
        CurveResult.from_dict({**curve.to_dict(), "certified_epsilons": [1.0]})
    with pytest.raises(ConfigurationError, match="target_deltas"):
        curve.with_epsilons([0.0])


def test_epsilon_of_delta_folds_the_failure_probability() -> None:
    curve = CurveResult(
        accountant="x", method="monte_carlo", epsilons=(0.0, 1.0, 2.0), delta=(0.3, 0.05, 1e-3),
        certified_delta=(0.3, 0.05, 1e-3), sigma=1.0, failure_probability=1e-4,
    )  # fmt: skip
    pair = dominating_pair(curve.epsilons, curve.certified_delta)
    assert curve.certified_epsilon(1e-4) == math.inf
    assert curve.certified_epsilon(0.01) == pair.epsilon(0.01 - 1e-4)
    assert pair.delta(curve.certified_epsilon(0.01)) <= 0.01 - 1e-4
    assert curve.certified_epsilon(0.5) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_loose_random_curves_still_dominate_the_truth(seed: int) -> None:
    # Upper bounds as Monte Carlo gives them: the truth plus arbitrary (non-convex) slack.
    rng = np.random.default_rng(seed)
    mu = float(rng.uniform(0.3, 3.0))
    truth = pld_lib.from_gaussian_mechanism(1.0 / mu, value_discretization_interval=H)
    grid = np.sort(rng.choice(np.linspace(0.0, 6.0, 61), size=12, replace=False))
    upper = np.minimum(_deltas(truth, grid) * (1 + rng.exponential(0.5, grid.size)), 1.0)
    pair = dominating_pair(grid, upper)
    _is_distribution(pair)
    assert np.all(_pair_deltas(pair, grid) <= upper + TOL)
    assert np.all(_pair_deltas(pair, FINE) >= _deltas(truth, FINE) - TOL)
    assert np.all(_deltas(pair.to_pld(H), FINE) >= _deltas(truth, FINE) - TOL)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [({"losses": (1.0,), "masses": (-0.1,), "infinity_mass": 0.0}, "masses"),
     ({"losses": (1.0,), "masses": (0.6,), "infinity_mass": 0.6}, "masses"),
     ({"losses": (1.0, 2.0), "masses": (0.5,), "infinity_mass": 0.0}, "masses"),
     ({"losses": (math.nan,), "masses": (0.5,), "infinity_mass": 0.0}, "losses"),
     ({"losses": (), "masses": (), "infinity_mass": 1.5}, "infinity_mass")],
)  # fmt: skip
def test_bad_pairs_are_refused(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        DominatingPair(**kwargs)  # type: ignore[arg-type]


def test_a_dp_accounting_event_composes_like_its_pld() -> None:
    """Issue 30, friction 2: ``certified_pld().compose(GaussianDpEvent(2.0))`` raised
    AttributeError ('_pmf_remove'); an event is now built into its PLD at the curve's interval
    (the same PLD as dp_accounting's own), anything else is refused by name."""
    from dp_accounting import dp_event

    certified = _poisson_curve(np.linspace(0.0, 6.0, 13)).certified_pld(H)
    by_event = certified.compose(dp_event.GaussianDpEvent(2.0))
    by_pld = certified.compose(
        pld_lib.from_gaussian_mechanism(2.0, value_discretization_interval=H)
    )
    np.testing.assert_allclose(_deltas(by_event.pld, FINE), _deltas(by_pld.pld, FINE), atol=1e-12)
    with pytest.raises(ConfigurationError, match="other"):
        certified.compose(dp_event.UnsupportedDpEvent())
    with pytest.raises(ConfigurationError, match="other"):
        certified.compose(2.0)  # type: ignore[arg-type]
