"""Exact Renyi moments of random-phase cyclic Poisson against brute force (docs/rdp-escort.md §10).

Layers: the Gaussian moment identity ``E_Q[u^lam]`` by quadrature; the tuple sum over every
pattern of the random-phase law (dense C, truncated tail columns included); the per-tuple
forward pass of ``minsep.accountants.phase_moments`` against that enumeration, per phase tuple
and summed, b in {1, 2, 3, 4} (and b > n), bands <= b, lam in {2, 3}; b = 1 against Poisson.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.accountants import phase_moments, rdp_moments
from minsep.accountants.rdp_moments import ColumnProducts
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.framework.phase_mixture import PhaseMixture
from tests.theorems import oracles

Pattern = tuple[int, ...]


def phase_law(n: int, b: int, q: float, phase: int) -> dict[Pattern, float]:
    """Bernoulli(q) at every step ``i mod b = phase``, nothing elsewhere."""
    steps = [i for i in range(n) if i % b == phase]
    law: dict[Pattern, float] = {}
    for coins in itertools.product((0, 1), repeat=len(steps)):
        x = [0] * n
        for step, coin in zip(steps, coins, strict=True):
            x[step] = coin
        k = sum(coins)
        law[tuple(x)] = q**k * (1 - q) ** (len(steps) - k)
    return law


def random_phase_law(n: int, b: int, q: float) -> dict[Pattern, float]:
    """The uniform mixture of the phase laws."""
    law: dict[Pattern, float] = {}
    for g in range(b):
        for x, prob in phase_law(n, b, q, g).items():
            law[x] = law.get(x, 0.0) + prob / b
    return law


def gram_weights(
    laws: list[dict[Pattern, float]], c: np.ndarray, n: int, sigma: float
) -> tuple[list[np.ndarray], np.ndarray]:
    patterns = sorted({x for law in laws for x in law})
    X = np.array(patterns, dtype=float)
    C = oracles.strategy_matrix(c, n)
    E = np.exp(X @ (C.T @ C) @ X.T / sigma**2)
    weights = [np.array([law.get(x, 0.0) for x in patterns]) for law in laws]
    return weights, E


def enumerated_tuple_moment(
    laws: list[dict[Pattern, float]], c: np.ndarray, n: int, sigma: float
) -> float:
    """``sum prod_j law_j(x_j) exp(sum_{j<l} <Cx_j, Cx_l> / sigma^2)`` (lam = 2 or 3)."""
    w, E = gram_weights(laws, c, n, sigma)
    if len(laws) == 2:
        return float(w[0] @ E @ w[1])
    assert len(laws) == 3
    return float(sum(w[0][a] * ((w[1] * E[a]) @ E @ (w[2] * E[a])) for a in range(E.shape[0])))


def unit(values: tuple[float, ...]) -> np.ndarray:
    c = np.asarray(values, dtype=float)
    return c / np.linalg.norm(c)


CASES = [
    # (coefficients, n, b, q): k = b, k < b, b > n (phases without steps), q = 1, b = 1
    ((0.9, 0.3), 7, 2, 0.4),
    ((0.7, 0.5, 0.3), 8, 3, 0.5),
    ((0.7, 0.5), 8, 4, 0.3),
    ((1.0,), 3, 5, 0.6),
    ((0.6, 0.5, 0.4), 7, 3, 1.0),
    ((1.0,), 6, 1, 0.25),
    ((0.6, 0.5, 0.4, 0.3), 8, 4, 0.45),
    ((0.8, -0.4), 5, 2, 0.7),
    ((1.0, 0.5, 0.2), 2, 3, 0.5),
]


@pytest.mark.parametrize(("c", "n", "b", "q"), CASES)
def test_moment_matches_enumeration(c: tuple[float, ...], n: int, b: int, q: float) -> None:
    """``ln Z_lam`` of the pass equals the enumerated tuple sum to 1e-10 relative."""
    coefficients = unit(c)
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    law = random_phase_law(n, b, q)
    for sigma in (0.6, 1.7):
        for order in (2, 3):
            expected = math.log(enumerated_tuple_moment([law] * order, coefficients, n, sigma))
            got = phase_moments.log_moment(mixture, coefficients, sigma, order)
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-13)


@pytest.mark.parametrize(("c", "n", "b", "q"), CASES[:4] + CASES[6:7])
def test_every_ordered_tuple_matches_enumeration(
    c: tuple[float, ...], n: int, b: int, q: float
) -> None:
    """``Z(g)`` per ordered phase tuple (permutation invariance included) against enumeration."""
    coefficients = unit(c)
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    products = ColumnProducts(coefficients, n)
    sigma = 0.9
    for order in (2, 3):
        tuples = np.array(list(itertools.product(range(b), repeat=order)))
        got = phase_moments.log_tuple_moments(mixture, coefficients, sigma, tuples, products)
        for row, value in zip(tuples, got, strict=True):
            laws = [phase_law(n, b, q, int(g)) for g in row]
            expected = math.log(enumerated_tuple_moment(laws, coefficients, n, sigma))
            assert value == pytest.approx(expected, rel=1e-10, abs=1e-13)


def test_moment_identity_by_quadrature() -> None:
    """``E_Q[u^lam]`` by Gauss-Hermite quadrature of the mixture density ratio (no tuple
    expansion) equals the pass (n = 3, b = 2, bands 2)."""
    c, n, b, q, sigma = unit((1.0, 0.6)), 3, 2, 0.45, 0.9
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)  # weight exp(-z^2 / 2)
    weights = weights / math.sqrt(2 * math.pi)
    law = random_phase_law(n, b, q)
    C = oracles.strategy_matrix(c, n)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    ys = sigma * nodes[grid]
    w = np.prod(weights[grid], axis=1)
    u = sum(
        prob * np.exp([oracles.log_gaussian_ratio(C, x, y, sigma) for y in ys])
        for x, prob in law.items()
    )
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    for order in (2, 3):
        quadrature = math.log(float(w @ u**order))
        assert phase_moments.log_moment(mixture, c, sigma, order) == pytest.approx(
            quadrature, rel=1e-9
        )


def test_one_phase_is_poisson() -> None:
    """b = 1 equals the Poisson moments (Mironov, Talwar & Zhang 2019) of rdp_moments."""
    for n, q, sigma in ((1, 0.3, 0.7), (40, 0.05, 0.8), (200, 0.01, 1.3)):
        chain = ParticipationChain(n_steps=n, min_sep=1, probability=q)
        mixture = PhaseMixture(n_steps=n, phases=1, probability=q)
        for order in (2, 3, 5, 8):
            expected = rdp_moments.log_moment(chain, np.array([1.0]), sigma, order)
            got = phase_moments.log_moment(mixture, np.array([1.0]), sigma, order)
            assert got == pytest.approx(expected, rel=1e-12)


def test_phase_shift_is_not_a_symmetry() -> None:
    """Shifting every phase by one changes Z(g) (the horizon cuts the phases differently), so
    the pass keeps all multisets (docs/rdp-escort.md §10)."""
    c, n, b, q = unit((1.0, 0.5)), 7, 3, 0.5
    mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
    products = ColumnProducts(c, n)
    values = phase_moments.log_tuple_moments(mixture, c, 0.8, np.array([[0, 0], [1, 1]]), products)
    assert abs(values[0] - values[1]) > 1e-3


def test_mixture_law_helpers() -> None:
    """``m_g`` and ``ln pi(empty)`` against enumeration, b > n and q = 1 included."""
    for n, b, q in ((7, 3, 0.4), (3, 5, 0.6), (7, 3, 1.0), (2, 4, 1.0), (5, 1, 0.2)):
        mixture = PhaseMixture(n_steps=n, phases=b, probability=q)
        counts = [sum(1 for i in range(n) if i % b == g) for g in range(b)]
        assert mixture.phase_steps().tolist() == counts
        empty = random_phase_law(n, b, q).get((0,) * n, 0.0)
        expected = math.log(empty) if empty > 0 else -math.inf
        assert mixture.log_no_participation() == pytest.approx(expected, rel=1e-12)


def test_refusals_name_the_parameter() -> None:
    mixture = PhaseMixture(n_steps=10, phases=2, probability=0.3)
    with pytest.raises(ConfigurationError, match="phases = 2"):
        phase_moments.log_moment(mixture, unit((1.0, 0.5, 0.2)), 1.0, 2)
    with pytest.raises(ConfigurationError, match="max_entries"):
        phase_moments.log_moment(mixture, unit((1.0, 0.5)), 1.0, 4, max_entries=10)
    with pytest.raises(ConfigurationError, match="sigma"):
        phase_moments.log_moment(mixture, unit((1.0, 0.5)), 0.01, 3)
    with pytest.raises(ConfigurationError, match="order"):
        phase_moments.log_moment(mixture, unit((1.0, 0.5)), 1.0, 1)
    assert phase_moments.stored_entries(2, 4) == math.comb(5, 4) * 16
