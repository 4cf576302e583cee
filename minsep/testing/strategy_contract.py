"""The contract every strategy matrix satisfies (docs/math.md §1, §4, §8).

Every check compares a strategy's structured route with the dense matrix it claims to be:
the Toeplitz column, the column inner products, the workload errors, the streaming noise, and
the sensitivity against a brute-force enumeration of participation patterns.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.errors import NotAccountableError
from minsep.framework.interfaces import Strategy
from minsep.framework.workloads import LearningRateDecay, Momentum, PrefixSums, Workload
from minsep.testing.assertions import assert_refuses_invalid

#: Workloads every strategy's ``mse`` is checked on (constant and decaying learning rates).
CONTRACT_WORKLOADS: tuple[Workload, ...] = (
    PrefixSums(),
    Momentum(0.8),
    LearningRateDecay("linear", 0.2, 0.5),
)


def brute_force_sensitivity(matrix: np.ndarray, min_sep: int, max_participations: int) -> float:
    """``max ||sum_{j in pi} C[:, j]||_2`` by enumerating every pattern (small n only)."""
    n = matrix.shape[0]
    best = 0.0
    for size in range(1, max_participations + 1):
        for pattern in itertools.combinations(range(n), size):
            if all(b - a >= min_sep for a, b in itertools.pairwise(pattern)):
                best = max(best, float(np.linalg.norm(matrix[:, list(pattern)].sum(axis=1))))
    return best


def dense_error(strategy: Strategy, n: int, workload: Workload) -> float:
    """``(1/n) ||A C^-1||_F^2`` from the dense matrices."""
    X = workload.matrix(n) @ np.linalg.inv(strategy.matrix(n))
    return float(np.sum(X * X) / n)


class StrategyContract:
    """Override the ``strategy`` fixture to check a strategy."""

    def test_banded_view(self, strategy: Strategy) -> None:
        """A banded strategy has unit-norm non-negative coefficients that are its column; a
        non-banded one refuses to give coefficients or bands (no silent banded analysis)."""
        if not strategy.is_banded:
            with pytest.raises(NotAccountableError, match=r"App\. B"):
                _ = strategy.coefficients
            with pytest.raises(NotAccountableError):
                _ = strategy.bands
            return
        c = strategy.coefficients
        assert c.ndim == 1 and c.size == strategy.bands
        assert np.all(c >= 0)
        assert math.isclose(float(np.linalg.norm(c)), 1.0, rel_tol=1e-9)
        n = max(12, strategy.bands + 2)
        C = strategy.matrix(n)
        lag = np.subtract.outer(np.arange(n), np.arange(n))
        np.testing.assert_array_equal(C[lag >= strategy.bands], 0.0)
        np.testing.assert_allclose(C[:, 0][: strategy.bands], c, rtol=1e-12)

    def test_matrix_is_lower_triangular_nonnegative_invertible(self, strategy: Strategy) -> None:
        n = 12
        C = strategy.matrix(n)
        assert C.shape == (n, n)
        np.testing.assert_array_equal(np.triu(C, 1), 0.0)
        assert np.all(C >= 0)
        assert np.all(np.diag(C) > 0)

    def test_toeplitz_column_matches_matrix(self, strategy: Strategy) -> None:
        n = 12
        C = strategy.matrix(n)
        column = strategy.toeplitz_column(n)
        if column is None:
            lag = np.subtract.outer(np.arange(n), np.arange(n))
            toeplitz = np.where(lag >= 0, C[:, 0][np.clip(lag, 0, None)], 0.0)
            assert not np.allclose(C, toeplitz), "a Toeplitz C must give its toeplitz_column"
            return
        assert column.shape == (n,)
        np.testing.assert_allclose(column, C[:, 0], rtol=1e-12, atol=0.0)
        for i, j in itertools.product(range(1, n), range(1, n)):
            assert C[i, j] == pytest.approx(C[i - 1, j - 1], rel=1e-12, abs=1e-300)

    def test_column_inner_products_match_matrix(self, strategy: Strategy) -> None:
        n = 11
        C = strategy.matrix(n)
        gram = C.T @ C
        np.testing.assert_allclose(strategy.column_gram(n), gram, rtol=1e-10, atol=1e-14)
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        np.testing.assert_allclose(
            strategy.column_inner_products(n, i, j), gram, rtol=1e-10, atol=1e-14
        )
        picked = strategy.column_inner_products(n, np.array([0, 3, 10]), np.array([10, 3, 0]))
        np.testing.assert_allclose(picked, gram[[0, 3, 10], [10, 3, 0]], rtol=1e-10, atol=1e-14)

    def test_prefix_mse_matches_dense(self, strategy: Strategy) -> None:
        n = 20
        assert strategy.prefix_mse(n) == pytest.approx(
            dense_error(strategy, n, PrefixSums()), rel=1e-9
        )

    @pytest.mark.parametrize("workload", CONTRACT_WORKLOADS, ids=lambda w: w.spec)
    def test_mse_matches_dense(self, strategy: Strategy, workload: Workload) -> None:
        n = 17
        assert strategy.mse(n, workload) == pytest.approx(
            dense_error(strategy, n, workload), rel=1e-9
        )
        sens = strategy.sensitivity(n, n, 1)
        assert strategy.normalized_mse(n, workload) == pytest.approx(
            dense_error(strategy, n, workload) * sens * sens, rel=1e-9
        )

    def test_noise_stream_matches_dense(self, strategy: Strategy) -> None:
        n, shape = 15, (3, 2)
        backend = numpy_backend()
        seed = np.random.SeedSequence(5)
        streamed = np.stack(list(strategy.noise(shape, n, backend.rng(seed), backend)))
        Z = backend.rng(np.random.SeedSequence(5)).standard_normal((n, *shape))
        dense = np.linalg.solve(strategy.matrix(n), Z.reshape(n, -1)).reshape(n, *shape)
        np.testing.assert_allclose(streamed, dense, rtol=1e-9, atol=1e-12)

    def test_single_participation_sensitivity_is_the_largest_column_norm(
        self, strategy: Strategy
    ) -> None:
        n = 16
        norms = np.linalg.norm(strategy.matrix(n), axis=0)
        assert strategy.sensitivity(n, n, 1) == pytest.approx(float(np.max(norms)), rel=1e-12)
        if strategy.is_banded:
            assert strategy.sensitivity(n, n, 1) == pytest.approx(1.0)

    @pytest.mark.parametrize(("min_sep", "max_participations"), [(1, 9), (2, 2), (3, 9), (4, 1)])
    def test_sensitivity_is_at_least_brute_force(
        self, strategy: Strategy, min_sep: int, max_participations: int
    ) -> None:
        n = 9
        exact = brute_force_sensitivity(strategy.matrix(n), min_sep, max_participations)
        value = strategy.sensitivity(n, min_sep, max_participations)
        assert value >= exact * (1 - 1e-12)
        if strategy.sensitivity_is_exact(min_sep, n, max_participations):
            assert value == pytest.approx(exact, rel=1e-12)

    def test_invalid_input_is_refused_naming_the_parameter(self, strategy: Strategy) -> None:
        assert_refuses_invalid(type(strategy), type(strategy).invalid_examples())
