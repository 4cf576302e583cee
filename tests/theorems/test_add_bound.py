"""The deterministic add-direction bound of docs/math.md §10 against exact answers.

Three layers: h(p) of the rigorous Riemann sum against adaptive quadrature (upper, and close);
Poisson (where E_Q[U^-kappa] = h(q)^n exactly) against dp_accounting's add-direction PLD at
delta in {1e-6, 1e-8, 1e-10}; and b-min-sep chains with 1-3 bands at n <= 4, where
E_Q[U^-kappa] is computed by tensor Gauss-Hermite quadrature over y of the enumerated mixture.
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest
from scipy import integrate, special

from minsep.accountants.add_bound import (
    AddDirectionBound,
    add_direction_bound,
    log_c,
    log_h_upper,
    operator_norm_upper,
)
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.poisson import Poisson
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems import oracles


def quad_h(p: float, s: float, kappa: float) -> float:
    """``h(p) - 1`` by adaptive quadrature of ``E[(1 + u)^-kappa - 1 + kappa u]``."""

    def f(t: float) -> float:
        u = p * math.expm1(t / s - 0.5 / (s * s))
        return (
            (math.expm1(-kappa * math.log1p(u)) + kappa * u)
            * math.exp(-t * t / 2)
            / math.sqrt(2 * math.pi)
        )

    star = 0.5 / s
    pieces = [(-40.0, star), (star, star + 1 / s + 40.0)]
    return sum(integrate.quad(f, a, b, limit=400, epsabs=0, epsrel=1e-11)[0] for a, b in pieces)


@pytest.mark.parametrize(
    ("p", "s", "kappa"),
    [(0.01, 1.0, 3.0), (0.004, 0.5, 8.0), (0.3, 2.0, 1.5), (1e-5, 1.0, 2.0), (0.9, 0.7, 0.4)],
)
def test_h_upper_bounds_quadrature_and_is_close(p: float, s: float, kappa: float) -> None:
    exact = quad_h(p, s, kappa)
    upper = math.expm1(log_h_upper(p, s, kappa))
    assert upper >= exact
    assert upper <= exact * (1 + 2e-2)


def test_chernoff_constant_is_the_supremum() -> None:
    for kappa in (0.1, 1.0, 3.7, 40.0):
        t = np.linspace(1e-6, 1.0, 200_001)
        assert np.max((1 - t) * t**kappa) <= math.exp(log_c(kappa)) * (1 + 1e-12)
        assert np.max((1 - t) * t**kappa) >= math.exp(log_c(kappa)) * (1 - 1e-6)


POISSON = [(1000, 0.01, 1.0), (1024, 1 / 256, 1.0), (200, 0.05, 0.8)]


@pytest.mark.parametrize(("n", "q", "sigma"), POISSON)
def test_poisson_add_epsilon_never_below_dp_accounting(n: int, q: float, sigma: float) -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld

    # pessimistic (connect-the-dots): at or above the exact epsilon, so the check is stronger
    exact = pld.from_gaussian_mechanism(
        sigma, sampling_prob=q, value_discretization_interval=1e-4
    ).self_compose(n)
    bound = add_direction_bound(Poisson(n_steps=n, rate=q), Identity(), sigma)
    assert bound is not None
    assert bound.noise == pytest.approx(sigma, rel=1e-8)
    for delta in (1e-6, 1e-8, 1e-10):
        truth = exact._pmf_add.get_epsilon_for_delta(delta)  # the add direction alone
        ours = bound.epsilon(delta)
        assert ours >= truth
        assert ours <= truth * 1.1 + 0.02  # the Chernoff conversion's slack only
        assert bound.delta(ours) <= delta * (1 + 1e-4)  # kappa optimised separately


def gauss_hermite_moment(
    law: dict[tuple[int, ...], float], C: np.ndarray, sigma: float, kappa: float, nodes: int
) -> float:
    """``E_Q[U^-kappa]`` by tensor Gauss-Hermite quadrature, U the enumerated mixture ratio."""
    t, w = special.roots_hermitenorm(nodes)
    w = w / w.sum()
    n = C.shape[0]
    grid = np.array(list(itertools.product(t, repeat=n))) * sigma  # y = sigma t
    weights = np.prod(np.array(list(itertools.product(w, repeat=n))), axis=1)
    log_u = np.full(len(grid), -np.inf)
    for x, prob in law.items():
        mean = C @ np.asarray(x, dtype=float)
        log_u = np.logaddexp(log_u, math.log(prob) + (grid @ mean - 0.5 * mean @ mean) / sigma**2)
    return float(np.sum(weights * np.exp(-kappa * log_u)))


CHAINS = [
    # (coefficients, n, rate, min_sep, warm, sigma)
    ((1.0,), 4, 0.3, 1, False, 1.0),
    ((1.0,), 4, 0.2, 2, False, 0.8),
    ((1.0,), 4, 0.25, 3, True, 1.2),
    ((1.0, 0.5), 4, 0.2, 2, False, 1.0),
    ((1.0, 0.5), 4, 0.15, 2, True, 1.5),
    ((1.0, 0.6, 0.3), 4, 0.2, 3, False, 1.2),
    ((1.0, 0.6, 0.3), 3, 0.3, 3, True, 2.0),
    ((1.0, 0.7), 3, 0.4, 1, False, 1.5),  # bands > min-sep: §10 needs no bands <= b
]


@pytest.mark.parametrize(("coefficients", "n", "rate", "b", "warm", "sigma"), CHAINS)
def test_chain_moment_bound_against_enumeration(
    coefficients: tuple[float, ...], n: int, rate: float, b: int, warm: bool, sigma: float
) -> None:
    scheme = BMinSep(n_steps=n, rate=rate, min_sep=b, warm_start=warm)
    strategy = BandedToeplitz(coefficients=coefficients)
    bound = add_direction_bound(scheme, strategy, sigma)
    assert bound is not None
    chain = scheme.participation_chain()
    law = oracles.b_min_sep_law(n, chain.probability, b, warm)
    C = oracles.strategy_matrix(np.asarray(strategy.coefficients), n)
    assert operator_norm_upper(strategy, n) >= np.linalg.norm(C, 2)
    assert operator_norm_upper(strategy, n) <= np.linalg.norm(C, 2) * (1 + 1e-3)
    for kappa in (0.5, 2.0, 5.0):
        truth = gauss_hermite_moment(law, C, sigma, kappa, 24)
        check = gauss_hermite_moment(law, C, sigma, kappa, 30)
        assert truth == pytest.approx(check, rel=1e-6)  # the quadrature has converged
        assert bound.log_moment(kappa) >= math.log(truth)


def test_one_band_poisson_moment_is_equality() -> None:
    """C = I with Bernoulli(q) steps: E_Q[U^-kappa] = h(q)^n, so the bound is tight there."""
    n, q, sigma = 3, 0.3, 1.0
    law = {x: math.prod(q if v else 1 - q for v in x) for x in itertools.product((0, 1), repeat=n)}
    bound = AddDirectionBound(
        n_steps=n, probability=q, noise=sigma, log_no_participation=n * math.log1p(-q)
    )
    for kappa in (0.5, 2.0, 5.0):
        truth = gauss_hermite_moment(law, np.eye(n), sigma, kappa, 40)
        assert bound.log_moment(kappa) >= math.log(truth)
        assert bound.log_moment(kappa) <= math.log(truth) * (1 + 1e-2)


def test_no_bound_without_a_chain_or_with_larger_contribution() -> None:
    from minsep.framework.registries import schemes

    balls = schemes.get("balls_in_bins").example()
    assert add_direction_bound(balls, Identity(), 1.0) is None


def test_add_delta_is_zero_beyond_the_empty_pattern_threshold() -> None:
    bound = add_direction_bound(
        BMinSep(n_steps=64, rate=0.01, min_sep=4), BandedToeplitz(coefficients=(1, 1, 1, 1)), 1.0
    )
    assert bound is not None
    assert bound.delta(-bound.log_no_participation * (1 + 1e-9)) == 0.0
    assert bound.epsilon(1e-5) <= -bound.log_no_participation


@pytest.mark.parametrize("seed", range(6))
def test_random_chains_unamplified_above_bound_above_exact(seed: int) -> None:
    """Random small b-min-sep configurations: unamplified Gaussian >= rdp (with §10 in play),
    and at the §10 bound's epsilon the exact add-direction delta (fixed-seed Monte Carlo over
    the enumerated mixture, 200,000 draws, 5 standard errors) is at most delta."""
    from minsep.accountants.gaussian import GaussianAccountant
    from minsep.accountants.rdp import RdpAccountant

    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(3, 5))
    bands = int(rng.integers(1, 4))
    b = int(rng.integers(max(bands, 1), 4))
    warm = bool(rng.integers(0, 2))
    rate = float(rng.uniform(0.05, 0.9 / b))
    sigma = float(rng.uniform(0.6, 1.6))
    coefficients = tuple(float(v) for v in rng.uniform(0.3, 1.0, size=bands))
    delta = 1e-3
    scheme = BMinSep(n_steps=n, rate=rate, min_sep=b, warm_start=warm)
    strategy = BandedToeplitz(coefficients=coefficients)
    rdp = RdpAccountant().epsilon(scheme, strategy, sigma, delta).epsilon
    gaussian = GaussianAccountant().epsilon(scheme, strategy, sigma, delta).epsilon
    assert rdp <= gaussian
    bound = add_direction_bound(scheme, strategy, sigma)
    assert bound is not None
    epsilon = bound.epsilon(delta)
    law = oracles.b_min_sep_law(n, scheme.participation_chain().probability, b, warm)
    C = oracles.strategy_matrix(np.asarray(strategy.coefficients), n)
    y = sigma * np.random.default_rng(seed).standard_normal((200_000, n))
    log_u = np.full(len(y), -np.inf)
    for x, prob in law.items():
        mean = C @ np.asarray(x, dtype=float)
        log_u = np.logaddexp(log_u, math.log(prob) + (y @ mean - 0.5 * mean @ mean) / sigma**2)
    x_add = -np.expm1(np.minimum(epsilon + log_u, 0.0))  # (1 - e^eps U)_+
    mean, se = float(x_add.mean()), float(x_add.std() / math.sqrt(len(x_add)))
    assert mean <= delta + 5 * se
    # the rdp accountant's epsilon also covers the add direction (it takes the min of routes)
    x_rdp = -np.expm1(np.minimum(rdp + log_u, 0.0))
    assert float(x_rdp.mean()) <= delta + 5 * float(x_rdp.std() / math.sqrt(len(x_rdp)))


def test_the_bound_tightens_the_rdp_first_answer() -> None:
    """README's example (b = 8, 8 bands, n = 1024, p0 = 1/256, sigma = 1, delta = 1e-3): the
    add direction was ln((1 - delta) / pi(empty)) = 4.12; §10 brings it to about 2.53."""
    from minsep.accountants.rdp import RdpAccountant

    scheme = BMinSep.from_rate(1024, 1 / 256, min_sep=8)
    strategy = BandedToeplitz.for_steps(1024, bands=8)
    bound = RdpAccountant().renyi(scheme, strategy, 1.0)
    assert bound.add is not None
    assert math.log1p(-1e-3) - bound.log_no_participation == pytest.approx(4.12, abs=5e-3)
    assert bound.add_epsilon(1e-3) == pytest.approx(2.53, abs=1e-2)
    assert bound.remove_epsilon(1e-3)[0] < bound.add_epsilon(1e-3)


def test_certain_participation_keeps_the_trivial_bounds() -> None:
    """pi(empty) = 0 and p = 1 (b = 1 / rate): no Chernoff bound, only delta_add <= 1; the
    bound is built (it used to refuse ln pi(empty) = -inf) and never claims less."""
    from minsep.accountants.escort_engine import add_bound
    from minsep.schemes.b_min_sep import BMinSep
    from minsep.strategies import BandedToeplitz

    strategy = BandedToeplitz.optimal(64, 2)
    cold = BMinSep.from_rate(64, 1 / 8, min_sep=8, warm_start=False)
    bound = add_bound(cold.loss_model(strategy), 2.0)
    assert bound.delta(2.0) == 1.0 and bound.delta(50.0) == 1.0
    assert bound.delta(sys.float_info.max) == 1.0  # not 0 at the stand-in's threshold
    assert math.isinf(bound.epsilon(1e-6))  # no finite epsilon for a route to raise to
    # warm, p = 1 is balls-in-bins (docs/rdp-escort.md §10.9): the class-wise bound of §10.2
    warm = BMinSep.from_rate(64, 1 / 8, min_sep=8).loss_model(strategy)
    classwise = add_bound(warm, 2.0)
    assert 0.0 < classwise.delta(2.0) < 1.0 and math.isfinite(classwise.epsilon(1e-6))


def test_empty_pattern_floor_is_never_below_the_inflated_threshold() -> None:
    """The floor (1 - e^eps pi(empty))_+ of the §10 bound errs upward like the escort's add
    threshold: just below that (rounding-inflated) threshold the bound never claims 0, so the
    'deterministic' route cannot certify where the 'exact zero' route refuses."""
    from minsep.accountants.escort_engine import add_bound, add_threshold

    model = BMinSep(n_steps=64, rate=0.01, min_sep=4).loss_model(
        BandedToeplitz(coefficients=(1, 1, 1, 1))
    )
    bound = add_bound(model, 1.0)
    exact = -model.participation_chain().log_no_participation()
    eps = math.nextafter(add_threshold(model), 0.0)
    assert eps > exact  # strictly between the raw and the inflated threshold
    assert bound.delta(eps) > 0.0
    assert bound.epsilon(1e-300) >= exact


def test_tiny_noise_uses_the_pointwise_bound_without_a_huge_grid() -> None:
    """At s = 1e-4 the grid would need ~10^10 points (memory); U_i >= 1 - p pointwise gives
    h <= (1 - p)^-kappa instead, which is still above the quadrature value."""
    p, kappa = 0.1, 1.0
    value = log_h_upper(p, 1e-4, kappa)
    assert value == pytest.approx(-kappa * math.log1p(-p), rel=1e-5)
    assert value >= -kappa * math.log1p(-p)
    # just inside the grid's budget the grid's answer is no looser than the pointwise bound
    assert log_h_upper(p, 0.02, kappa) <= value
