"""The CUDA log-ratio kernels of the multi-attribution and truncated models on a GPU (marked
``gpu``: without one, on the host stand-in of one, tests/conftest.py).

Each kernel is checked against the array code on the same transcript moved to the host, and
the GPU engine against the host engine statistically (cupy has its own random stream).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import get_backend
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo import EngineConfig, sample
from minsep.schemes.kernels.transcript import BlockTranscript, TruncatedTranscript
from minsep.schemes.losses import MultiAttributionLossModel, TruncatedBMinSepLossModel

pytestmark = pytest.mark.gpu

MODELS = [
    MultiAttributionLossModel(
        coefficients=(0.8, 0.5, 0.3), n_steps=300, min_sep=3, probability=0.1, max_user_examples=3
    ),
    MultiAttributionLossModel(
        coefficients=(0.8, 0.6), n_steps=100, min_sep=2, probability=1.0, max_user_examples=2
    ),
    TruncatedBMinSepLossModel(
        coefficients=(0.8, 0.5, 0.3),
        n_steps=300,
        min_sep=4,
        probability=0.2,
        warm_start=True,
        dataset_size=60,
        max_batch_size=6,
    ),
    TruncatedBMinSepLossModel(
        coefficients=(1.0,),
        n_steps=200,
        min_sep=1,
        probability=0.3,
        warm_start=False,
        dataset_size=20,
        max_batch_size=6,
    ),
]


def _on_host(transcript: Any) -> Any:
    import cupy

    def host(array: Any) -> Any:
        return None if array is None else cupy.asnumpy(array)

    if isinstance(transcript, TruncatedTranscript):
        return TruncatedTranscript(
            direction=transcript.direction, xp=np, noise=host(transcript.noise),
            signal=host(transcript.signal), counts=host(transcript.counts), kernels="array",
        )  # fmt: skip
    return BlockTranscript(
        direction=transcript.direction, xp=np, noise=host(transcript.noise),
        signal=host(transcript.signal), kernels="array",
    )  # fmt: skip


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("index", range(len(MODELS)))
def test_cuda_kernels_match_the_array_code(index: int, direction: Direction) -> None:
    import cupy

    model = MODELS[index]
    backend = get_backend("cupy")
    transcript = model.draw(257, direction, backend.rng(np.random.SeedSequence(1)), backend)
    assert transcript.kernels == "cuda"
    host = _on_host(transcript)
    for sigma in (0.02, 0.3, 1.0, 8.0):
        got = cupy.asnumpy(model.log_ratio(transcript, sigma))
        want = model.log_ratio(host, sigma)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("index", [0, 2])
def test_gpu_engine_agrees_statistically_with_the_host(index: int) -> None:
    model = MODELS[index]
    runs = {}
    for name, seed in (("cupy", 1), ("numpy", 2)):
        config = EngineConfig(chunk_size=4096, backend=name, progress=False)
        runs[name] = sample(model, (0.8, 1.6), n_samples=20_000, seed=seed, checks=(0.5,),
                            config=config)  # fmt: skip
    for i in range(2):
        for direction in Direction:
            a, b = runs["cupy"].tally(i, direction), runs["numpy"].tally(i, direction)
            spread = math.sqrt(a.std_error(0) ** 2 + b.std_error(0) ** 2)
            assert abs(a.delta(0) - b.delta(0)) <= 5 * spread
