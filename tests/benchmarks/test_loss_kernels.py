"""Benchmarks of the loss-model kernels (pytest-benchmark; skipped by default)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.kernels import blocks
from minsep.schemes.losses import BMinSepLossModel


@pytest.mark.parametrize("method", ["direct", "fft"])
@pytest.mark.parametrize("bands", [4, 8, 16, 64])
def test_sliding_dot(benchmark: Any, bands: int, method: str) -> None:
    v = np.random.default_rng(0).standard_normal((2000, 2000))
    c = tuple(float(x) for x in np.linspace(1.0, 0.1, bands))
    benchmark(blocks.sliding_dot, v, c, np, method)


@pytest.mark.parametrize("warm", [False, True])
def test_b_min_sep_draw_and_log_ratio(benchmark: Any, warm: bool) -> None:
    model = BMinSepLossModel(
        coefficients=(0.8, 0.5, 0.3, 0.1),
        n_steps=1000,
        min_sep=8,
        probability=0.05,
        warm_start=warm,
    )
    backend = numpy_backend()

    def run() -> Any:
        rng = backend.rng(np.random.SeedSequence(0))
        transcript = model.draw(2000, Direction.REMOVE, rng, backend)
        return model.log_ratio(transcript, 0.8)

    benchmark(run)
