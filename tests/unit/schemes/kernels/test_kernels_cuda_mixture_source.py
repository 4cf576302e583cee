"""The CUDA sources of the multi-attribution and truncated log-ratios, compiled as plain C on
the host, against the array code (docs/math.md §5, §6).

Each ``gpu_kernels.SOURCE`` is valid C99 under ``-DMINSEP_HOST`` (the thread index becomes a
loop over rows), so the kernels' arithmetic -- the per-step mixtures, the log-domain
recursions, the warm averages, strided (step-major) reads -- is tested without a GPU. Skipped
when no C compiler is found.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.kernels.blocks import tail_norms
from minsep.schemes.losses import MultiAttributionLossModel, TruncatedBMinSepLossModel
from minsep.schemes.multi_attribution import gpu_kernels as multi_gpu
from minsep.schemes.multi_attribution.loss import binomial_log_weights
from minsep.schemes.truncated import gpu_kernels as truncated_gpu

COMPILER = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs a C compiler")

_DOUBLE_P = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_LONG_P = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")
_LL, _I32, _DBL = ctypes.c_longlong, ctypes.c_int, ctypes.c_double


def _compile(folder: Path, source: str, name: str) -> Any:
    path = folder / f"{name}.c"
    path.write_text(source)
    library = folder / f"{name}.so"
    assert COMPILER is not None
    subprocess.run(
        [COMPILER, "-DMINSEP_HOST", "-std=c99", "-O2", "-shared", "-fPIC", "-Wall", "-Werror",
         "-o", str(library), str(path), "-lm"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return ctypes.CDLL(str(library))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("cuda_mixture_source")
    multi = _compile(folder, multi_gpu.SOURCE, "multi").minsep_multi_attribution_host
    multi.restype = None
    multi.argtypes = [_DOUBLE_P, _LL, _LL, ctypes.c_void_p, _LL, _LL, _DOUBLE_P, _DOUBLE_P,
                      _DOUBLE_P, _I32, _I32, _I32, _DBL, _DBL, _DBL, _I32, _DOUBLE_P,
                      _I32]  # fmt: skip
    truncated = _compile(folder, truncated_gpu.SOURCE, "truncated").minsep_truncated_host
    truncated.restype = None
    truncated.argtypes = [_DOUBLE_P, _LL, _LL, ctypes.c_void_p, _LL, _LL, _LONG_P, _LL, _LL,
                          _DOUBLE_P, _I32, _I32, _DBL, _DBL, _DBL, _DBL, _DBL, _I32, _I32, _LL,
                          _DOUBLE_P, _I32]  # fmt: skip
    return {"multi": multi, "truncated": truncated}


def _layout(array: np.ndarray, step_major: bool) -> tuple[np.ndarray, int, int]:
    """Storage and (sample, step) strides: the device's ``(n, S)`` layout or row-major."""
    rows, n = array.shape
    if step_major:
        return np.ascontiguousarray(array.T), 1, rows
    return np.ascontiguousarray(array), n, 1


def _array_transcript(model: Any, direction: Direction, seed: int) -> Any:
    backend = numpy_backend("array")
    return model.draw(11, direction, backend.rng(np.random.SeedSequence(seed)), backend)


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
    kernels: dict[str, Any], case: tuple[Any, ...], step_major: bool
) -> None:
    c, n, b, p, k_u = case
    model = MultiAttributionLossModel(
        coefficients=c, n_steps=n, min_sep=b, probability=p, max_user_examples=k_u
    )
    weights = binomial_log_weights(k_u, p)
    js, log_w = multi_gpu.terms(tuple(weights))
    for direction in Direction:
        transcript = _array_transcript(model, direction, seed=n + b)
        values, vs_s, vs_i = _layout(transcript.noise, step_major)
        signal = transcript.signal
        if signal is not None:
            signal, ss_s, ss_i = _layout(signal, step_major)
        pointer = None if signal is None else signal.ctypes.data
        for sigma in (0.02, 0.4, 1.0, 5.0):
            out = np.empty(11)
            half = 0.5 / sigma**2 * tail_norms(c, n)
            log_q = weights[0]
            stays = int(np.isfinite(log_q))
            kernels["multi"](
                values, vs_s, vs_i, pointer, ss_s if signal is not None else 0,
                ss_i if signal is not None else 0, half, js, log_w, js.size, n, b, 1 / sigma,
                1 / sigma**2, log_q if stays else 0.0, stays, out, 11,
            )  # fmt: skip
            expected = model.log_ratio(transcript, sigma)
            np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-11)


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
    kernels: dict[str, Any], case: tuple[Any, ...], step_major: bool
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
        values, vs_s, vs_i = _layout(transcript.noise, step_major)
        signal, ss_s, ss_i = _layout(transcript.signal, step_major)
        counts, cs_s, cs_i = _layout(np.asarray(transcript.counts, dtype=np.int64), step_major)
        for sigma in (0.02, 0.4, 1.0, 5.0):
            out = np.empty(11)
            q = 1.0 - p
            kernels["truncated"](
                values, vs_s, vs_i, signal.ctypes.data, ss_s, ss_i, counts, cs_s, cs_i,
                0.5 / sigma**2 * tail_norms(c, n), n, b, 1 / sigma, 1 / sigma**2, np.log(p), p,
                np.log(q) if q > 0 else 0.0, int(q > 0), int(warm), max_batch, out, 11,
            )  # fmt: skip
            expected = model.log_ratio(attrs.evolve(transcript, kernels="array"), sigma)
            np.testing.assert_allclose(out, expected, rtol=1e-11, atol=1e-11)
