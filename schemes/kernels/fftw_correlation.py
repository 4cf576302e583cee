"""The FFT correlation plans of :mod:`.correlation` on FFTW (pyfftw, the optional ``fftw`` extra).

Same sums as numpy's engine (``out[r, i] = sum_{j < k, i + j < n} c_j z[r, i + j]``, docs/math.md
§2): the rows are laid out zero-padded in one aligned array, read as overlapping segments of
length N (a strided view: segment ``s`` starts at ``s L``, ``L = N - k + 1``; one segment of
length ``N >= n + k - 1`` for the long FFT), transformed by one batched real FFT, multiplied by
``conj(rfft(c, N)) / N`` (compiled: :func:`~minsep.schemes.kernels.cpu_kernels.multiply_spectra`)
and transformed back; the first L values of each segment are outputs.
FFTW's transforms are faster than numpy's pocketfft where measured (docs/performance.md;
``python -m minsep.bench`` shows the effect on every model).

**Determinism.** Plans are made with ``FFTW_ESTIMATE``: FFTW picks its algorithm by heuristics,
not by timing, so every process on a machine computes the same bits (``FFTW_MEASURE`` may pick
differently in each process, and a pool's results would then depend on which worker drew a
chunk). Each plan transforms exactly ``rows`` rows: a shorter block is padded with zero rows,
so every row goes through the same plan wherever it sits
(``tests/unit/schemes/kernels/test_correlation.py`` checks bit equality). Whether FFTW or numpy
runs is the measured choice of :mod:`.correlation`,
shared by the processes of a machine through its cache file.

**Licence.** pyfftw is BSD-licensed; the FFTW library its wheels bundle is GPL-2.0-or-later.
minsep does not need it (numpy's engine computes the same sums), so it is an optional extra.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import attrs
import numpy as np

from minsep.schemes.kernels import cpu_kernels
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

_local = threading.local()
_planning = threading.Lock()  # FFTW's planner is not thread-safe


@functools.cache
def available() -> bool:
    """True when pyfftw imports (it pulls in its interfaces, about 0.5 s, on first use only)."""
    try:
        import pyfftw  # noqa: F401
    except ImportError:
        return False
    return True


@attrs.frozen(eq=False)
class Transforms:
    """One thread's FFTW plans and aligned arrays for blocks of ``rows`` rows.

    ``padded`` ``(rows, width)``: rows of z, zeros from n on (written once); ``segments``: its
    overlapping view ``(rows, blocks, N)``; ``spectrum`` and ``inverse``: the transforms'
    outputs; ``forward``/``backward``: the FFTW plans between them."""

    padded: np.ndarray
    spectrum: np.ndarray
    inverse: np.ndarray
    forward: Any
    backward: Any


def _build(n_steps: int, bands: int, length: int, step: int, blocks: int, rows: int) -> Transforms:
    import pyfftw

    width = (blocks - 1) * step + length  # every segment inside the array, zeros from n on
    padded = pyfftw.empty_aligned((rows, width), dtype=np.float64)
    padded[...] = 0.0
    item = padded.itemsize
    segments = np.lib.stride_tricks.as_strided(
        padded, shape=(rows, blocks, length), strides=(width * item, step * item, item)
    )
    spectrum = pyfftw.empty_aligned((rows, blocks, length // 2 + 1), dtype=np.complex128)
    inverse = pyfftw.empty_aligned((rows, blocks, length), dtype=np.float64)
    with _planning:  # ESTIMATE plans do not write to the arrays they are made on
        forward = pyfftw.FFTW(segments, spectrum, axes=(-1,), flags=("FFTW_ESTIMATE",), threads=1)
        backward = pyfftw.FFTW(
            spectrum, inverse, axes=(-1,), direction="FFTW_BACKWARD",
            flags=("FFTW_ESTIMATE", "FFTW_DESTROY_INPUT"), threads=1,
        )  # fmt: skip
    return Transforms(padded, spectrum, inverse, forward, backward)


def transforms(
    n_steps: int, bands: int, length: int, step: int, blocks: int, rows: int
) -> Transforms:
    """This thread's :class:`Transforms` for the shape (made on first use, then kept)."""
    cache: dict[tuple[int, ...], Transforms] | None = getattr(_local, "transforms", None)
    if cache is None:
        cache = _local.transforms = {}
    key = (n_steps, bands, length, step, blocks, rows)
    found = cache.get(key)
    if found is None:
        found = cache[key] = _build(*key)
    return found


@functools.lru_cache(maxsize=64)
def scaled_kernel(coefficients: tuple[float, ...], length: int) -> np.ndarray:
    """``conj(rfft(c, N)) / N``: correlation and FFTW's unnormalised inverse in one factor."""
    kernel = np.conj(np.fft.rfft(np.asarray(coefficients, dtype=np.float64), n=length)) / length
    kernel.setflags(write=False)
    return kernel


@functools.lru_cache(maxsize=64)
def split_kernel(coefficients: tuple[float, ...], length: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scaled_kernel` as two contiguous arrays, its real and its imaginary parts (what
    :func:`~minsep.schemes.kernels.cpu_kernels.multiply_spectra` reads)."""
    kernel = scaled_kernel(coefficients, length)
    real, imag = np.ascontiguousarray(kernel.real), np.ascontiguousarray(kernel.imag)
    real.setflags(write=False)
    imag.setflags(write=False)
    return real, imag


def correlate(
    z: np.ndarray,
    c: np.ndarray,
    out: np.ndarray,
    *,
    length: int,
    step: int,
    blocks: int,
    rows: int,
) -> None:
    """``out[r, i] = sum_j c_j z[r, i + j]`` (cut at n) through segments of length N that start
    every ``step`` values (``blocks`` of them per row; one of ``N >= n + k - 1`` for the long
    FFT), on FFTW plans for ``rows`` rows (``z`` may have fewer)."""
    size, n = z.shape
    if size > rows:
        for start in range(0, size, rows):
            stop = min(size, start + rows)
            correlate(z[start:stop], c, out[start:stop], length=length, step=step, blocks=blocks,
                      rows=rows)  # fmt: skip
        return
    shape = (n, int(c.size), length, step, blocks, rows)
    input_rows(*shape)[:size] = z
    correlate_input(size, c, out, length=length, step=step, blocks=blocks, rows=rows)


def input_rows(
    n_steps: int, bands: int, length: int, step: int, blocks: int, rows: int
) -> np.ndarray:
    """``(rows, n)``: this thread's FFT input for the shape (its rows contiguous, zeros from n
    on). Values written into its first rows are correlated by :func:`correlate_input` without
    being copied (the noise blocks draw their normals straight into it)."""
    return transforms(n_steps, bands, length, step, blocks, rows).padded[:, :n_steps]


def correlate_input(
    size: int, c: np.ndarray, out: np.ndarray, *, length: int, step: int, blocks: int, rows: int
) -> None:
    """:func:`correlate` of the first ``size <= rows`` rows of :func:`input_rows` into ``out``
    (``(size, n)``); the other rows of the input are zeroed first."""
    n = out.shape[1]
    plan = transforms(n, int(c.size), length, step, blocks, rows)
    if size < rows:
        plan.padded[size:, :n] = 0.0
    plan.forward.execute()
    spectrum, coefficients = plan.spectrum, tuple(c.tolist())
    if NUMBA_AVAILABLE:
        real, imag = split_kernel(coefficients, length)
        pairs = spectrum.reshape(-1, real.size).view(np.float64)
        cpu_kernels.multiply_spectra(pairs, real, imag)
    else:  # pragma: no cover - numba is installed wherever pyfftw is tested
        np.multiply(spectrum, scaled_kernel(coefficients, length), out=spectrum)
    plan.backward.execute()
    inverse = plan.inverse[:size]
    whole = (blocks - 1) * step  # outputs of the segments that end before n
    if whole:
        np.copyto(out[:, :whole].reshape(size, blocks - 1, step), inverse[:, :-1, :step])
    out[:, whole:] = inverse[:, -1, : n - whole]
