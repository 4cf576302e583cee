"""The CUDA kernels of the multi-attribution and truncated log-ratios on the host, against the
array code (docs/math.md §5, §6).

Each ``gpu_kernels.SOURCE`` compiles for the host as C++ (``-DMINSEP_HOST``, one call per
thread: minsep/testing/host_device.py), so the per-step mixtures, the log-domain recursions,
the warm averages and the strided (step-major) reads are tested through the drivers, without a
GPU, on the edge cases below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import Backend, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep.gpu_kernels import device_layout
from minsep.schemes.losses import MultiAttributionLossModel, TruncatedBMinSepLossModel
from minsep.testing.host_device import cxx_compiler, host_device

pytestmark = pytest.mark.skipif(cxx_compiler() is None, reason="needs a C++ compiler")


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with host_device(tmp_path_factory.mktemp("cuda_mixture_source")) as backend:
        yield backend


def _array_transcript(model: Any, direction: Direction, seed: int) -> Any:
    backend = numpy_backend("array")
    return model.draw(11, direction, backend.rng(np.random.SeedSequence(seed)), backend)


def _on_device(transcript: Any, step_major: bool) -> Any:
    """The transcript for the CUDA kernels: its (S, n) arrays stored step-major (the device
    layout) or row-major."""

    def layout(array: Any) -> Any:
        if array is None or not step_major:
            return array
        return device_layout(np.asarray(array), np)

    return attrs.evolve(
        transcript,
        noise=layout(transcript.noise),
        signal=layout(transcript.stored_signal),
        counts=layout(transcript.counts),
        kernels="cuda",
    )


def _assert_matches(model: Any, transcript: Any, step_major: bool) -> None:
    on_device = _on_device(transcript, step_major)
    for sigma in (0.02, 0.4, 1.0, 5.0):
        got = model.log_ratio(on_device, sigma)
        expected = model.log_ratio(transcript, sigma)
        np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)


MULTI = [
    # (coefficients, n, b, p, k_u)
    ((0.8, 0.5, 0.3), 40, 3, 0.1, 3),
    ((1.0,), 30, 1, 0.3, 2),
    ((0.8, 0.6), 30, 2, 1.0, 3),  # p = 1: no stay branch
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, 2),  # n < k
]


@pytest.mark.parametrize("step_major", [True, False])
@pytest.mark.parametrize("case", MULTI)
def test_multi_attribution_source_matches_the_array_code(
    device: Backend, case: tuple[Any, ...], step_major: bool
) -> None:
    c, n, b, p, k_u = case
    model = MultiAttributionLossModel(
        coefficients=c, n_steps=n, min_sep=b, probability=p, max_user_examples=k_u
    )
    for direction in Direction:
        _assert_matches(model, _array_transcript(model, direction, seed=n + b), step_major)


TRUNCATED = [
    # (coefficients, n, b, p, warm, |D|, B_max)
    ((0.8, 0.5, 0.3), 40, 4, 0.2, True, 25, 4),
    ((1.0,), 30, 1, 0.3, False, 10, 2),
    ((0.8, 0.6), 30, 2, 1.0, True, 8, 3),
    ((0.7, 0.5, 0.3), 60, 3, 0.3, False, 40, 8),
]


@pytest.mark.parametrize("step_major", [True, False])
@pytest.mark.parametrize("case", TRUNCATED)
def test_truncated_source_matches_the_array_code(
    device: Backend, case: tuple[Any, ...], step_major: bool
) -> None:
    c, n, b, p, warm, size, max_batch = case
    model = TruncatedBMinSepLossModel(
        coefficients=c,
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=max_batch,
    )
    for direction in Direction:
        transcript = _array_transcript(model, direction, seed=n + b)
        assert np.any(np.asarray(transcript.counts) >= max_batch)
        _assert_matches(model, transcript, step_major)
