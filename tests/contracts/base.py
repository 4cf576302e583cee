"""The contracts: what every scheme, strategy and accountant must satisfy."""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy


def _check_invalid(cls: type, invalid: list[tuple[dict, str]]) -> None:
    for kwargs, parameter in invalid:
        with pytest.raises(ConfigurationError) as info:
            cls(**kwargs)
        assert parameter in str(info.value), (
            f"{cls.__name__}({kwargs}) error does not name {parameter!r}: {info.value}"
        )


class SchemeContract:
    """Override the ``scheme`` fixture (or parametrize it) to check a scheme."""

    def test_is_frozen_attrs(self, scheme: SamplingScheme) -> None:
        assert attrs.has(type(scheme)), "schemes are attrs classes"
        field = attrs.fields(type(scheme))[0]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(scheme, field.name, getattr(scheme, field.name))

    def test_public_parameters(self, scheme: SamplingScheme) -> None:
        assert 0.0 < scheme.rate <= 1.0
        assert scheme.n_steps >= 1
        assert scheme.min_separation >= 1
        assert scheme.max_participations >= 1
        assert 1.0 <= scheme.max_step_contribution < float("inf")
        params = scheme.public_parameters()
        assert params["scheme"] == scheme.name

    def test_invalid_input_is_refused_naming_the_parameter(self, scheme: SamplingScheme) -> None:
        _check_invalid(type(scheme), type(scheme).invalid_examples())

    def test_batches_are_valid_and_reproducible(self, scheme: SamplingScheme) -> None:
        population = scheme.example_population()
        first = list(scheme.batches(population, np.random.default_rng(7)))
        second = list(scheme.batches(population, np.random.default_rng(7)))
        assert len(first) == scheme.n_steps
        size = population if isinstance(population, int) else len(population)
        for a, b in zip(first, second, strict=True):
            assert a.dtype.kind == "i"
            np.testing.assert_array_equal(a, b)
            real = a[a >= 0]
            assert real.size == np.unique(real).size, "an example appears twice in a batch"
            assert np.all(real < size)

    def test_min_separation_holds(self, scheme: SamplingScheme) -> None:
        population = scheme.example_population()
        last_seen: dict[int, int] = {}
        for step, batch in enumerate(scheme.batches(population, np.random.default_rng(3))):
            for index in batch[batch >= 0].tolist():
                if index in last_seen:
                    assert step - last_seen[index] >= scheme.min_separation
                last_seen[index] = step


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
        _check_invalid(type(strategy), type(strategy).invalid_examples())


class AccountantContract:
    """Override the ``accountant`` and ``pairs`` fixtures to check an accountant.

    ``pairs`` yields (scheme, strategy) examples; the contract checks every supported one.
    """

    SIGMA = 1.5
    DELTA = 1e-3

    def test_invalid_input_is_refused_naming_the_parameter(self, accountant: Accountant) -> None:
        _check_invalid(type(accountant), type(accountant).invalid_examples())

    def test_unsupported_pairs_raise_naming_alternatives(
        self, accountant: Accountant, pairs: list[tuple[SamplingScheme, Strategy]]
    ) -> None:
        for scheme, strategy in pairs:
            if not accountant.supports(scheme, strategy):
                with pytest.raises(NotAccountableError, match="Accountants that can"):
                    accountant.epsilon(scheme, strategy, self.SIGMA, self.DELTA)
                return

    def test_epsilon_delta_consistent(
        self, accountant: Accountant, pairs: list[tuple[SamplingScheme, Strategy]]
    ) -> None:
        checked = 0
        for scheme, strategy in pairs:
            if not accountant.supports(scheme, strategy):
                continue
            eps = accountant.epsilon(scheme, strategy, self.SIGMA, self.DELTA)
            assert math.isfinite(eps.epsilon) and eps.epsilon >= 0
            assert eps.certified_epsilon >= eps.epsilon - 1e-12
            assert 0 <= eps.failure_probability < 1
            loose = accountant.delta(scheme, strategy, self.SIGMA, eps.epsilon + 1.0)
            tight = accountant.delta(scheme, strategy, self.SIGMA, max(eps.epsilon - 0.5, 0.0))
            assert 0 <= loose.delta <= tight.delta <= 1
            more_noise = accountant.epsilon(scheme, strategy, 2 * self.SIGMA, self.DELTA)
            assert more_noise.epsilon <= eps.epsilon + 1e-9
            checked += 1
            if checked >= 2:
                break
