"""The ``rdp`` accountant: agreement with dp_accounting, soundness, support and bad input."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from minsep.accountants import multiset_moments, rdp_moments
from minsep.accountants.pld import PLDAccountant
from minsep.accountants.rdp import RdpAccountant
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.participation import ParticipationChain
from minsep.framework.registries import accountants, schemes
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.poisson import Poisson
from minsep.schemes.truncated import Truncated
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems import oracles

POISSON_CASES = [(0.01, 1.0, 100), (0.3, 2.0, 7), (1.2e-4, 0.3669, 7200), (0.05, 0.8, 400)]


def test_registered() -> None:
    assert "rdp" in accountants.names()
    assert isinstance(accountants.get("rdp")(), RdpAccountant)


@pytest.mark.parametrize(("rate", "sigma", "n"), POISSON_CASES)
def test_poisson_renyi_matches_dp_accounting(rate: float, sigma: float, n: int) -> None:
    orders = tuple(range(2, 40))
    ours = RdpAccountant(orders=orders).renyi(Poisson(n_steps=n, rate=rate), Identity(), sigma)
    reference = n * rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
        rate, sigma, orders
    )
    np.testing.assert_allclose(ours.rdp, reference, rtol=1e-9)
    assert ours.add_covered


@pytest.mark.parametrize(("rate", "sigma", "n"), POISSON_CASES[:2])
def test_general_forward_pass_matches_dp_accounting_at_b_one(
    rate: float, sigma: float, n: int
) -> None:
    chain = ParticipationChain(n_steps=n, min_sep=1, probability=rate)
    products = rdp_moments.ColumnProducts(np.ones(1), n)
    for order in (2, 3, 5):
        ours = rdp_moments._log_moment_transfer(chain, products, sigma, order) / (order - 1)
        reference = n * rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(
            rate, sigma, [order]
        )
        assert ours == pytest.approx(float(reference[0]), rel=1e-9)


@pytest.mark.parametrize("delta", [1e-5, 1e-8])
def test_poisson_epsilon_matches_dp_accounting_and_bounds_pld(delta: float) -> None:
    scheme, sigma = Poisson(n_steps=300, rate=0.02), 1.1
    orders = tuple(range(2, 65))
    ours = RdpAccountant(orders=orders).epsilon(scheme, Identity(), sigma, delta)
    reference = rdp_privacy_accountant.RdpAccountant(orders=orders)
    reference.compose(scheme.dp_event(Identity(), sigma))
    assert ours.epsilon == pytest.approx(reference.get_epsilon(delta), rel=1e-9)
    exact = PLDAccountant(value_discretization_interval=1e-4).epsilon(
        scheme, Identity(), sigma, delta
    )
    assert ours.certified_epsilon >= exact.epsilon
    assert ours.failure_probability == 0.0


def test_poisson_event_is_what_dp_accounting_composes() -> None:
    event = Poisson(n_steps=3, rate=0.1).dp_event(Identity(), 1.0)
    assert isinstance(event, dp_event.SelfComposedDpEvent)


# --- soundness of both directions for b-min-sep, against quadrature -----------------------------


def exact_deltas(
    c: np.ndarray, n: int, p: float, b: int, warm: bool, sigma: float, epsilon: float
) -> tuple[float, float]:
    """``(E_Q[(u - e^eps)_+], E_Q[(1 - e^eps u)_+])`` by Gauss-Hermite quadrature (n <= 3)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    ys = sigma * nodes[grid]
    w = np.prod(weights[grid], axis=1)
    law = oracles.b_min_sep_law(n, p, b, warm)
    C = oracles.strategy_matrix(c, n)
    u = np.zeros(len(ys))
    for x, prob in law.items():
        mean = C @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / sigma**2)
    remove = float(w @ np.maximum(u - math.exp(epsilon), 0.0))
    add = float(w @ np.maximum(1.0 - math.exp(epsilon) * u, 0.0))
    return remove, add


@pytest.mark.parametrize("warm", [False, True])
def test_b_min_sep_delta_bounds_both_directions(warm: bool) -> None:
    c = (1.0, 0.5)
    strategy = BandedToeplitz(coefficients=tuple(v / math.hypot(*c) for v in c))
    scheme = BMinSep(n_steps=3, rate=0.3, min_sep=2, warm_start=warm)
    accountant = RdpAccountant(max_order=8)
    for sigma, epsilon in ((0.7, 0.5), (0.7, 2.0), (1.5, 0.2), (1.5, 1.0)):
        remove, add = exact_deltas(
            strategy.coefficients, 3, scheme.probability, 2, warm, sigma, epsilon
        )
        bound = accountant.delta(scheme, strategy, sigma, epsilon)
        assert bound.delta >= max(remove, add) * (1 + 1e-6)
        assert not accountant.renyi(scheme, strategy, sigma).add_covered


def test_add_direction_is_zero_beyond_the_no_participation_bound() -> None:
    scheme = BMinSep(n_steps=6, rate=0.1, min_sep=2)
    strategy = BandedToeplitz(coefficients=(1.0,))
    bound = RdpAccountant().renyi(scheme, strategy, 1.0)
    threshold = -bound.log_no_participation
    assert bound.add_delta(threshold + 1e-9) == 0.0
    assert bound.add_delta(threshold / 2) > 0.0
    assert bound.add_epsilon(1e-9) <= math.log1p(-1e-9) + threshold
    assert bound.add is not None  # the Chernoff bound of docs/math.md §10 is in play
    assert bound.add_epsilon(1e-9) == pytest.approx(
        min(bound.add.epsilon(1e-9), math.log1p(-1e-9) + threshold)
    )


def test_calibration_is_conservative() -> None:
    scheme = BMinSep(n_steps=40, rate=0.05, min_sep=4)
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    accountant = RdpAccountant(max_order=4, sigma_rtol=1e-3)
    result = accountant.calibrate(scheme, strategy, 4.0, 1e-5)
    assert accountant.epsilon(scheme, strategy, result.sigma, 1e-5).epsilon <= 4.0
    below = result.sigma / (1 + 2e-3)
    assert accountant.epsilon(scheme, strategy, below, 1e-5).epsilon > 4.0


def test_calibration_below_the_conversion_floor_is_the_gaussian_cap() -> None:
    """Issue 30, friction 5: no sigma = 34,638 from the total-variation jump; issue 26: the rdp
    epsilon is capped by the unamplified Gaussian's, so below the conversion floor calibration
    returns the Gaussian's sigma (as epsilon() at it says), with the reason in a note."""
    from minsep.accountants.gaussian import GaussianAccountant

    scheme = BMinSep(n_steps=40, rate=0.05, min_sep=4)
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    accountant = RdpAccountant(max_order=4)
    result = accountant.calibrate(scheme, strategy, 2.0, 1e-5)
    gaussian = GaussianAccountant().calibrate(scheme, strategy, 2.0, 1e-5)
    assert result.sigma == gaussian.sigma
    assert accountant.epsilon(scheme, strategy, result.sigma, 1e-5).epsilon <= 2.0
    assert "3.08786" in result.notes[0] and "Gaussian" in result.notes[0]


def test_epsilon_decreases_with_sigma_and_never_exceeds_the_gaussian() -> None:
    """Issue 26: b-min-sep n = 64, rate 0.01, b = 4, 4 bands, delta = 1e-5 stayed at 1.44."""
    from minsep.accountants.gaussian import GaussianAccountant

    scheme = BMinSep.from_rate(64, 0.01, min_sep=4)
    strategy = BandedToeplitz.for_steps(64, bands=4)
    values = []
    for sigma in (15.0, 150.0, 1500.0, 15000.0):
        ours = RdpAccountant().epsilon(scheme, strategy, sigma, 1e-5).epsilon
        gaussian = GaussianAccountant().epsilon(scheme, strategy, sigma, 1e-5).epsilon
        assert ours <= gaussian
        values.append(ours)
    assert all(a > b for a, b in itertools.pairwise(values))
    assert values[-1] < 1e-3


def test_more_noise_less_epsilon_and_warm_start_orders() -> None:
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    accountant = RdpAccountant(max_order=8)
    for warm in (False, True):
        scheme = BMinSep(n_steps=50, rate=0.05, min_sep=3, warm_start=warm)
        values = [accountant.epsilon(scheme, strategy, s, 1e-6).epsilon for s in (0.8, 1.2, 2)]
        assert values[0] > values[1] > values[2] > 0


def test_small_sigma_falls_back_to_the_convexity_bound() -> None:
    scheme = BMinSep(n_steps=20, rate=0.1, min_sep=2)
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    bound = RdpAccountant(orders=(2, 3)).renyi(scheme, strategy, 0.03)
    assert bound.exact == (False, False)
    sensitivity = strategy.sensitivity(20, 2, scheme.max_participations)
    assert bound.rdp[0] == pytest.approx(2 * sensitivity**2 / (2 * 0.03**2))
    assert all(math.isfinite(v) for v in bound.rdp)


# --- support ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cyclic_poisson", "balls_in_bins", "multi_attribution"])
def test_declines_schemes_without_a_chain(name: str) -> None:
    scheme = schemes.get(name).example()
    reason = RdpAccountant().why_not(scheme, Identity())
    assert reason is not None and "participation chain" in reason
    with pytest.raises(NotAccountableError, match="Accountants that can"):
        RdpAccountant().epsilon(scheme, Identity(), 1.0, 1e-5)


def test_truncated_b_min_sep_only_through_the_reduction() -> None:
    """docs/math.md §6.2: frequent truncation is refused at the question with the reason; rare
    truncation answers the untruncated pair's bound at delta - B (raised where not covered)."""
    frequent = schemes.get("truncated").example()  # mean batch 20 against B_max = 15
    assert RdpAccountant().why_not(frequent, Identity()) is None  # judged by its base
    with pytest.raises(ConfigurationError, match="not rare enough"):
        RdpAccountant().epsilon(frequent, Identity(), 1.0, 1e-5)
    base = BMinSep(n_steps=12, rate=0.1, min_sep=3)
    rare = Truncated(base=base, max_batch_size=60, dataset_size=200)
    overheads = rare.reduction(Identity()).overheads
    budget = overheads.epsilon_budget(1e-5, 0.05)
    got = RdpAccountant().epsilon(rare, Identity(), 1.0, 1e-5)
    untruncated = RdpAccountant().epsilon(base, Identity(), 1.0, 1e-5 - budget).epsilon
    expected = untruncated if overheads.covers(untruncated, budget) else overheads.epsilon_floor
    assert got.certified_epsilon == max(untruncated, expected)
    assert got.scheme == rare.public_parameters()
    assert got.certified_epsilon >= RdpAccountant().epsilon(base, Identity(), 1.0, 1e-5).epsilon


def test_declines_min_sep_below_bands() -> None:
    reason = RdpAccountant().why_not(
        BMinSep(n_steps=10, rate=0.1, min_sep=2), BandedToeplitz(coefficients=(0.8, 0.48, 0.36))
    )
    assert reason is not None and "bands <= min_sep" in reason


def test_declines_state_spaces_above_the_budget() -> None:
    scheme = BMinSep(n_steps=10, rate=0.1, min_sep=3)  # order 2: C(4, 2) = 6 multisets
    reason = RdpAccountant(max_states=5).why_not(scheme, Identity())
    assert reason is not None and "max_states = 5" in reason and "= 6 states" in reason
    assert RdpAccountant(max_states=6).why_not(scheme, Identity()) is None


def test_automatic_orders_respect_both_budgets() -> None:
    chain = ParticipationChain(n_steps=7200, min_sep=256, probability=1e-4)
    assert RdpAccountant().orders_for(chain) == (2,)
    assert RdpAccountant(max_order=8).orders_for(
        ParticipationChain(n_steps=10, min_sep=1, probability=0.1)
    ) == tuple(range(2, 9))


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [2.5, 1, 0, math.nan, "3", True])
def test_non_integer_or_small_order_is_refused(order: object) -> None:
    chain = ParticipationChain(n_steps=4, min_sep=2, probability=0.3)
    with pytest.raises(ConfigurationError, match=r"order = .* must be an integer in \[2, inf\]"):
        rdp_moments.log_moment(chain, np.ones(1), 1.0, order)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="orders"):
        RdpAccountant(orders=(2, order))  # type: ignore[arg-type]


def test_min_sep_below_bands_is_refused() -> None:
    chain = ParticipationChain(n_steps=4, min_sep=2, probability=0.3)
    with pytest.raises(ConfigurationError, match=r"min_sep = 2 .* must be >= bands = 3"):
        rdp_moments.log_moment(chain, np.ones(3) / math.sqrt(3), 1.0, 2)


def test_order_above_the_memory_budget_is_refused() -> None:
    chain = ParticipationChain(n_steps=4, min_sep=256, probability=0.001)
    with pytest.raises(ConfigurationError, match=r"order = 3 .*16974593.* max_states = 16777216"):
        rdp_moments.log_moment(chain, np.ones(1), 1.0, 3)
    # the accountant's multiset pass: order 3 has C(258, 3) = 2829056 states, order 4
    # C(259, 4) = 183181376 (docs/rdp-escort.md §3.1)
    assert RdpAccountant(orders=(2, 3)).orders_for(chain) == (2, 3)
    with pytest.raises(ConfigurationError, match=r"order = 4 .*C\(259, 4\) = 183181376"):
        multiset_moments.log_moment(chain, np.ones(1), 1.0, 4)
    accountant = RdpAccountant(orders=(2, 4))
    scheme = BMinSep(n_steps=4, rate=0.001, min_sep=256)
    with pytest.raises(
        ConfigurationError, match=r"orders = \(2, 4\).*183181376.*max_states = 16777216"
    ):
        accountant.orders_for(chain)
    assert "max_states" in str(accountant.why_not(scheme, Identity()))
    with pytest.raises(ConfigurationError, match=r"orders = \(2, 4\).*max_states = 16777216"):
        accountant.epsilon(scheme, Identity(), 1.0, 1e-5)


def test_sigma_too_small_for_float64_is_refused_by_the_kernel() -> None:
    chain = ParticipationChain(n_steps=4, min_sep=2, probability=0.3)
    with pytest.raises(ConfigurationError, match=r"sigma = 0.01 .* must be >= "):
        rdp_moments.log_moment(chain, np.ones(1), 0.01, 2)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n_steps", 0),
        ("min_sep", 0),
        ("probability", 0.0),
        ("probability", 1.5),
        ("warm_start", "yes"),
    ],
)
def test_chain_refuses_bad_parameters(field: str, value: object) -> None:
    kwargs: dict[str, object] = {"n_steps": 4, "min_sep": 2, "probability": 0.3}
    kwargs[field] = value
    with pytest.raises(ConfigurationError, match=field):
        ParticipationChain(**kwargs)  # type: ignore[arg-type]


def test_queries_refuse_bad_sigma_delta_epsilon() -> None:
    scheme, strategy = Poisson(n_steps=5, rate=0.1), Identity()
    accountant = RdpAccountant()
    with pytest.raises(ConfigurationError, match="sigma"):
        accountant.epsilon(scheme, strategy, 0.0, 1e-5)
    with pytest.raises(ConfigurationError, match="delta"):
        accountant.epsilon(scheme, strategy, 1.0, 1.0)
    with pytest.raises(ConfigurationError, match="epsilon"):
        accountant.delta(scheme, strategy, 1.0, -1.0)


@pytest.mark.parametrize("warm", [False, True])
def test_b_min_sep_epsilon_is_at_least_the_monte_carlo_estimate(warm: bool) -> None:
    """RDP is an upper bound: above the Monte Carlo point estimate (which sits near the truth)."""
    from minsep.accountants.monte_carlo import MonteCarloAccountant

    scheme = BMinSep(n_steps=30, rate=0.05, min_sep=3, warm_start=warm)
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    sigma, delta = 0.9, 1e-3
    ours = RdpAccountant(max_order=16).epsilon(scheme, strategy, sigma, delta)
    estimate = MonteCarloAccountant(samples=20_000, seed=4).epsilon(scheme, strategy, sigma, delta)
    assert ours.epsilon >= estimate.epsilon


def test_calibration_explains_the_conversion_floor() -> None:
    """With only order 2 affordable, epsilon <~ ln(1/delta) is out of the RDP conversion's
    reach: the Gaussian cap answers, and the note says why."""
    scheme = BMinSep(n_steps=20, rate=0.01, min_sep=8)
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    accountant = RdpAccountant(max_states=81)  # (8 + 1)^2: order 2 only
    result = accountant.calibrate(scheme, strategy, 10.0, 1.3e-8)
    assert re.search(r"orders 2\.\.2 .*costs epsilon >= 16\.7", result.notes[0])
    assert accountant.epsilon(scheme, strategy, result.sigma, 1.3e-8).epsilon <= 10.0
