"""The cupy path of the loss models on a GPU (marked ``gpu``: without one, on the host stand-in
of one, tests/conftest.py).

The fused CUDA kernel is checked against the host kernels on the same transcript (moved to the
host), and the GPU engine against the host engine statistically (cupy has its own stream).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import get_backend
from minsep.framework.interfaces import Direction
from minsep.framework.kernel_table import Participation
from minsep.framework.montecarlo import EngineConfig, sample
from minsep.schemes.b_min_sep.fused import host_b_min_sep
from minsep.schemes.losses import BMinSepLossModel

pytestmark = pytest.mark.gpu

CASES = [
    # (coefficients, n, b, p, warm)
    ((1.0,), 200, 1, 0.05, False),
    ((0.8, 0.5, 0.3), 300, 3, 0.2, True),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, True),
    ((1.0, 0.2), 4, 7, 0.3, True),
    ((0.8, 0.6), 100, 2, 1.0, True),
    (tuple(float(v) for v in np.linspace(1.0, 0.1, 40)), 500, 40, 0.01, True),
]


def _model(case: tuple[Any, ...]) -> BMinSepLossModel:
    c, n, b, p, warm = case
    return BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("case", CASES)
def test_cuda_kernel_matches_the_host_kernels(case: tuple[Any, ...], direction: Direction) -> None:
    import cupy

    model = _model(case)
    backend = get_backend("cupy")
    transcript = model.draw(257, direction, backend.rng(np.random.SeedSequence(1)), backend)
    assert transcript.kernels == "cuda"
    assert transcript.noise.T.flags.c_contiguous  # the step-major device layout
    noise = cupy.asnumpy(transcript.noise)
    steps = None if transcript.steps is None else cupy.asnumpy(transcript.steps)
    for sigma in (0.02, 0.3, 1.0, 8.0):
        got = cupy.asnumpy(model.log_ratio(transcript, sigma))
        want = host_b_min_sep(noise, Participation(steps=steps), sigma, 1 / sigma, model)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_gpu_participation_rate_is_p0() -> None:
    import cupy

    b, p0 = 4, 0.1
    p = p0 / (1 - p0 * (b - 1))
    model = BMinSepLossModel(
        coefficients=(1.0,), n_steps=50, min_sep=b, probability=p, warm_start=True
    )
    backend = get_backend("cupy")
    x = cupy.asnumpy(model.participation(200_000, backend.rng(np.random.SeedSequence(2)), backend))
    rate = x.mean(axis=0)  # warm start: p0 at every step
    assert np.all(np.abs(rate - p0) < 5 * math.sqrt(p0 * (1 - p0) / 200_000))


def test_gpu_engine_agrees_statistically_with_the_host() -> None:
    model = _model(((0.8, 0.5, 0.3), 200, 3, 0.2, True))
    runs = {}
    for name, seed in (("cupy", 1), ("numpy", 2)):
        config = EngineConfig(chunk_size=4096, backend=name, progress=False)
        runs[name] = sample(model, (0.8, 1.6), n_samples=40_000, seed=seed, checks=(0.5,),
                            config=config)  # fmt: skip
    for i in range(2):
        for direction in Direction:
            a, b = runs["cupy"].tally(i, direction), runs["numpy"].tally(i, direction)
            spread = math.sqrt(a.std_error(0) ** 2 + b.std_error(0) ** 2)
            assert abs(a.delta(0) - b.delta(0)) <= 5 * spread
