"""The betting test and the grid walk of docs/math.md §7.2, on laws known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import EngineConfig, certify_epsilon
from minsep.framework.montecarlo.accumulators import BinSpec, LossHistogram
from minsep.framework.montecarlo.betting import (
    BettingPlan,
    choose_bets,
    choose_failure,
    log_wealth,
    plan_grid,
    walk,
)
from tests.unit.montecarlo_toys import GaussianToy, SubsampledGaussianToy

CONFIG = EngineConfig(chunk_size=20_000)
SPEC = BinSpec()


def histogram(losses: np.ndarray, spec: BinSpec = SPEC) -> LossHistogram:
    """The engine's conservative histogram of ``losses`` (each at its bin's upper edge)."""
    hist = LossHistogram(spec)
    index = np.clip(np.ceil(losses * (1 << spec.bin_bits)), 0, spec.last + 1).astype(np.int64)
    hist.add_counts(np.bincount(index))
    return hist


def test_wealth_oracle() -> None:
    """X = (0, 0, 1/2), delta_u = 1/4, lam = 1: W = 1.25 * 1.25 * 0.75 (docs/math.md §7.2)."""
    eps = 1.0 - math.log(2.0)  # a loss of exactly 1 (a bin edge) gives X = 1/2
    hist = histogram(np.array([-1.0, 0.0, 1.0]))
    value = log_wealth(hist, np.array([eps]), np.array([1.0]), 1 / 4)
    assert math.exp(float(value[0])) == pytest.approx(1.171875, rel=1e-12)


def test_bets_outside_the_range_are_refused() -> None:
    hist = histogram(np.array([0.5]))
    with pytest.raises(ConfigurationError, match="bets"):
        log_wealth(hist, np.array([0.0]), np.array([2.0]), 0.5)
    with pytest.raises(ConfigurationError, match="bets"):
        log_wealth(hist, np.array([0.0]), np.array([-0.1]), 0.5)


def test_rounded_losses_never_raise_the_wealth() -> None:
    rng = np.random.default_rng(7)
    losses = rng.normal(0.5, 1.0, size=20_000)
    epsilons = np.linspace(0.0, 3.0, 31)
    bets = np.full(epsilons.size, 0.6)
    delta_u = 0.05
    read = log_wealth(histogram(losses), epsilons, bets, delta_u)
    x = -np.expm1(np.minimum(epsilons[:, None] - losses[None, :], 0.0))
    exact = np.log1p(bets[:, None] * (delta_u - x)).sum(axis=1)
    assert np.all(read <= exact + 1e-9)
    assert np.any(read < exact - 1e-3)  # the rounding is felt, so the check can fail


def gaussian_x(
    rng: np.random.Generator, mu: float, eps: float, shape: tuple[int, int]
) -> np.ndarray:
    """X = (1 - e^{eps - L})_+ with L ~ N(mu^2/2, mu^2): the Gaussian mechanism's remove
    direction, whose mean is ``GaussianToy(mu).exact_delta(eps, 1)``."""
    loss = mu * mu / 2 + mu * rng.standard_normal(shape)
    return -np.expm1(np.minimum(eps - loss, 0.0))


def test_failure_frequency_at_the_boundary_is_at_most_beta() -> None:
    """E[X] = delta_u exactly (the worst case for the test): over 4000 trials the test rejects
    E[X] >= delta_u at most a fraction beta of the time; well below it, it mostly rejects."""
    mu, eps, m, beta, trials = 1.0, 1.0, 4_000, 0.1, 4_000
    truth = GaussianToy(1.0).exact_delta(eps, 1.0)
    rng = np.random.default_rng(2026)
    lam = math.sqrt(2.0 * math.log(1.0 / beta) / (m * 0.3 * truth))
    wrong = 0
    for _ in range(trials // 500):
        x = gaussian_x(rng, mu, eps, (500, m))
        wealth = np.log1p(lam * (truth - x)).sum(axis=1)
        wrong += int(np.sum(wealth >= math.log(1.0 / beta)))
    assert wrong / trials <= beta
    # a claim 15 % above the truth is accepted most of the time (the test has power)
    x = gaussian_x(rng, mu, eps, (500, m))
    accepted = np.log1p(lam * (1.15 * truth - x)).sum(axis=1) >= math.log(1.0 / beta)
    assert accepted.mean() > 0.5


def plan_for(delta_u: float, beta: float, grid: np.ndarray, bet: float) -> BettingPlan:
    bets = np.full(grid.size, bet)
    return BettingPlan(delta_u=delta_u, failure=beta, grid=grid, bets=(bets, bets))


def test_walk_stops_at_the_first_failure() -> None:
    """A point that fails (bet 0: W = 1 < 1/beta) stops the walk even if smaller ones pass."""
    rng = np.random.default_rng(3)
    hist = histogram(rng.normal(0.5, 1.0, size=50_000))
    grid = plan_grid(4.0, 6.0, SPEC.width)
    plan = plan_for(0.05, 1e-3, grid, 0.5)
    released, tested = walk([hist, hist], plan)
    assert released is not None and 0 < released < grid.size
    assert tested[0][-1] < math.log(1.0 / plan.failure) <= tested[0][-2]
    blocked = int(np.searchsorted(grid, grid[released] + 0.5))
    bets = plan.bets[0].copy()
    bets[blocked] = 0.0
    stopped, _ = walk([hist, hist], BettingPlan(0.05, 1e-3, grid, (bets, bets)))
    assert stopped == blocked + 1
    # a top that fails releases nothing; a grid that passes everywhere releases 0
    assert walk([hist, hist], plan_for(0.05, 1e-3, np.array([0.0]), 0.5))[0] is None
    assert walk([histogram(np.zeros(5_000))] * 2, plan_for(0.05, 1e-3, grid, 0.5))[0] == 0


def test_walk_releases_a_bad_point_at_most_beta_of_the_time() -> None:
    """Gaussian mechanism, delta_u = delta(eps*) exactly: the released point is below eps* (a
    bad point) in at most a fraction beta of 300 trials, on a grid of about 200 points whose
    tests near eps* are nearly as likely to pass (one event covers them all)."""
    toy, m, beta, trials = GaussianToy(1.0), 5_000, 0.05, 300
    spec = BinSpec(bin_bits=6)
    eps_star = 1.0
    delta_u = toy.exact_delta(eps_star, 1.0)
    grid = plan_grid(3.0, 8.0, spec.width)
    rng = np.random.default_rng(11)
    pilot = histogram(0.5 + rng.standard_normal(20_000), spec)
    bets = choose_bets(pilot, grid, delta_u, beta, m)
    plan = BettingPlan(delta_u, beta, grid, (bets,))
    bad = 0
    for _ in range(trials):
        released, _ = walk([histogram(0.5 + rng.standard_normal(m), spec)], plan)
        bad += released is not None and grid[released] < eps_star
    assert bad <= beta * trials


def test_choose_failure_folds_into_delta() -> None:
    for delta, m, v in ((1e-3, 3_000_000, 2.6e-4), (1e-6, 10**8, 3e-7), (0.3, 100, 0.2)):
        beta, delta_u = choose_failure(delta, m, v)
        assert 0 < beta < delta and 0 < delta_u < delta
        assert delta_u + beta * (1 - delta_u) <= delta
    with pytest.raises(ConfigurationError, match="delta"):
        choose_failure(0.0, 10, 0.1)


def test_plan_grid_is_fine_then_doubling() -> None:
    grid = plan_grid(1.0, 1.5, SPEC.width)
    assert grid[0] == 0.0 and grid[1] == SPEC.width
    assert grid[1024] == 1.0 and grid[-1] >= 1.5
    assert np.all(np.diff(grid[1024:]) == SPEC.width * 2.0 ** np.arange(grid.size - 1025))
    coarse = plan_grid(100.0, 100.0, SPEC.width)
    assert coarse.size <= 4097 and coarse[-1] >= 100.0


@pytest.mark.parametrize("seed", range(4))
def test_betting_certificate_is_sound_and_tighter(seed: int) -> None:
    model, sigma, delta = SubsampledGaussianToy(rate=0.3), 0.7, 1e-3
    truth = model.exact_epsilon(delta, sigma)
    kwargs = {"samples": 60_000, "pilot_samples": 20_000, "seed": seed, "config": CONFIG}
    betting = certify_epsilon(model, sigma, delta, **kwargs)
    fact42 = certify_epsilon(model, sigma, delta, bound="fact42", **kwargs)
    assert betting.bound == "betting" and fact42.bound == "fact42"
    assert betting.verified and betting.certified >= truth
    assert betting.certified < fact42.certified
    assert betting.estimate == fact42.estimate  # the same draws
    folded = betting.base_delta + betting.failure_probability * (1 - betting.base_delta)
    assert folded <= delta
    assert "betting" in betting.notes()[0]


def test_unknown_bound_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="bound"):
        certify_epsilon(
            GaussianToy(), 1.0, 1e-2, samples=10**4, pilot_samples=1000, seed=0, bound="dkw"
        )
    with pytest.raises(ConfigurationError, match="bound"):
        MonteCarloAccountant(bound="dkw")


def test_accountant_records_the_bound() -> None:
    from minsep.framework.registries import schemes, strategies

    scheme = schemes.get("b_min_sep").from_rate(32, 1 / 8, min_sep=2)
    strategy = strategies.get("banded_toeplitz").for_steps(32, bands=2)
    common = {"samples": 20_000, "pilot_samples": 5_000, "seed": 4, "run": {"progress": False}}
    default = MonteCarloAccountant(**common).epsilon(scheme, strategy, 1.0, 1e-2)
    old = MonteCarloAccountant(**common, bound="fact42").epsilon(scheme, strategy, 1.0, 1e-2)
    assert default.bound == "betting" and old.bound == "fact42"
    assert default.certified_epsilon <= old.certified_epsilon
    assert "betting" in default.notes[0]
