"""Rare truncation through the untruncated pair (docs/math.md §6.2), against quadrature.

Given the counts r, the App. D pair (P_r, Q_r) of truncated b-min-sep and the untruncated pair
(P_u, N(0, sigma^2 I)) are finite Gaussian mixtures in n = 1 or 2 dimensions (enumerated by the
oracles), so their hockey-stick divergences are integrated on a fine grid. Checked: the
conditional inequalities for every truncation pattern, the averaged ones against the exact law
of r (every other example's chain enumerated), and the constants against direct sums.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy.special import comb

from minsep.schemes import BMinSep
from minsep.schemes.truncated import Truncated
from minsep.schemes.truncated.reduction import GOLDEN_SQUARED, truncation_overheads
from minsep.strategies import BandedToeplitz
from tests.theorems import oracles

Law = dict[tuple[int, ...], float]


def _grid(means: np.ndarray, sigma: float, points: int) -> tuple[np.ndarray, float]:
    """A regular grid covering every mean +- 8 sigma, and its cell volume."""
    n = means.shape[1]
    low, high = means.min() - 8 * sigma, means.max() + 8 * sigma
    axis = np.linspace(low, high, points)
    mesh = np.stack(np.meshgrid(*([axis] * n), indexing="ij"), axis=-1).reshape(-1, n)
    return mesh, float((axis[1] - axis[0]) ** n)


def _density(law: Law, matrix: np.ndarray, sigma: float, grid: np.ndarray) -> np.ndarray:
    out = np.zeros(len(grid))
    for x, weight in law.items():
        mean = matrix @ np.asarray(x, dtype=float)
        sq = np.sum((grid - mean) ** 2, axis=1)
        out += weight * np.exp(-sq / (2 * sigma**2))
    n = grid.shape[1]
    return out / (2 * math.pi * sigma**2) ** (n / 2)


def _hockey(p: np.ndarray, q: np.ndarray, epsilon: float, cell: float) -> float:
    return float(np.sum(np.maximum(p - math.exp(epsilon) * q, 0.0)) * cell)


def _divergences(
    laws: Sequence[Law], matrix: np.ndarray, sigma: float
) -> list[tuple[np.ndarray, float]]:
    means = np.asarray([matrix @ np.asarray(x, float) for law in laws for x in law])
    grid, cell = _grid(means, sigma, 701 if matrix.shape[0] == 2 else 20001)
    return [(_density(law, matrix, sigma, grid), cell) for law in laws]


def _sampled_probability(law: Law, steps: Sequence[int]) -> float:
    """pi_E: the probability that the pattern samples one of ``steps``."""
    return sum(w for x, w in law.items() if any(x[i] for i in steps))


CHAINS = [
    # (coefficients, n, b, p, warm)
    ((1.0,), 1, 1, 0.3, False),
    ((1.0,), 2, 1, 0.25, False),
    ((0.8, 0.6), 2, 2, 0.4, False),
    ((0.8, 0.6), 2, 2, 0.4, True),
    ((0.9, 0.45), 2, 2, 0.7, True),
]
EPSILONS = (0.0, 0.3, 0.8, 1.5, 2.5)


@pytest.mark.parametrize(("c", "n", "b", "p", "warm"), CHAINS)
@pytest.mark.parametrize("sigma", [0.5, 1.0])
def test_conditional_bounds_for_every_truncation_pattern(
    c: tuple[float, ...], n: int, b: int, p: float, warm: bool, sigma: float
) -> None:
    """delta_r,remove <= delta_u,remove + min(1, g(pi_E)); delta_r,add <= pi_E at eps >=
    ln(1/pi(empty)); for counts making any subset of steps truncate, B_max in {1, 2}."""
    matrix = oracles.strategy_matrix(c, n)
    sampled = oracles.b_min_sep_law(n, p, b, warm)
    floor = -math.log(sampled[tuple([0] * n)])
    zero: Law = {tuple([0] * n): 1.0}
    gaps = []
    for max_batch in (1, 2):
        for pattern in itertools.product((0, 1), repeat=n):
            counts = [max_batch + (2 if t else -1) for t in pattern]
            counts = [max(r, 0) for r in counts]
            p_law, q_law = oracles.truncated_laws_given(sampled, counts, max_batch)
            dens = _divergences([p_law, q_law, sampled, zero], matrix, sigma)
            (pr, cell), (qr, _), (pu, _), (n0, _) = dens
            truncating = [i for i in range(n) if counts[i] >= max_batch]
            pi_e = _sampled_probability(sampled, truncating)
            g = min(1.0, pi_e * (2 - pi_e) / (1 - pi_e)) if pi_e < 1 else 1.0
            for eps in EPSILONS:
                remove_r, remove_u = _hockey(pr, qr, eps, cell), _hockey(pu, n0, eps, cell)
                add_r, add_u = _hockey(qr, pr, eps, cell), _hockey(n0, pu, eps, cell)
                linear = (1 + math.exp(eps)) * pi_e
                assert remove_r <= remove_u + min(g, linear) + 1e-6, (max_batch, counts, eps)
                assert add_r <= add_u + linear + 1e-6, (max_batch, counts, eps)
                gaps.append(remove_r - remove_u)
                if eps >= floor:
                    assert add_r <= pi_e + 1e-6, (max_batch, counts, eps)
            if not truncating:  # no truncation: the pair is the untruncated one
                assert _hockey(pr, qr, 0.5, cell) == pytest.approx(_hockey(pu, n0, 0.5, cell))
    assert max(gaps) > 1e-3  # truncation does cost: dropping the overhead would fail


@pytest.mark.parametrize(
    ("c", "n", "b", "rate", "warm", "others", "max_batch"),
    [
        ((1.0,), 2, 1, 0.3, False, 3, 2),
        ((0.8, 0.6), 2, 2, 0.3, False, 3, 2),
        ((0.8, 0.6), 2, 2, 0.3, True, 4, 2),
        ((0.9, 0.45), 2, 2, 0.35, True, 3, 1),
    ],
)
def test_average_over_counts_against_the_reduction_constants(
    c: tuple[float, ...], n: int, b: int, rate: float, warm: bool, others: int, max_batch: int
) -> None:
    """E_r[delta_r(eps)] (r's exact law) <= delta_u(eps) + remove, and the add direction <=
    add above ln(1/pi(empty)), with the constants as the accountant computes them."""
    scheme = BMinSep(n_steps=n, rate=rate, min_sep=b, warm_start=warm)
    p = scheme.probability
    truncated = Truncated(base=scheme, max_batch_size=max_batch, dataset_size=others + 1)
    overheads = truncated.reduction(BandedToeplitz(list(c))).overheads
    matrix = oracles.strategy_matrix(c, n)
    sampled = oracles.b_min_sep_law(n, p, b, warm)
    counts_law = oracles.other_counts_law(n, p, b, warm, others)
    zero: Law = {tuple([0] * n): 1.0}
    sigma = 0.7
    laws = [sampled, zero]
    for counts in counts_law:
        laws.extend(oracles.truncated_laws_given(sampled, counts, max_batch))
    dens = _divergences(laws, matrix, sigma)
    (pu, cell), (n0, _) = dens[:2]
    excess = []
    for eps in EPSILONS:
        remove = add = 0.0
        for j, weight in enumerate(counts_law.values()):
            pr, qr = dens[2 + 2 * j][0], dens[3 + 2 * j][0]
            remove += weight * _hockey(pr, qr, eps, cell)
            add += weight * _hockey(qr, pr, eps, cell)
        remove_u, add_u = _hockey(pu, n0, eps, cell), _hockey(n0, pu, eps, cell)
        assert remove <= remove_u + overheads.remove_at(eps) + 1e-6
        assert add <= add_u + overheads.add_at(eps) + 1e-6
        excess.append(remove - remove_u)
    assert max(excess) > 1e-4  # the overhead is needed


def test_constants_against_direct_sums() -> None:
    """tau_i = sum_{m >= B_max} C(N, m) pi^m (1 - pi)^(N - m); remove = phi^2 add; floor."""
    scheme = BMinSep(n_steps=6, rate=0.2, min_sep=3, warm_start=False)
    marginals = scheme.participation_probabilities()
    size, max_batch = 12, 4
    o = truncation_overheads(
        marginals, size, max_batch, scheme.participation_chain().log_no_participation()
    )
    big_n = size - 1
    tails = [
        sum(comb(big_n, m, exact=True) * q**m * (1 - q) ** (big_n - m) for m in range(4, 12))
        for q in marginals
    ]
    exact = sum(q * t for q, t in zip(marginals, tails, strict=True))
    assert exact <= o.participation <= exact * (1 + 1e-5)
    assert o.expected_truncations == pytest.approx(sum(tails))
    assert o.remove_at(5.0) == pytest.approx(GOLDEN_SQUARED * o.participation)
    assert o.remove_at(0.1) == pytest.approx((1 + math.exp(0.1)) * o.participation)
    assert o.add_at(o.epsilon_floor) == o.participation
    assert o.add_at(0.1) == pytest.approx((1 + math.exp(0.1)) * o.participation)
    law = oracles.b_min_sep_law(6, scheme.probability, 3, False)
    assert o.epsilon_floor == pytest.approx(-math.log(law[(0,) * 6]))
    assert o.epsilon_floor >= -math.log(law[(0,) * 6])


def test_golden_ratio_constant_is_the_supremum() -> None:
    """min(1, g(pi)) <= phi^2 pi on a fine grid, with equality near (3 - sqrt 5) / 2."""
    pi = np.linspace(1e-6, 1 - 1e-6, 200_001)
    g = np.minimum(1.0, pi * (2 - pi) / (1 - pi))
    assert np.all(g <= GOLDEN_SQUARED * pi * (1 + 1e-12))
    assert np.max(g / pi) == pytest.approx(GOLDEN_SQUARED, rel=1e-6)
