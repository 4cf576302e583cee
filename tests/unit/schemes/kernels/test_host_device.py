"""The GPU path short of the device (minsep/testing/host_device.py): every registered loss model
evaluated through its CUDA drivers, with numpy standing in for cupy and each kernel's own source
compiled for the host, against the host path (the comparison ``make gpu-check`` makes on a GPU);
the device noise against the host noise; launches checked against the kernels' parameters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from minsep.bench_models import Case, bench_models
from minsep.framework.backend import Backend, cupy_usable, get_backend, numpy_backend
from minsep.framework.errors import BackendUnavailableError
from minsep.framework.interfaces import Direction
from minsep.gpu_check import compare
from minsep.schemes.b_min_sep import gpu_kernels as b_min_sep_gpu
from minsep.schemes.kernels.blocks import sliding_dot
from minsep.schemes.kernels.cuda_source import KernelArgumentError
from minsep.testing.host_device import cxx_compiler, host_device, numpy_as_cupy

pytestmark = pytest.mark.skipif(cxx_compiler() is None, reason="needs a C++ compiler")

#: Small enough for one host call per GPU thread; 5 bands, so that k > 1 everywhere.
TINY = Case("n=48, k=b=5", 48, 5, samples=40, engine_samples=80, chunk_size=40)


@pytest.fixture(scope="module")
def device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with host_device(tmp_path_factory.mktemp("host_device")) as backend:
        yield backend


def test_every_model_agrees_with_the_host_path_through_its_drivers(device: Backend) -> None:
    kernels: dict[str, str] = {}
    for entry in bench_models(TINY):
        if entry.model is None:
            continue
        row = compare(entry.model, 40, device, seed=3)
        assert "error" not in row, (entry.label, row)
        assert row["max_abs_loss_difference"] <= 1e-9, (entry.label, row)
        assert row["max_abs_delta_difference"] <= 1e-12, (entry.label, row)
        kernels[entry.label] = row["kernels"]
    # the three families with CUDA kernels ran them (not the array code on the stand-in)
    assert {kernels[label] for label in ("b_min_sep", "truncated", "multi_attribution")} == {
        "cuda"
    }, kernels


@pytest.mark.parametrize("bands", [3, 16, 40])  # direct sums up to 16 bands, cuFFT's path above
def test_device_noise_matches_the_host_noise(device: Backend, bands: int) -> None:
    coefficients = tuple(float(v) for v in np.linspace(1.0, 0.2, bands))
    seed = np.random.SeedSequence(bands)
    on_device = b_min_sep_gpu.device_noise(17, 90, coefficients, device.rng(seed))
    z = numpy_backend("array").rng(seed).standard_normal((17, 90))
    np.testing.assert_allclose(on_device, sliding_dot(z, coefficients, np), rtol=0, atol=1e-12)
    assert on_device.strides == (8, 8 * 17)  # the device layout: step-major storage


def test_a_launch_is_checked_before_it_runs(device: Backend) -> None:
    launcher = b_min_sep_gpu.KERNEL.launcher()
    good = np.zeros(4)
    with pytest.raises(KernelArgumentError, match="argument 2 \\(long long stride_s\\)"):
        launcher((1,), (128,), (good, 4, *([np.int32(0)] * 19)))


def test_the_stand_in_is_only_inside_the_block(tmp_path: Path) -> None:
    import sys

    before = sys.modules.get("cupy")
    with host_device(tmp_path) as backend:
        import cupy

        assert cupy is backend.xp and cupy.asarray is np.asarray
        on_stand_in = get_backend("cupy")
        assert on_stand_in.xp is cupy and on_stand_in.kernels == "cuda"
    assert sys.modules.get("cupy") is before
    assert numpy_as_cupy().float64 is np.float64
    if not cupy_usable():  # the backend built over the stand-in is gone with it
        with pytest.raises(BackendUnavailableError):
            get_backend("cupy")


def test_draws_on_the_device_follow_the_host_stream(device: Backend) -> None:
    """A draw on the ``"cuda"`` kernel set (participation by the array code on the device's
    namespace, noise by the device driver) consumes the random stream as the host's does: the
    same seed gives the same losses to rounding, in both directions."""
    host = numpy_backend()
    checked = 0
    for entry in bench_models(TINY):
        model = entry.model
        if model is None or model.kernel_set(device) != "cuda":
            continue
        for direction in Direction:
            seed = np.random.SeedSequence([7, int(direction is Direction.ADD)])
            on_device = model.draw(30, direction, device.rng(seed), device)
            on_host = model.draw(30, direction, host.rng(seed), host)
            assert on_device.kernels == "cuda"
            for sigma in (0.5, 2.0):
                np.testing.assert_allclose(
                    model.privacy_loss(on_device, sigma),
                    model.privacy_loss(on_host, sigma),
                    rtol=1e-10,
                    atol=1e-10,
                    err_msg=f"{entry.label} {direction.name} sigma={sigma}",
                )
        checked += 1
    assert checked == 3
