"""Whether drawing the column projections by circulant embedding would beat today's overlap-save
correlation at n = 7200, k = 256: the figures of docs/performance.md, "Issue 29, fourth pass".

Today each row of normals z is correlated with c by overlap-save: two segments of N = 4096,
each a forward and an inverse real FFT (FFTW, ``FFTW_ESTIMATE``, 18 rows per batch). The
circulant embedding draws the spectrum of a white vector of length M >= n + k - 1 directly and
applies one inverse transform, which gives the stationary projections; the last k - 1 columns,
cut by the horizon, need a correction by the white vector's time values at k - 1 positions,
which the spectral draw does not give: a pruned inverse DFT of the half spectrum (M / 2 complex
values of a real signal) decimated into M / 512 transforms of 256 and combined with twiddles.

The script times each transform (CPU time, best of 5) and prints ns per sample·step. The
combination is compiled by numba; gathering the decimated spectrum is not timed (it would only
add to the circulant's cost). Needs the ``fast`` and ``fftw`` extras.

Run: ``.venv/bin/python scripts/circulant_check.py`` (a few seconds on one core).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyfftw
from numba import njit

STEPS, BANDS, ROWS = 7200, 256, 18
OVERLAP_LENGTH = 4096
TAIL = 256  # k - 1 = 255 time values, rounded up to a transform length


def per_sample_step(run: Callable[[], Any], repeats: int = 50) -> float:
    """CPU ns per sample·step of ``run`` on a block of ROWS rows of STEPS steps."""
    run()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            run()
        best = min(best, (time.process_time() - start) / repeats)
    return best / (ROWS * STEPS) * 1e9


def inverse_plan(spectrum: np.ndarray, out: np.ndarray) -> Any:
    return pyfftw.FFTW(
        spectrum, out, axes=(-1,), direction="FFTW_BACKWARD",
        flags=("FFTW_ESTIMATE", "FFTW_DESTROY_INPUT"),
    )  # fmt: skip


@njit
def combine(pieces: np.ndarray, twiddles: np.ndarray, out: np.ndarray) -> None:
    """``out[r, j] = sum_a pieces[r, a, j] twiddles[a, j]``: the decimated transforms joined."""
    rows, count, width = pieces.shape
    for r in range(rows):
        for j in range(width):
            out[r, j] = 0.0
        for a in range(count):
            for j in range(width):
                out[r, j] += pieces[r, a, j] * twiddles[a, j]


def overlap_save() -> tuple[float, float]:
    """Forward and inverse transforms of today's correlation (two segments per row)."""
    length = OVERLAP_LENGTH
    segments = pyfftw.empty_aligned((ROWS, 2, length))
    segments[:] = np.random.default_rng(0).standard_normal(segments.shape)
    spectrum = pyfftw.empty_aligned((ROWS, 2, length // 2 + 1), dtype=np.complex128)
    inverse = pyfftw.empty_aligned((ROWS, 2, length))
    forward = pyfftw.FFTW(segments, spectrum, axes=(-1,), flags=("FFTW_ESTIMATE",))
    return per_sample_step(forward), per_sample_step(inverse_plan(spectrum, inverse))


def circulant(length: int) -> tuple[float, float, float]:
    """The inverse transform of length M, the decimated tail transforms and their combination."""
    rng = np.random.default_rng(1)
    spectrum = pyfftw.empty_aligned((ROWS, length // 2 + 1), dtype=np.complex128)
    spectrum[:] = rng.standard_normal(spectrum.shape) + 1j * rng.standard_normal(spectrum.shape)
    out = pyfftw.empty_aligned((ROWS, length))
    inverse = per_sample_step(inverse_plan(spectrum, out))
    count = (length // 2) // TAIL
    pieces = pyfftw.empty_aligned((ROWS, count, TAIL), dtype=np.complex128)
    pieces[:] = 1.0
    joined = pyfftw.empty_aligned((ROWS, count, TAIL), dtype=np.complex128)
    small = pyfftw.FFTW(
        pieces, joined, axes=(-1,), direction="FFTW_BACKWARD", flags=("FFTW_ESTIMATE",)
    )
    twiddles = np.exp(2j * np.pi * rng.random((count, TAIL)))
    tail = np.empty((ROWS, TAIL), dtype=np.complex128)
    return inverse, per_sample_step(small), per_sample_step(lambda: combine(joined, twiddles, tail))


def main() -> None:
    forward, inverse = overlap_save()
    print(f"n = {STEPS}, k = {BANDS}, {ROWS} rows per batch; ns per sample·step")
    print(f"overlap-save N = {OVERLAP_LENGTH} x 2: forward {forward:.2f}, inverse {inverse:.2f}, "
          f"pair {forward + inverse:.2f}")  # fmt: skip
    for length in (7680, 8192):
        whole, small, joined = circulant(length)
        total = whole + small + joined
        print(f"circulant M = {length}: inverse {whole:.2f}, tail transforms {small:.2f}, "
              f"combination {joined:.2f}, total {total:.2f} (+ the gather)")  # fmt: skip


if __name__ == "__main__":
    main()
