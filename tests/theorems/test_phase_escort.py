"""Exact escort draws of random-phase cyclic Poisson (docs/rdp-escort.md §10.6).

The count law against enumeration of every ordered phase tuple and every lam-tuple of patterns
(chi-square), ``ln Z`` equal to ``phase_moments.log_moment``, ``0 <= W <= s_lam(eps)`` on every
draw and ``E_R[W] = delta_remove(eps)`` against quadrature (n = 3) and enumeration-based Monte
Carlo (n = 6).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.accountants.escort import escort_outputs, log_escort_weight, log_support_bound
from minsep.accountants.phase_escort import sample_phase_escort_counts
from minsep.accountants.phase_moments import log_moment
from minsep.framework.errors import ConfigurationError
from minsep.framework.phase_mixture import PhaseMixture
from minsep.schemes.cyclic_poisson.scheme import CyclicPoisson
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems import oracles
from tests.theorems.support import law_fit_pvalue
from tests.theorems.test_phase_moments import random_phase_law, unit


def count_law(
    c: np.ndarray, n: int, b: int, q: float, sigma: float, order: int
) -> dict[tuple[int, ...], float]:
    """Escort law of ``sum_j x_j`` by enumerating every lam-tuple of patterns of the mixture."""
    law = {x: p for x, p in random_phase_law(n, b, q).items() if p > 0}
    patterns = list(law)
    weights = np.array([law[x] for x in patterns])
    X = np.array(patterns, dtype=float)
    C = oracles.strategy_matrix(c, n)
    gram = X @ C.T @ C @ X.T / sigma**2
    out: dict[tuple[int, ...], float] = {}
    for combo in itertools.product(range(len(patterns)), repeat=order):
        exponent = sum(gram[combo[j], combo[m]] for j in range(order) for m in range(j))
        key = tuple(int(v) for v in X[list(combo)].sum(axis=0))
        out[key] = out.get(key, 0.0) + float(np.prod(weights[list(combo)])) * math.exp(exponent)
    total = sum(out.values())
    return {key: value / total for key, value in out.items()}


CASES = [
    # (n, b, order, q, coefficients)
    (5, 2, 2, 0.4, (1.0, 0.5)),
    (6, 3, 2, 0.5, (1.0, 0.6, 0.3)),
    (5, 3, 3, 0.45, (1.0, 0.6)),
    (5, 4, 2, 0.6, (1.0, 0.6, 0.3, 0.2)),
    (4, 2, 3, 1.0, (1.0, 0.5)),
    (4, 1, 3, 0.3, (1.0,)),
    (2, 3, 2, 0.5, (1.0, 0.5)),
]


@pytest.mark.parametrize(("n", "b", "order", "q", "coefficients"), CASES)
def test_counts_follow_the_escort_law(
    n: int, b: int, order: int, q: float, coefficients: tuple[float, ...]
) -> None:
    c, sigma, draws = unit(coefficients), 0.9, 40_000
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    law = count_law(c, n, b, q, sigma, order)
    draw = sample_phase_escort_counts(mixture, c, sigma, order, draws, np.random.default_rng(11))
    assert law_fit_pvalue(draw.counts, law) > 1e-4
    assert draw.log_z == pytest.approx(log_moment(mixture, c, sigma, order), rel=1e-12)


def test_the_law_check_rejects_the_escort_of_another_sigma() -> None:
    """Power of the check above: draws of the escort at sigma 0.9 fail against the law at 0.6
    (so a sampler that used a wrong interaction weight would be caught)."""
    n, b, order, q, c = 6, 3, 2, 0.5, unit((1.0, 0.6, 0.3))
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    draw = sample_phase_escort_counts(mixture, c, 0.9, order, 40_000, np.random.default_rng(11))
    assert law_fit_pvalue(draw.counts, count_law(c, n, b, q, 0.6, order)) < 1e-6


def test_small_message_budget_keeps_the_law() -> None:
    """Replaying the drawn multisets one at a time (a tiny max_entries) draws the same law."""
    n, b, order, q, c, sigma, draws = 6, 3, 2, 0.5, unit((1.0, 0.6, 0.3)), 0.9, 40_000
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    law = count_law(c, n, b, q, sigma, order)
    draw = sample_phase_escort_counts(
        mixture, c, sigma, order, draws, np.random.default_rng(12), max_entries=(n + 1) * 4
    )
    assert law_fit_pvalue(draw.counts, law) > 1e-4


def exact_remove_delta(c: np.ndarray, n: int, b: int, q: float, sigma: float, eps: float) -> float:
    """``E_Q[(u - e^eps)_+]`` by Gauss-Hermite quadrature (n <= 3)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(50)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    ys = sigma * nodes[grid]
    w = np.prod(weights[grid], axis=1)
    C = oracles.strategy_matrix(c, n)
    u = np.zeros(len(ys))
    for x, prob in random_phase_law(n, b, q).items():
        mean = C @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / sigma**2)
    return float(w @ np.maximum(u - math.exp(eps), 0.0))


def importance_estimate(
    scheme: CyclicPoisson, c: np.ndarray, sigma: float, order: int, eps: float, draws: int
) -> tuple[float, float, float, float]:
    """(mean W, standard error, max W, s_lam(eps)) from ``draws`` escort samples."""
    mixture = scheme.phase_mixture()
    assert mixture is not None
    rng = np.random.default_rng(3)
    draw = sample_phase_escort_counts(mixture, c, sigma, order, draws, rng)
    y = escort_outputs(draw.counts, c, sigma, rng)
    strategy = BandedToeplitz(coefficients=tuple(c)) if c.size > 1 else Identity()
    log_u = scheme.loss_model(strategy).log_ratio_at(y, sigma, np)  # type: ignore[attr-defined]
    weights = np.exp(log_escort_weight(log_u, draw.log_z, order, eps))
    bound = math.exp(log_support_bound(draw.log_z, order, eps))
    se = float(weights.std(ddof=1) / math.sqrt(draws))
    return float(weights.mean()), se, float(weights.max()), bound


@pytest.mark.parametrize(("epsilon", "order"), [(1.0, 2), (2.0, 3)])
def test_importance_weights_are_bounded_and_unbiased(epsilon: float, order: int) -> None:
    c, n, b, sigma = unit((1.0, 0.5)), 3, 2, 0.7
    scheme = CyclicPoisson(n_steps=n, rate=0.25, min_sep=b, partition="random")
    mean, se, largest, bound = importance_estimate(scheme, c, sigma, order, epsilon, 40_000)
    exact = exact_remove_delta(c, n, b, scheme.group_rate, sigma, epsilon)
    assert 0.0 <= largest <= bound * (1 + 1e-12)
    assert abs(mean - exact) <= 4 * se
    assert se > 0


def test_importance_weights_agree_with_plain_sampling_at_n_6() -> None:
    """n = 6, b = 3, 3 bands: mean W within 4 combined standard errors of the plain estimate
    ``E_P[(1 - e^eps / u)_+]`` from 400,000 draws of the enumerated mixture."""
    c, n, b, sigma, epsilon = unit((1.0, 0.6, 0.3)), 6, 3, 0.8, 1.2
    scheme = CyclicPoisson(n_steps=n, rate=0.5 / b, min_sep=b, partition="random")
    mean, se, largest, bound = importance_estimate(scheme, c, sigma, 2, epsilon, 40_000)
    assert largest <= bound * (1 + 1e-12)
    law = random_phase_law(n, b, scheme.group_rate)
    patterns = list(law)
    C = oracles.strategy_matrix(c, n)
    rng = np.random.default_rng(17)
    pick = rng.choice(len(patterns), size=400_000, p=np.array(list(law.values())))
    y = np.array([C @ np.asarray(x, dtype=float) for x in patterns])[pick]
    y = y + sigma * rng.standard_normal(y.shape)
    log_u = scheme.loss_model(BandedToeplitz(coefficients=tuple(c))).log_ratio_at(y, sigma, np)  # type: ignore[attr-defined]
    plain = -np.expm1(np.minimum(epsilon - log_u, 0.0))
    plain_se = float(plain.std() / math.sqrt(plain.size))
    assert abs(mean - float(plain.mean())) <= 4 * math.hypot(se, plain_se)


def test_refusals_name_the_parameter() -> None:
    mixture = PhaseMixture(n_steps=10, phases=2, probability=0.3)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigurationError, match="phases = 2"):
        sample_phase_escort_counts(mixture, unit((1.0, 0.5, 0.2)), 1.0, 2, 10, rng)
    with pytest.raises(ConfigurationError, match="n_samples"):
        sample_phase_escort_counts(mixture, unit((1.0, 0.5)), 1.0, 2, 0, rng)
    with pytest.raises(ConfigurationError, match="max_entries"):
        sample_phase_escort_counts(mixture, unit((1.0, 0.5)), 1.0, 4, 10, rng, max_entries=10)
