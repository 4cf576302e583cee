"""The streaming correlated-noise generator equals the dense C^-1 Z."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import cupy_usable, get_backend, namespace_backend, numpy_backend
from minsep.framework.errors import ConfigurationError
from minsep.strategies import BandedToeplitz, Identity, correlated_noise

SHAPES = [(), (4,), (3, 2), (2, 3, 4)]
COEFFICIENTS = [
    (1.0,),
    (1.0, 0.5),
    (1.0, 0.6, 0.3),
    (0.6, 0.5, 0.45, 0.4, 0.2),
    (1.0, 0.0, 0.7),  # non-monotone with an inner zero band
    tuple(np.linspace(1.0, 0.1, 16)),
]


def _dense(
    strategy: BandedToeplitz | Identity, shape: tuple[int, ...], n: int, seed: int
) -> np.ndarray:
    backend = numpy_backend()
    Z = backend.rng(np.random.SeedSequence(seed)).standard_normal((n, *shape))
    return np.linalg.solve(strategy.matrix(n), Z.reshape(n, -1)).reshape(n, *shape)


@pytest.mark.parametrize(("coefficients", "shape"), list(itertools.product(COEFFICIENTS, SHAPES)))
@pytest.mark.parametrize("n", [1, 7, 40])
def test_stream_matches_dense_solve(
    coefficients: tuple[float, ...], shape: tuple[int, ...], n: int
) -> None:
    strategy = BandedToeplitz(coefficients)
    backend = numpy_backend()
    stream = strategy.noise(shape, n, backend.rng(np.random.SeedSequence(11)), backend)
    steps = list(stream)
    assert len(steps) == n
    assert all(step.shape == shape for step in steps)
    np.testing.assert_allclose(
        np.stack(steps), _dense(strategy, shape, n, 11), rtol=1e-9, atol=1e-12
    )


def test_identity_stream_is_the_raw_noise() -> None:
    backend = numpy_backend()
    steps = list(Identity().noise((5,), 9, backend.rng(np.random.SeedSequence(2)), backend))
    Z = backend.rng(np.random.SeedSequence(2)).standard_normal((9, 5))
    np.testing.assert_array_equal(np.stack(steps), Z)


def test_stream_yields_independent_arrays() -> None:
    """Mutating a yielded array (e.g. scaling it in place by sigma) must not change later steps."""
    strategy = BandedToeplitz((1.0, 0.7, 0.4))
    backend = numpy_backend()
    steps = []
    for step in strategy.noise((3,), 12, backend.rng(np.random.SeedSequence(4)), backend):
        steps.append(step.copy())
        step *= 1000.0
    np.testing.assert_allclose(
        np.stack(steps), _dense(strategy, (3,), 12, 4), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("coefficients", [(1.0,), (1.0, 0.6, 0.3), tuple(np.linspace(1, 0.1, 6))])
def test_stream_runs_on_array_api_strict(coefficients: tuple[float, ...]) -> None:
    xp = pytest.importorskip("array_api_strict")
    backend = namespace_backend(xp)
    strategy = BandedToeplitz(coefficients)
    n, shape = 10, (2, 3)
    steps = list(strategy.noise(shape, n, backend.rng(np.random.SeedSequence(9)), backend))
    host = np.stack([backend.to_numpy(step) for step in steps])
    np.testing.assert_allclose(host, _dense(strategy, shape, n, 9), rtol=1e-9, atol=1e-12)


class _Recording:
    """A RandomSource that remembers its standard-normal draws."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.draws: list[Any] = []

    def standard_normal(self, shape: Sequence[int]) -> Any:
        self.draws.append(self.source.standard_normal(shape))
        return self.draws[-1]

    def random(self, shape: Sequence[int]) -> Any:
        return self.source.random(shape)


@pytest.mark.gpu
def test_stream_runs_on_cupy() -> None:
    assert cupy_usable()
    backend = get_backend("cupy")
    strategy = BandedToeplitz((1.0, 0.6, 0.3, 0.1))
    n, shape = 25, (64, 3)
    rng = _Recording(backend.rng(np.random.SeedSequence(1)))
    steps = [backend.to_numpy(s) for s in strategy.noise(shape, n, rng, backend)]
    Z = np.stack([backend.to_numpy(z) for z in rng.draws])
    dense = np.linalg.solve(strategy.matrix(n), Z.reshape(n, -1)).reshape(n, *shape)
    np.testing.assert_allclose(np.stack(steps), dense, rtol=1e-9, atol=1e-12)


def test_invalid_arguments_fail_at_the_call() -> None:
    strategy = BandedToeplitz.example()
    backend = numpy_backend()
    rng = backend.rng(np.random.SeedSequence(0))
    with pytest.raises(ConfigurationError, match="n_steps"):
        strategy.noise((2,), 0, rng, backend)
    with pytest.raises(ConfigurationError, match="shape"):
        strategy.noise((2, -1), 5, rng, backend)
    with pytest.raises(ConfigurationError, match="shape"):
        strategy.noise(3, 5, rng, backend)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="coefficients"):
        correlated_noise((0.0, 1.0), (2,), 5, rng, backend)
