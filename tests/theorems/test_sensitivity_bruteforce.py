"""b-min-sep sensitivity against brute force over every participation pattern (docs/math.md §4).

S = max over pi of ||sum_{j in pi} C[:, j]||_2, pi with pairwise gaps >= b and |pi| <= K.
Exact for non-negative non-increasing coefficients (or b >= bands); an upper bound otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.strategies import (
    BandedToeplitz,
    Identity,
    optimal_coefficients,
    sensitivity,
    sensitivity_is_exact,
    toeplitz_matrix,
)


def _patterns(n: int, b: int, K: int) -> Iterator[tuple[int, ...]]:
    """Every non-empty subset of range(n) with gaps >= b and at most K elements."""
    for size in range(1, min(K, n) + 1):
        for pattern in itertools.combinations(range(n), size):
            if all(q - p >= b for p, q in itertools.pairwise(pattern)):
                yield pattern


def _brute_force(c: np.ndarray, n: int, b: int, K: int) -> float:
    C = toeplitz_matrix(c, n)
    return max(float(np.linalg.norm(C[:, list(p)].sum(axis=1))) for p in _patterns(n, b, K))


def _nonincreasing(rng: np.random.Generator, k: int) -> np.ndarray:
    return np.sort(rng.uniform(0.05, 1.0, k))[::-1]


RNG = np.random.default_rng(20260214)
NONINCREASING = [
    np.array([1.0]),
    np.array([1.0, 0.5]),
    np.array([1.0, 1.0, 1.0]),  # flat: ties everywhere
    np.array([1.0, 0.5, 0.25, 0.0]),  # a zero last band
    *[_nonincreasing(RNG, k) for k in (2, 3, 4, 6, 9)],
    np.array(optimal_coefficients(10, 4, cache_results=False)),
    np.array(optimal_coefficients(10, 7, "max", cache_results=False)),
]
GENERAL = [
    np.array([1.0, 0.0, 1.0]),
    np.array([0.2, 1.0]),
    np.array([1.0, -0.8, 0.5]),
    np.array([0.3, 0.9, -0.4, 0.7]),
    *[RNG.uniform(0.0, 1.0, k) for k in (3, 5, 8)],
    *[RNG.normal(size=k) + np.eye(k)[0] * 3 for k in (2, 4, 6)],
]
CASES = [(n, b, K) for n in (1, 2, 4, 7, 10) for b in (1, 2, 3, 5, 11) for K in (1, 2, 3, 10)]


@pytest.mark.parametrize("c", NONINCREASING, ids=lambda c: f"k{c.size}")
def test_exact_for_nonnegative_nonincreasing(c: np.ndarray) -> None:
    for n, b, K in CASES:
        assert sensitivity_is_exact(c, b)
        expected = _brute_force(c, n, b, K)
        assert sensitivity(c, n, b, K) == pytest.approx(expected, rel=1e-12, abs=1e-14), (n, b, K)


@pytest.mark.parametrize("c", GENERAL, ids=lambda c: f"k{c.size}")
def test_upper_bound_for_other_coefficients_exact_when_columns_disjoint(c: np.ndarray) -> None:
    for n, b, K in CASES:
        expected = _brute_force(c, n, b, K)
        found = sensitivity(c, n, b, K)
        if b >= c.size:
            assert sensitivity_is_exact(c, b)
            assert found == pytest.approx(expected, rel=1e-12, abs=1e-14), (n, b, K)
        else:
            assert not sensitivity_is_exact(c, b)
            assert found >= expected * (1 - 1e-12), (n, b, K)


def test_earliest_pattern_is_not_always_optimal_without_monotonicity() -> None:
    """c = (1, 0, 1), b = 1, K = 2: {1, 3} beats {1, 2}, so the bound must cover it."""
    c = np.array([1.0, 0.0, 1.0])
    C = toeplitz_matrix(c, 5)
    earliest = float(np.linalg.norm(C[:, [0, 1]].sum(axis=1)))
    best = _brute_force(c, 5, 1, 2)
    assert best == pytest.approx(math.sqrt(6.0)) and earliest == pytest.approx(2.0)
    assert sensitivity(c, 5, 1, 2) >= best


def test_truncated_tail_columns() -> None:
    """Columns in the last k - 1 steps are cut at row n (docs/math.md §2)."""
    c = np.array([0.8, 0.6])  # unit norm
    # n = 5, b = 2, K = 3: columns 1, 3, 5; the last keeps only c_0.
    assert sensitivity(c, 5, 2, 3) == pytest.approx(math.sqrt(1 + 1 + 0.64))
    assert sensitivity(c, 6, 2, 3) == pytest.approx(math.sqrt(3.0))


def test_unamplified_bandmf_with_separated_untruncated_columns_is_sqrt_k() -> None:
    strategy = BandedToeplitz.optimal(200, 8, cache=False)
    for K in (1, 2, 5, 24):
        assert strategy.sensitivity(200, 8, K) == pytest.approx(math.sqrt(K), rel=1e-12)
    # More participations than fit: K is capped at ceil(n / b).
    assert strategy.sensitivity(200, 8, 1000) == pytest.approx(
        strategy.sensitivity(200, 8, 25), rel=1e-15
    )


def test_identity_sensitivity_is_sqrt_of_participations() -> None:
    for n, b, K in CASES:
        assert Identity().sensitivity(n, b, K) == pytest.approx(
            math.sqrt(min(K, -(-n // b))), rel=1e-15
        )


def test_overlapping_columns_raise_the_sensitivity() -> None:
    strategy = BandedToeplitz.optimal(64, 8, cache=False)
    separated = strategy.sensitivity(64, 8, 4)
    overlapping = strategy.sensitivity(64, 2, 4)
    assert separated == pytest.approx(2.0)
    assert overlapping > separated


@pytest.mark.parametrize(
    ("args", "parameter"),
    [
        ((0, 1, 1), "n_steps"),
        ((5, 0, 1), "min_sep"),
        ((5, 1.5, 1), "min_sep"),
        ((5, 1, 0), "max_participations"),
        ((5, 1, True), "max_participations"),
    ],
)
def test_invalid_arguments(args: tuple[Any, ...], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        sensitivity([1.0, 0.5], *args)
    with pytest.raises(ConfigurationError, match=parameter):
        BandedToeplitz((1.0, 0.5)).sensitivity(*args)
