"""The fused CUDA kernel of the b-min-sep log-ratio (cupy path), one thread per sample.

Each thread walks its sample's n steps backwards and computes, in one pass,

    x_i = ln(p r_i) = a * v_i + ln p - ||c_i||^2 / (2 sigma^2) + <c_i, C x> / sigma^2,
    g_i = logaddexp(ln(1 - p) + g_{i+1}, x_i + g_{i+b}),    g_j = 0 (j >= n),

(docs/math.md §2-§3, the log domain: exact for every sigma, two transcendentals per step, which a
GPU affords), the signal added from the participation steps through the cross-Gram table of
:func:`~minsep.schemes.b_min_sep.cpu_kernels.signal_table` (at most two participations lie
within k of a step, since b >= k). The ring of the last b values of g lives in a global
scratch array laid out ``(b, rows)``, and the noise correlations in a ``(n, S)`` layout
(:func:`device_layout`), so that the threads of a warp touch consecutive addresses.

Without a GPU, CI compiles the source with NVRTC for compute capability 9.0 and runs
:func:`device_b_min_sep` with the kernel compiled for the host, one call per thread
(:mod:`minsep.testing.host_device`;
``tests/unit/schemes/kernels/test_kernels_cuda_source.py``). **Not yet run or measured on a GPU.**
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import fft as host_fft

from minsep.schemes.kernels import gpu
from minsep.schemes.kernels.blocks import effective_coefficients

#: The kernel's body (after :data:`~minsep.schemes.kernels.gpu.PREAMBLE`).
_BODY = r"""
/* ln P/Q of one sample; values[i * value_stride], ring[slot * ring_stride]. */
DEVICE double minsep_b_min_sep_row(
    const double* values, long long value_stride,
    const int* steps, int m,
    const double* table, int k, const double* base, int n, int b,
    double a, double inv_s2, double log_q, int stays, double log_p, double p, int warm,
    double* ring, long long ring_stride)
{
    int width = 2 * k - 1;
    for (int j = 0; j < b; ++j) ring[(long long)j * ring_stride] = 0.0;
    int last = -1;  /* index of the last participation with step <= i + k - 1 */
    while (last + 1 < m && steps[last + 1] < n) ++last;
    for (int i = n - 1; i >= 0; --i) {
        while (last >= 0 && steps[last] > i + k - 1) --last;
        double x = a * values[(long long)i * value_stride] + base[i];
        int row = (n - 1 - i < k - 1) ? (n - 1 - i) : (k - 1);
        for (int t = last; t >= 0; --t) {
            int j = steps[t];
            if (j < i - k + 1) break;
            x += inv_s2 * table[row * width + (i - j + k - 1)];
        }
        long long slot = (long long)(i % b) * ring_stride;       /* holds g_{i+b} */
        long long next = (long long)((i + 1) % b) * ring_stride; /* holds g_{i+1} */
        double go = x + ring[slot];
        ring[slot] = stays ? minsep_logaddexp(log_q + ring[next], go) : go;
    }
    double total = ring[0];
    if (!warm) return total;
    for (int j = 1; j < b; ++j)
        total = minsep_logaddexp(total, log_p + ring[(long long)j * ring_stride]);
    return total - log1p((b - 1) * p);
}

extern "C" __global__ void minsep_b_min_sep(
    const double* values, long long stride_s, long long stride_i,
    const int* steps, int m, const double* table, int k, const double* base, int n, int b,
    double a, double inv_s2, double log_q, int stays, double log_p, double p, int warm,
    double* out, int row0, int rows, double* ring)
{
    int local = blockDim.x * blockIdx.x + threadIdx.x;
    if (local >= rows) return;
    long long s = (long long)row0 + local;
    out[s] = minsep_b_min_sep_row(values + s * stride_s, stride_i, steps + s * m, m,
                                  table, k, base, n, b, a, inv_s2, log_q, stays, log_p, p,
                                  warm, ring + local, rows);
}
"""

#: The declared kernel (its checked launcher: ``KERNEL.launcher()``).
KERNEL = gpu.declare(_BODY, "minsep_b_min_sep")
#: Its whole CUDA source (also C++ for the host under ``-DMINSEP_HOST``).
SOURCE = KERNEL.source

#: Up to this many bands the device correlates by direct sums, above by cuFFT.
DIRECT_MAX_BANDS = 16


def device_layout(noise: Any, xp: Any) -> Any:
    """The same ``(S, n)`` values stored step-major (``(n, S)`` contiguous, returned as the
    transposed view), so that a warp's threads read consecutive addresses."""
    return xp.ascontiguousarray(noise.T).T


def device_noise(
    n_samples: int, n_steps: int, coefficients: tuple[float, ...], rng: Any
) -> Any:  # pragma: no cover - needs a GPU
    """``<c_i, z>`` for ``z = rng.standard_normal((n_samples, n_steps))`` on the GPU, in
    :func:`device_layout` (cupy's own API: direct sums up to :data:`DIRECT_MAX_BANDS` bands,
    cuFFT above). Peak memory about four ``(S, n)`` float64 arrays."""
    import cupy as cp

    c = effective_coefficients(coefficients, n_steps)
    k = int(c.size)
    z = rng.standard_normal((n_samples, n_steps))
    if k <= DIRECT_MAX_BANDS:
        out = float(c[0]) * z
        for j in range(1, k):
            if c[j] != 0.0:
                out[:, : n_steps - j] += float(c[j]) * z[:, j:]
    else:
        length = int(host_fft.next_fast_len(n_steps + k - 1, real=True))
        kernel = cp.asarray(np.conj(np.fft.rfft(c, n=length)))
        spectrum = cp.fft.rfft(z, n=length, axis=1)
        del z
        spectrum *= kernel
        out = cp.fft.irfft(spectrum, n=length, axis=1)[:, :n_steps]
        del spectrum
    return device_layout(out, cp)


def device_b_min_sep(
    values: Any, given: Any, sigma: float, value_scale: float, model: Any
) -> Any:  # pragma: no cover - needs a GPU
    """The cupy twin of :func:`~minsep.schemes.kernels.fused.host_b_min_sep` (same arguments)."""
    import cupy as cp

    from minsep.schemes.b_min_sep.fused import _norms, signal_table

    coefficients, probability = model.coefficients, model.probability
    min_sep, warm_start = model.min_sep, model.warm_start
    rows, n = int(values.shape[0]), int(values.shape[1])
    if given.steps is None:
        steps_arr = cp.zeros((rows, 1), dtype=cp.int32) + n  # one sentinel column
    else:
        steps_arr = cp.ascontiguousarray(given.steps, dtype=cp.int32)
    m = int(steps_arr.shape[1])
    table_host = signal_table(coefficients, n)
    table = cp.asarray(table_host)
    k = int(table_host.shape[0])
    inv_s2 = 1.0 / (sigma * sigma)
    log_p = math.log(probability)
    base = cp.asarray(log_p - (0.5 * inv_s2) * _norms(coefficients, n))
    q = 1.0 - probability
    stays = q > 0.0
    log_q = math.log(q) if stays else 0.0
    operands = (
        *gpu.float64_rows(values, cp),
        steps_arr,
        np.int32(m),
        table,
        np.int32(k),
        base,
        np.int32(n),
        np.int32(min_sep),
        np.float64(value_scale),
        np.float64(inv_s2),
        np.float64(log_q),
        np.int32(stays),
        np.float64(log_p),
        np.float64(probability),
        np.int32(warm_start),
    )
    return gpu.launch(KERNEL.launcher(), rows, min_sep, operands, cp)
