"""Exact Renyi moments Z_lam of b-min-sep against brute force (docs/rdp-escort.md §1-§3).

Three independent layers: the Gaussian moment identity ``E_Q[(P/Q)^lam] = sum over lam-tuples``
by quadrature (no tuple expansion); the tuple sum by enumerating every pattern (dense C, so the
truncated tail columns come for free); the forward pass of ``minsep.accountants.rdp_moments``
against that enumeration, bands 1-3, min-sep >= bands, cold and warm start.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.accountants import rdp_moments
from minsep.accountants.rdp_moments import ColumnProducts, log_moment
from minsep.framework.participation import ParticipationChain
from tests.theorems import oracles

COEFFICIENTS = {
    1: (1.0,),
    2: (1.0, 0.5),
    3: (1.0, 0.6, 0.3),
}


def unit(values: tuple[float, ...]) -> np.ndarray:
    c = np.asarray(values, dtype=float)
    return c / np.linalg.norm(c)


def enumerated_log_moment(
    c: np.ndarray, n: int, p: float, b: int, warm: bool, sigma: float, order: int
) -> float:
    """``ln sum_{x_1..x_lam} prod pi(x_j) exp(sum_{j<l} x_j' C'C x_l / sigma^2)``."""
    law = oracles.b_min_sep_law(n, p, b, warm)
    patterns = np.array(list(law), dtype=float)
    weights = np.array(list(law.values()))
    C = oracles.strategy_matrix(c, n)
    gram = patterns @ (C.T @ C) @ patterns.T / sigma**2
    total = 0.0
    for combo in itertools.product(range(len(weights)), repeat=order):
        exponent = sum(gram[combo[j], combo[m]] for j in range(order) for m in range(j))
        total += float(np.prod(weights[list(combo)])) * math.exp(exponent)
    return math.log(total)


def enumerated_log_moment_fast(
    c: np.ndarray, n: int, p: float, b: int, warm: bool, sigma: float, order: int
) -> float:
    """The same sum, vectorised for lam in {2, 3} (larger n)."""
    law = oracles.b_min_sep_law(n, p, b, warm)
    patterns = np.array(list(law), dtype=float)
    w = np.array(list(law.values()))
    C = oracles.strategy_matrix(c, n)
    E = np.exp(patterns @ (C.T @ C) @ patterns.T / sigma**2)
    if order == 2:
        return math.log(float(w @ E @ w))
    assert order == 3
    total = sum(w[a] * float((w * E[a]) @ E @ (w * E[a])) for a in range(w.size))
    return math.log(total)


def test_moment_identity_by_quadrature() -> None:
    """``E_Q[u^lam]`` by Gauss-Hermite quadrature equals the tuple sum (n = 2, bands 2)."""
    c, n, p, b, sigma = unit(COEFFICIENTS[2]), 2, 0.4, 2, 0.9
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)  # weight exp(-z^2 / 2)
    weights = weights / math.sqrt(2 * math.pi)
    law = oracles.b_min_sep_law(n, p, b, warm=True)
    C = oracles.strategy_matrix(c, n)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=2)))
    ys = sigma * nodes[grid]  # quadrature points y = sigma z
    w = weights[grid[:, 0]] * weights[grid[:, 1]]
    # u(y) from the densities directly (oracles.log_gaussian_ratio), pattern by pattern.
    u = sum(
        prob * np.exp([oracles.log_gaussian_ratio(C, x, y, sigma) for y in ys])
        for x, prob in law.items()
    )
    for order in (2, 3):
        expected = enumerated_log_moment(c, n, p, b, True, sigma, order)
        assert math.log(float(w @ u**order)) == pytest.approx(expected, rel=1e-10)


def test_column_products_match_the_dense_gram_matrix() -> None:
    """``G(d, t)`` against ``C'C``, including every truncated tail column (bands 1-4)."""
    for k in (1, 2, 3, 4):
        c = unit(tuple(1.0 / (1 + j) for j in range(k)))
        for n in (1, 2, k, k + 3):
            gram = oracles.strategy_matrix(c, n).T @ oracles.strategy_matrix(c, n)
            products = ColumnProducts(c, n)
            for t in range(n):
                g = products.at(t)
                for d in range(k):
                    expected = gram[t - d, t] if t - d >= 0 else 0.0
                    assert g[d] == pytest.approx(expected, rel=1e-14, abs=1e-15)


CASES = [
    (k, b, warm, n)
    for k in (1, 2, 3)
    for b in (k, k + 1)
    for warm in (False, True)
    for n in sorted({1, 2, k + 1, 8})
]


@pytest.mark.parametrize(("bands", "min_sep", "warm", "n"), CASES)
def test_forward_pass_matches_enumeration(bands: int, min_sep: int, warm: bool, n: int) -> None:
    c = unit(COEFFICIENTS[bands])
    p = 0.35
    chain = ParticipationChain(n_steps=n, min_sep=min_sep, probability=p, warm_start=warm)
    for sigma in (0.6, 1.7):
        for order in (2, 3):
            if order == 3 and n > 6:
                continue
            expected = enumerated_log_moment_fast(c, n, p, min_sep, warm, sigma, order)
            got = log_moment(chain, c, sigma, order)
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-13)


def test_vectorised_enumeration_matches_the_plain_one() -> None:
    c = unit(COEFFICIENTS[3])
    for order in (2, 3):
        plain = enumerated_log_moment(c, 4, 0.3, 3, True, 1.1, order)
        fast = enumerated_log_moment_fast(c, 4, 0.3, 3, True, 1.1, order)
        assert fast == pytest.approx(plain, rel=1e-12)


def test_order_four_and_p_one() -> None:
    """A higher order and the deterministic chain (p = 1, balls-in-bins-like) still match."""
    c = unit(COEFFICIENTS[2])
    for p in (0.25, 1.0):
        chain = ParticipationChain(n_steps=5, min_sep=2, probability=p, warm_start=True)
        expected = enumerated_log_moment(c, 5, p, 2, True, 1.3, 4)
        assert log_moment(chain, c, 1.3, 4) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("warm", [False, True])
def test_no_participation_probability(warm: bool) -> None:
    for b, n, p in ((1, 5, 0.3), (3, 7, 0.4), (4, 2, 0.5), (2, 6, 1.0)):
        law = oracles.b_min_sep_law(n, p, b, warm)
        expected = law.get((0,) * n, 0.0)
        chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
        got = chain.log_no_participation()
        if expected == 0.0:
            assert got == -math.inf
        else:
            assert got == pytest.approx(math.log(expected), rel=1e-12)


def test_forward_pass_rescales_long_runs_exactly() -> None:
    """The general pass at b = 1 (forced) against the closed form, with ln Z >> 115 (rescaled)."""
    c = unit(COEFFICIENTS[1])
    chain = ParticipationChain(n_steps=3000, min_sep=1, probability=0.05)
    products = ColumnProducts(c, chain.n_steps)
    for order, sigma in ((2, 0.25), (4, 0.6)):
        closed = log_moment(chain, c, sigma, order)
        assert closed > 500.0
        forced = rdp_moments._log_moment_transfer(chain, products, sigma, order)
        assert forced == pytest.approx(closed, rel=1e-10)
