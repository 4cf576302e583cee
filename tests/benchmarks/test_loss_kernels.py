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


@pytest.mark.parametrize("path", ["narrow", "tiled"])
def test_direct_correlation_of_eight_bands(benchmark: Any, path: str) -> None:
    """The direct sum at k = 8 (the bench's n = 1024 case): each output in registers (what
    ``correlate_row`` takes up to ``NARROW_BANDS``) against k passes over a tile."""
    from minsep.schemes.kernels import cpu_kernels

    kernel = {
        "narrow": cpu_kernels._correlate_row_narrow,
        "tiled": cpu_kernels._correlate_row_tiled,
    }[path]
    z = np.random.default_rng(0).standard_normal((64, 1024))
    c = np.linspace(1.0, 0.3, 8)
    out = np.empty(1024)

    def run() -> None:
        for row in z:
            kernel(row, c, out, 1024)

    benchmark(run)


def test_chain_steps_of_the_small_bench_case(benchmark: Any) -> None:
    """b-min-sep's participation steps at n = 1024, b = 8, p0 = 1/16 (16384 samples): about 65
    rounds of uniforms, recorded round-major and transposed once."""
    from minsep.schemes.kernels.sampling import chain_steps

    backend = numpy_backend()

    def run() -> Any:
        rng = backend.rng(np.random.SeedSequence(0))
        return chain_steps(16384, 1024, 1 / 9, 8, True, rng, np, kernels="numba")

    benchmark(run)
