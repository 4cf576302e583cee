"""The b-min-sep CUDA kernel's arithmetic on the host, against the array code.

``gpu_kernels.SOURCE`` compiles for the host as C++ (``-DMINSEP_HOST``, one call per thread:
minsep/testing/host_device.py), so the log-domain recursion, the sparse signal walk, the warm
average and the thread guard are tested through the driver, without a GPU, on the edge cases
below, with the noise stored step-major (the device layout) and row-major.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import numpy as np
import pytest

from minsep.framework.backend import Backend, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep.gpu_kernels import device_layout
from minsep.schemes.losses import BMinSepLossModel
from minsep.testing.host_device import cxx_compiler, host_device

pytestmark = pytest.mark.skipif(cxx_compiler() is None, reason="needs a C++ compiler")


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with host_device(tmp_path_factory.mktemp("cuda_source")) as backend:
        yield backend


CASES = [
    # (coefficients, n, b, p, warm)
    ((1.0,), 40, 1, 0.1, False),  # Poisson
    ((0.8, 0.5, 0.3), 60, 3, 0.2, True),
    ((0.8, 0.5, 0.3), 60, 5, 0.2, False),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, True),  # n < k
    ((1.0, 0.2), 4, 7, 0.3, True),  # b > n
    ((0.8, 0.6), 30, 2, 1.0, True),  # p = 1: no stay branch
    (tuple(float(v) for v in np.linspace(1.0, 0.1, 12)), 80, 12, 0.05, True),
]


@pytest.mark.parametrize("step_major", [True, False])
@pytest.mark.parametrize(("c", "n", "b", "p", "warm"), CASES)
def test_cuda_source_matches_the_array_code(
    device: Backend,
    c: tuple[float, ...],
    n: int,
    b: int,
    p: float,
    warm: bool,
    step_major: bool,
) -> None:
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)
    backend = numpy_backend()
    for direction in Direction:
        transcript = model.draw(9, direction, backend.rng(np.random.SeedSequence(n + b)), backend)
        noise = np.asarray(transcript.noise)
        on_device = attrs.evolve(
            transcript, noise=device_layout(noise, np) if step_major else noise, kernels="cuda"
        )
        for sigma in (0.02, 0.4, 1.0, 5.0):
            got = model.log_ratio(on_device, sigma)
            expected = model.log_ratio(attrs.evolve(transcript, kernels="array"), sigma)
            np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)
