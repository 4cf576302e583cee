"""Backend portability without a GPU: the engine and every loss model on ``array_api_strict``.

``array_api_strict`` implements the array-API standard and nothing else, so code that runs on
it calls no numpy-only function (what would break on cupy). The engine runs each model there
through its portable array path while numpy runs the fused numba kernels; the two must agree
statistically on independent draws, and to rounding on the same seed (same stream).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import namespace_backend, numpy_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo import EngineConfig, sample
from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    MultiAttributionLossModel,
    TruncatedBMinSepLossModel,
)

xps = pytest.importorskip("array_api_strict")

BANDS = (0.8, 0.5, 0.3)
SIGMAS = (0.7, 1.4)
EPSILON = 0.5


def _models() -> list[PrivacyLossModel]:
    return [
        BMinSepLossModel(
            coefficients=BANDS, n_steps=24, min_sep=3, probability=0.2, warm_start=True
        ),
        BMinSepLossModel(
            coefficients=(1.0,), n_steps=24, min_sep=1, probability=0.1, warm_start=False
        ),
        BallsInBinsLossModel(coefficients=BANDS, n_steps=24, cycle_length=5),
        MultiAttributionLossModel(
            coefficients=BANDS, n_steps=24, min_sep=3, probability=0.1, max_user_examples=2
        ),
        TruncatedBMinSepLossModel(
            coefficients=BANDS,
            n_steps=24,
            min_sep=3,
            probability=0.2,
            warm_start=True,
            dataset_size=30,
            max_batch_size=5,
        ),
    ]


def _run(model: PrivacyLossModel, backend: Any, seed: int, n_samples: int) -> Any:
    config = EngineConfig(chunk_size=256, backend=backend, progress=False)
    return sample(model, SIGMAS, n_samples=n_samples, seed=seed, checks=(EPSILON,), config=config)


def test_the_stand_in_takes_the_array_path() -> None:
    assert namespace_backend(xps).kernels == "array" != numpy_backend().kernels


def test_the_stand_in_refuses_numpy_only_calls() -> None:
    """What the portability tests rely on: numpy idioms fail on the stand-in's arrays."""
    a = xps.asarray([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AttributeError):
        a.cumsum()
    with pytest.raises(AttributeError):
        xps.concatenate([a, a])
    with pytest.raises((IndexError, TypeError)):
        a[xps.asarray([0, 1]), xps.asarray([1, 0])] = 0.0


@pytest.mark.parametrize("index", range(5))
def test_engine_on_the_stand_in_matches_numpy_on_the_same_seed(index: int) -> None:
    model = _models()[index]
    strict = _run(model, namespace_backend(xps), seed=11, n_samples=300)
    host = _run(model, "numpy", seed=11, n_samples=300)
    for i in range(len(SIGMAS)):
        for direction in Direction:
            a, b = strict.tally(i, direction), host.tally(i, direction)
            assert a.count == b.count == 300
            np.testing.assert_allclose(a.sum_x, b.sum_x, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(a.sum_x2, b.sum_x2, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("index", range(5))
def test_backends_agree_statistically_on_independent_draws(index: int) -> None:
    """Different seeds on the two backends (as cupy's own stream would be): the delta estimates
    agree within 5 standard errors of their difference, at every sigma and direction."""
    model = _models()[index]
    strict = _run(model, namespace_backend(xps), seed=21, n_samples=3000)
    host = _run(model, "numpy", seed=22, n_samples=3000)
    for i in range(len(SIGMAS)):
        for direction in Direction:
            a, b = strict.tally(i, direction), host.tally(i, direction)
            spread = math.sqrt(a.std_error(0) ** 2 + b.std_error(0) ** 2)
            assert spread > 0
            assert abs(a.delta(0) - b.delta(0)) <= 5 * spread, (i, direction)
