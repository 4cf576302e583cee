"""The ``rdp`` accountant on random-phase cyclic Poisson (docs/rdp-escort.md §10).

The remove direction uses the exact moments of ``phase_moments`` (pinned in
test_phase_moments.py); the add direction the per-phase Chernoff bound, checked here against
tensor Gauss-Hermite quadrature of ``E_Q[U^-kappa]`` over the enumerated mixture; the
accountant's epsilon against Monte Carlo of both exact hockey-stick divergences and against
the unamplified Gaussian.
"""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest

from minsep.accountants.add_bound import phase_add_bound
from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.rdp import RdpAccountant
from minsep.framework.phase_mixture import PhaseMixture
from minsep.schemes.cyclic_poisson.scheme import CyclicPoisson
from minsep.schemes.poisson import Poisson
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems import oracles
from tests.theorems.test_phase_moments import random_phase_law


def log_u(
    law: dict[tuple[int, ...], float], C: np.ndarray, y: np.ndarray, sigma: float
) -> np.ndarray:
    """``ln P(y)/Q(y)`` of the enumerated mixture, row by row."""
    out = np.full(len(y), -np.inf)
    for x, prob in law.items():
        if prob == 0.0:
            continue
        mean = C @ np.asarray(x, dtype=float)
        out = np.logaddexp(out, math.log(prob) + (y @ mean - 0.5 * mean @ mean) / sigma**2)
    return out


@pytest.mark.parametrize(
    ("c", "n", "b", "q"),
    [
        ((0.9, 0.3), 4, 2, 0.4),
        ((0.7, 0.5, 0.3), 4, 3, 0.6),
        ((1.0,), 3, 1, 0.3),
        ((0.6, 0.5), 3, 4, 0.8),
        ((0.6, 0.5, 0.4), 4, 3, 1.0),
    ],
)
def test_per_phase_chernoff_moment_dominates_quadrature(
    c: tuple[float, ...], n: int, b: int, q: float
) -> None:
    """``E_Q[U^-kappa] <= h_{sigma/||c||}(q)^ceil(n/b)`` by tensor Gauss-Hermite quadrature."""
    strategy = BandedToeplitz(coefficients=c)
    coefficients = np.asarray(strategy.coefficients)
    C = oracles.strategy_matrix(coefficients, n)
    law = random_phase_law(n, b, q)
    nodes, weights = np.polynomial.hermite_e.hermegauss(30)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    w = np.prod(weights[grid], axis=1)
    for sigma in (0.7, 1.5):
        lu = log_u(law, C, sigma * nodes[grid], sigma)
        bound = phase_add_bound(PhaseMixture(n, b, q), coefficients, sigma)
        for kappa in (0.5, 1.0, 3.0):
            exact = math.log(float(w @ np.exp(-kappa * lu)))
            if q < 1.0:
                assert exact <= bound.log_moment(kappa) + 1e-9
            empty = law.get((0,) * n, 0.0)
            expected = math.log(empty) if empty > 0.0 else -sys.float_info.max  # stands for -inf
            assert bound.log_no_participation == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_random_configs_unamplified_above_rdp_above_exact(seed: int) -> None:
    """Random small random-phase configurations: the unamplified Gaussian's epsilon >= rdp's,
    and at rdp's epsilon both exact hockey-stick divergences (fixed-seed Monte Carlo over the
    enumerated mixture, 200,000 draws per direction, 5 standard errors) are <= delta."""
    rng = np.random.default_rng(2000 + seed)
    n = int(rng.integers(3, 7))
    bands = int(rng.integers(1, 4))
    b = int(rng.integers(bands, 5))
    q = float(rng.uniform(0.1, 0.9))
    sigma = float(rng.uniform(0.6, 1.6))
    coefficients = tuple(float(v) for v in rng.uniform(0.3, 1.0, size=bands))
    delta = 1e-3
    scheme = CyclicPoisson(n_steps=n, rate=q / b, min_sep=b, partition="random")
    strategy = BandedToeplitz(coefficients=coefficients)
    rdp = RdpAccountant().epsilon(scheme, strategy, sigma, delta).epsilon
    gaussian = GaussianAccountant().epsilon(scheme, strategy, sigma, delta).epsilon
    assert rdp <= gaussian
    law = random_phase_law(n, b, scheme.group_rate)
    C = oracles.strategy_matrix(np.asarray(strategy.coefficients), n)
    draws = np.random.default_rng(seed)
    # add direction: y ~ Q, (1 - e^eps U)_+
    lu = log_u(law, C, sigma * draws.standard_normal((200_000, n)), sigma)
    add = -np.expm1(np.minimum(rdp + lu, 0.0))
    assert float(add.mean()) <= delta + 5 * float(add.std() / math.sqrt(add.size))
    # remove direction: y ~ P, (1 - e^eps / U)_+
    patterns = list(law)
    pick = draws.choice(len(patterns), size=200_000, p=np.array(list(law.values())))
    means = np.array([C @ np.asarray(x, dtype=float) for x in patterns])[pick]
    lu = log_u(law, C, means + sigma * draws.standard_normal((200_000, n)), sigma)
    remove = -np.expm1(np.minimum(rdp - lu, 0.0))
    assert float(remove.mean()) <= delta + 5 * float(remove.std() / math.sqrt(remove.size))


def test_accountant_answers_random_phase_only() -> None:
    strategy = BandedToeplitz(coefficients=(0.8, 0.6))
    random = CyclicPoisson(n_steps=16, rate=0.05, min_sep=2, partition="random")
    equal = CyclicPoisson(n_steps=16, rate=0.05, min_sep=2)
    assert RdpAccountant().why_not(random, strategy) is None
    reason = RdpAccountant().why_not(equal, strategy)
    assert reason is not None and "random-phase" in reason
    narrow = CyclicPoisson(n_steps=16, rate=0.05, min_sep=2, partition="random")
    wide = BandedToeplitz(coefficients=(0.8, 0.48, 0.36))
    assert "bands <= min_sep" in str(RdpAccountant().why_not(narrow, wide))
    reason = RdpAccountant(max_states=10).why_not(random, strategy)
    assert reason is not None and "max_states = 10" in reason


def test_one_phase_is_poisson() -> None:
    """b = 1: the same divergences and epsilon as Poisson at rate q (add direction covered)."""
    n, q, sigma = 50, 0.05, 0.9
    cyclic = RdpAccountant().renyi(
        CyclicPoisson(n_steps=n, rate=q, min_sep=1, partition="random"), Identity(), sigma
    )
    poisson = RdpAccountant().renyi(Poisson(n_steps=n, rate=q), Identity(), sigma)
    assert cyclic.orders == poisson.orders
    assert cyclic.rdp == pytest.approx(poisson.rdp, rel=1e-12)
    assert cyclic.add_covered and poisson.add_covered


def test_random_phase_is_tighter_than_the_fixed_partition() -> None:
    """Joint convexity: the random-phase Renyi divergence is at most the fixed phase's, i.e. the
    RDP of the ceil(n/b)-fold Poisson(q)-subsampled Gaussian (dp_accounting), at every order."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    n, b, rate, sigma = 64, 4, 1 / 16, 1.0
    scheme = CyclicPoisson(n_steps=n, rate=rate, min_sep=b, partition="random")
    strategy = BandedToeplitz.for_steps(n, bands=4)
    bound = RdpAccountant().renyi(scheme, strategy, sigma)
    fixed = rdp_privacy_accountant.RdpAccountant(orders=list(bound.orders))
    event = dp_event.PoissonSampledDpEvent(b * rate, dp_event.GaussianDpEvent(sigma))
    fixed.compose(dp_event.SelfComposedDpEvent(event, math.ceil(n / b)))
    assert all(ours <= theirs for ours, theirs in zip(bound.rdp, fixed._rdp, strict=True))
    assert bound.rdp[0] < 0.9 * fixed._rdp[0]
