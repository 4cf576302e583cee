"""Host drivers of the fused kernels: blockwise noise and the b-min-sep log-ratio (numba path).

Used by the ``"numba"`` kernel set (:attr:`~minsep.framework.backend.Backend.kernels`; host numpy
arrays). They compute exactly what the portable array code computes (docs/math.md §2-§3), from the
same random stream, with O(block) scratch memory instead of O(chunk):

* :func:`host_noise` draws the ``(S, n)`` standard normals in row blocks into a reused buffer
  and correlates each block with c (direct sums up to :data:`KERNEL_DIRECT_MAX_BANDS` bands,
  batched real FFTs above), writing ``<c_i, z>`` straight into the transcript array;
* :func:`minsep.schemes.b_min_sep.fused.host_b_min_sep` evaluates b-min-sep's ``ln P/Q`` for
  every sample in one compiled call.

Memory of a draw: the transcript itself (``8 n`` bytes per sample of noise, ``4 ceil(n/b)`` of
steps) plus at most 3 MiB of block buffers, whatever the chunk size. An evaluation adds
``8 (14 n + 5 b)`` bytes of row buffers and the ``8 S`` bytes of its result.

**Memory of a calibration run** (Algorithm 5 over a sigma sweep, per worker process): the
engine keeps one transcript per chunk and direction while it evaluates every sigma on it, so
the peak is ``chunk_size * (8 n + 4 ceil(n / b))`` bytes for b-min-sep REMOVE (``8 n`` under
ADD) plus the block and row buffers above, one loss vector (``8 chunk_size``) and the tallies:
independent of the number of samples and of sigmas. For example n = 7200 with chunks of 4096
samples holds 236 MB; n = 1024 with chunks of 65536 holds 570 MB
(:meth:`~minsep.schemes.b_min_sep.loss.BMinSepLossModel.transcript_bytes` gives the figure for a
model).

**Precision.** Normals, correlations and recursions are float64 throughout. float32 normals
would not be faster (numpy draws them at the same rate), and float32 storage of the kept
correlations, which would halve memory, perturbs each ``ln r_i`` by about ``6e-8 |v_i| /
sigma``; that is small next to Monte Carlo error but is a bias the accounting would have to
argue away, so it is not done.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.schemes.kernels import cpu_kernels
from minsep.schemes.kernels.blocks import effective_coefficients, sliding_dot

#: Up to this many bands the host path correlates directly (O(n k), vectorised); above it by
#: FFT. Measured crossover on one Zen 4 core (AVX-512): 64-128 bands at n = 1024 and n = 7200
#: (direct costs about 0.1 ns per band and step, a real FFT pair about 7-9 ns per step).
KERNEL_DIRECT_MAX_BANDS = 64

#: Target elements per normal block with direct correlation (256 KiB of float64, in L2).
BLOCK_ELEMENTS = 1 << 15
#: Target elements per block with FFT correlation: batched transforms of ~16 rows run about 7%
#: faster than of 4 (measured at n = 7200), for 3 MiB of block, spectrum and inverse.
FFT_BLOCK_ELEMENTS = 1 << 17


def generator_of(rng: RandomSource) -> np.random.Generator | None:
    """The numpy Generator behind ``rng`` when it exposes one as ``rng.generator`` (the host
    backend's source does), else None. With it, normals are drawn into reused buffers
    (``standard_normal(out=...)``); without it, ``rng.standard_normal(shape)`` per block gives
    the same numbers."""
    generator = getattr(rng, "generator", None)
    return generator if isinstance(generator, np.random.Generator) else None


def _block_rows(n_steps: int, fft: bool = False) -> int:
    return max(1, (FFT_BLOCK_ELEMENTS if fft else BLOCK_ELEMENTS) // n_steps)


@functools.lru_cache(maxsize=64)
def _fft_kernel(coefficients: tuple[float, ...], length: int) -> np.ndarray:
    c = effective_coefficients(coefficients, length)
    kernel = np.conj(np.fft.rfft(c, n=length))
    kernel.setflags(write=False)
    return kernel


def host_noise(
    n_samples: int, n_steps: int, coefficients: tuple[float, ...], rng: RandomSource
) -> np.ndarray:
    """``<c_i, z>`` for ``z = rng.standard_normal((n_samples, n_steps))`` (drawn blockwise, same
    stream): float64 ``(n_samples, n_steps)``."""
    c = effective_coefficients(coefficients, n_steps)
    k = int(c.size)
    out = np.empty((n_samples, n_steps))
    direct = k <= KERNEL_DIRECT_MAX_BANDS
    rows = min(_block_rows(n_steps, fft=not direct), max(1, n_samples))
    generator = generator_of(rng)
    buffer = np.empty((rows, n_steps))
    if not direct:
        from scipy import fft as host_fft

        length = int(host_fft.next_fast_len(n_steps + k - 1, real=True))
        kernel = _fft_kernel(tuple(float(v) for v in c), length)
        spectrum = np.empty((rows, length // 2 + 1), dtype=np.complex128)
        inverse = np.empty((rows, length))
    for start in range(0, n_samples, rows):
        size = min(rows, n_samples - start)
        if generator is not None:
            z = buffer[:size]
            generator.standard_normal(out=z)
        else:
            z = np.asarray(rng.standard_normal((size, n_steps)), dtype=np.float64)
        if direct:
            cpu_kernels.correlate_rows(z, c, out[start : start + size])
        else:
            spec = spectrum[:size]
            np.fft.rfft(z, n=length, axis=-1, out=spec)
            spec *= kernel
            inv = inverse[:size]
            np.fft.irfft(spec, n=length, axis=-1, out=inv)
            out[start : start + size] = inv[:, :n_steps]
    return out


def correlated_noise(
    n_samples: int,
    n_steps: int,
    coefficients: tuple[float, ...],
    rng: RandomSource,
    xp: Any,
    *,
    kernels: str,
) -> Any:
    """``<c_i, z>`` for ``z = rng.standard_normal((n_samples, n_steps))``: :func:`host_noise`
    under the ``"numba"`` kernel set, else the portable array code (same stream, same values)."""
    if kernels == "numba":
        return host_noise(n_samples, n_steps, coefficients, rng)
    return sliding_dot(rng.standard_normal((n_samples, n_steps)), coefficients, xp)
