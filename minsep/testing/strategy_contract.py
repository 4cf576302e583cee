"""The contract every strategy matrix satisfies (docs/math.md §1, §4, §8)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Strategy
from minsep.testing.assertions import assert_refuses_invalid


class StrategyContract:
    """Override the ``strategy`` fixture to check a strategy."""

    def test_coefficients_unit_norm_nonnegative(self, strategy: Strategy) -> None:
        c = strategy.coefficients
        assert c.ndim == 1 and c.size == strategy.bands
        assert np.all(c >= 0)
        assert math.isclose(float(np.linalg.norm(c)), 1.0, rel_tol=1e-9)

    def test_matrix_is_lower_triangular_toeplitz(self, strategy: Strategy) -> None:
        n = 12
        C = strategy.matrix(n)
        assert C.shape == (n, n)
        np.testing.assert_allclose(np.triu(C, 1), 0.0)
        for i, j in itertools.product(range(1, n), range(1, n)):
            assert C[i, j] == pytest.approx(C[i - 1, j - 1])

    def test_prefix_mse_matches_dense(self, strategy: Strategy) -> None:
        n = 20
        C = strategy.matrix(n)
        A = np.tril(np.ones((n, n)))
        dense = np.linalg.norm(A @ np.linalg.inv(C), "fro") ** 2 / n
        assert strategy.prefix_mse(n) == pytest.approx(dense, rel=1e-9)

    def test_noise_stream_matches_dense(self, strategy: Strategy) -> None:
        n, shape = 15, (3, 2)
        backend = numpy_backend()
        seed = np.random.SeedSequence(5)
        streamed = np.stack(list(strategy.noise(shape, n, backend.rng(seed), backend)))
        Z = backend.rng(np.random.SeedSequence(5)).standard_normal((n, *shape))
        dense = np.linalg.solve(strategy.matrix(n), Z.reshape(n, -1)).reshape(n, *shape)
        np.testing.assert_allclose(streamed, dense, rtol=1e-9, atol=1e-12)

    def test_single_participation_sensitivity_is_one(self, strategy: Strategy) -> None:
        assert strategy.sensitivity(16, 16, 1) == pytest.approx(1.0)

    def test_invalid_input_is_refused_naming_the_parameter(self, strategy: Strategy) -> None:
        assert_refuses_invalid(type(strategy), type(strategy).invalid_examples())
