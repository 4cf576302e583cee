"""The CUDA kernel's source, compiled as plain C on the host, against the numba kernels.

``gpu_kernels.SOURCE`` is valid C99 under ``-DMINSEP_HOST`` (the thread index becomes a loop
over rows), so its arithmetic -- the log-domain recursion, the sparse signal walk, the warm
average -- is tested here without a GPU. Skipped when no C compiler is found.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep import gpu_kernels
from minsep.schemes.b_min_sep.fused import _norms, signal_table
from minsep.schemes.losses import BMinSepLossModel

COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs a C compiler")

_DOUBLE_P = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_INT_P = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder: Path = tmp_path_factory.mktemp("cuda_source")
    source = folder / "kernel.c"
    source.write_text(gpu_kernels.SOURCE)
    library = folder / "kernel.so"
    assert COMPILER is not None
    subprocess.run(
        [COMPILER, "-DMINSEP_HOST", "-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
         "-o", str(library), str(source), "-lm"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    lib = ctypes.CDLL(str(library))
    fn = lib.minsep_b_min_sep_host
    fn.restype = None
    ll, i32, dbl = ctypes.c_longlong, ctypes.c_int, ctypes.c_double
    fn.argtypes = [_DOUBLE_P, ll, ll, _INT_P, i32, _DOUBLE_P, i32, _DOUBLE_P, i32, i32,
                   dbl, dbl, dbl, i32, dbl, dbl, i32, _DOUBLE_P, i32]  # fmt: skip
    return fn


def _run_source(
    fn: Any, model: BMinSepLossModel, transcript: Any, sigma: float, step_major: bool
) -> np.ndarray:
    noise = np.asarray(transcript.noise, dtype=np.float64)
    rows, n = noise.shape
    if step_major:  # the device layout: (n, S) storage
        storage = np.ascontiguousarray(noise.T)
        stride_s, stride_i = 1, rows
    else:
        storage = np.ascontiguousarray(noise)
        stride_s, stride_i = n, 1
    steps = transcript.steps
    if steps is None:
        steps = np.full((rows, 1), n, dtype=np.int32)
    steps = np.ascontiguousarray(steps, dtype=np.int32)
    table = np.ascontiguousarray(signal_table(model.coefficients, n))
    inv_s2 = 1.0 / sigma**2
    p = model.probability
    base = np.ascontiguousarray(math.log(p) - 0.5 * inv_s2 * _norms(model.coefficients, n))
    q = 1.0 - p
    out = np.empty(rows)
    fn(storage, stride_s, stride_i, steps, steps.shape[1], table, table.shape[0], base, n,
       model.min_sep, 1.0 / sigma, inv_s2, math.log(q) if q > 0 else 0.0, int(q > 0),
       math.log(p), p, int(model.warm_start), out, rows)  # fmt: skip
    return out


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
def test_cuda_source_matches_the_host_kernels(
    host_kernel: Any, c: tuple[float, ...], n: int, b: int, p: float, warm: bool, step_major: bool
) -> None:
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)
    backend = numpy_backend()
    for direction in Direction:
        transcript = model.draw(9, direction, backend.rng(np.random.SeedSequence(n + b)), backend)
        for sigma in (0.02, 0.4, 1.0, 5.0):
            got = _run_source(host_kernel, model, transcript, sigma, step_major)
            array_path = attrs.evolve(transcript, kernels="array")
            expected = np.asarray(model.log_ratio(array_path, sigma))
            np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)
