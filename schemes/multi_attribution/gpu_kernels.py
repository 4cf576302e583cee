"""The fused CUDA kernel of the multi-attribution log-ratio (cupy path), one thread per sample.

Each thread walks its sample's n steps backwards and computes, in one pass (docs/math.md §5),

    x_i = a * v_i + s_i / sigma^2,   h_i = ||c_i||^2 / (2 sigma^2),
    ln G_i = logsumexp_j (ln w_j + j x_i - j^2 h_i)        (j >= 1 with w_j > 0),
    g_i = logaddexp(ln (1-p)^{k_u} + g_{i+1}, ln G_i + g_{i+b}),    g_j = 0 (j >= n),

in the log domain (exact for every sigma; k_u + 3 transcendentals per step), with ``v`` the
noise correlations (``a = 1/sigma``) or the dots ``<c_i, y>`` (``a = 1/sigma^2``) and ``s`` the
dense signal ``<c_i, C x>`` of the array code's draw (absent for dots and under ADD). The ring
of the last b values of g lives in a global scratch array laid out ``(b, rows)``, and the
values may be step-major (``(n, S)``, :func:`~minsep.schemes.b_min_sep.gpu_kernels.device_layout`)
so that the threads of a warp touch consecutive addresses.

No GPU has run it yet; without one, CI compiles it with NVRTC and runs
:func:`device_multi_attribution` on the host stand-in (:mod:`minsep.testing.host_device`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minsep.schemes.kernels import gpu
from minsep.schemes.kernels.blocks import tail_norms

#: The kernel's body (after :data:`~minsep.schemes.kernels.gpu.PREAMBLE`).
_BODY = r"""
/* ln P/Q of one sample; values[i * vs], signal[i * ss] (signal may be 0), ring[j * rs]. */
DEVICE double minsep_ma_row(
    const double* values, long long vs, const double* signal, long long ss,
    const double* half_norms, const double* js, const double* log_w, int terms,
    int n, int b, double a, double inv_s2, double log_q, int stays,
    double* ring, long long rs)
{
    for (int j = 0; j < b; ++j) ring[(long long)j * rs] = 0.0;
    for (int i = n - 1; i >= 0; --i) {
        double x = a * values[(long long)i * vs];
        if (signal) x += inv_s2 * signal[(long long)i * ss];
        double h = half_norms[i];
        double peak = log_w[0] + js[0] * x - js[0] * js[0] * h;  /* terms >= 1 */
        for (int t = 1; t < terms; ++t)
            peak = fmax(peak, log_w[t] + js[t] * x - js[t] * js[t] * h);
        double total = 0.0;
        for (int t = 0; t < terms; ++t)
            total += exp((log_w[t] + js[t] * x - js[t] * js[t] * h) - peak);
        long long slot = (long long)(i % b) * rs;
        long long next = (long long)((i + 1) % b) * rs;
        double go = peak + log(total) + ring[slot];
        ring[slot] = stays ? minsep_logaddexp(log_q + ring[next], go) : go;
    }
    return ring[0];
}

extern "C" __global__ void minsep_multi_attribution(
    const double* values, long long vs_s, long long vs_i,
    const double* signal, long long ss_s, long long ss_i, int has_signal,
    const double* half_norms, const double* js, const double* log_w, int terms,
    int n, int b, double a, double inv_s2, double log_q, int stays,
    double* out, int row0, int rows, double* ring)
{
    int local = blockDim.x * blockIdx.x + threadIdx.x;
    if (local >= rows) return;
    long long s = (long long)row0 + local;
    out[s] = minsep_ma_row(values + s * vs_s, vs_i, has_signal ? signal + s * ss_s : 0, ss_i,
                           half_norms, js, log_w, terms, n, b, a, inv_s2, log_q, stays,
                           ring + local, rows);
}
"""

#: The declared kernel (its checked launcher: ``KERNEL.launcher()``).
KERNEL = gpu.declare(_BODY, "minsep_multi_attribution")
#: Its whole CUDA source (also C++ for the host under ``-DMINSEP_HOST``).
SOURCE = KERNEL.source


def terms(log_weights: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(js, ln w_j)`` over the counts j >= 1 of positive probability (host float64)."""
    js = [j for j in range(1, len(log_weights)) if math.isfinite(log_weights[j])]
    return np.asarray(js, dtype=np.float64), np.asarray([log_weights[j] for j in js])


def device_multi_attribution(
    values: Any, given: Any, sigma: float, value_scale: float, model: Any
) -> Any:  # pragma: no cover - needs a GPU
    """``ln P/Q`` per row on the GPU from ``x_i = value_scale * values_i + signal_i /
    sigma^2`` (``given.signal`` None: no signal), for ``model`` as
    :func:`~.fused.host_multi_attribution` reads it."""
    import cupy as cp

    coefficients, log_weights, min_sep = model.coefficients, model.log_weights(), model.min_sep
    rows, n = int(values.shape[0]), int(values.shape[1])
    values_rows = gpu.float64_rows(values, cp)
    signal_rows = gpu.signal_rows(given.signal, values_rows[0], cp)
    inv_s2 = 1.0 / (sigma * sigma)
    half_norms = cp.asarray((0.5 * inv_s2) * tail_norms(coefficients, n))
    js_host, log_w_host = terms(log_weights)
    js, log_w = cp.asarray(js_host), cp.asarray(log_w_host)
    log_q = float(log_weights[0])
    stays = math.isfinite(log_q)
    operands = (
        *values_rows,
        *signal_rows,
        half_norms,
        js,
        log_w,
        np.int32(js_host.size),
        np.int32(n),
        np.int32(min_sep),
        np.float64(value_scale),
        np.float64(inv_s2),
        np.float64(log_q if stays else 0.0),
        np.int32(stays),
    )
    kernel = KERNEL.launcher()
    return gpu.launch(kernel, rows, min_sep, operands, cp)
