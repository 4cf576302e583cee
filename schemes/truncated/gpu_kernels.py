"""The fused CUDA kernel of the truncated b-min-sep log-ratio (cupy path), one thread per sample.

Each thread walks its sample's n steps backwards and runs the P/R and Q/R recursions of
docs/math.md §6 side by side in the log domain (exact for every sigma): with
``x_i = a * v_i + s_i / sigma^2``, ``h_i = ||c_i||^2 / (2 sigma^2)`` and
``t_i = B_max / (r_i + 1)``,

    r_i < B_max:   P: ln p + x_i - h_i,   Q: ln p;
    r_i >= B_max:  P: ln p + logaddexp(ln t_i + 2 x_i - 4 h_i, ln(1 - t_i)),
                   Q: ln p + logaddexp(ln t_i - x_i - h_i, ln(1 - t_i)),

then the warm-start average of each (when warm) and their difference. ``v``: the noise
correlations (``a = 1/sigma``) or the dots ``<c_i, y>`` (``a = 1/sigma^2``); ``s``: the dense
signal ``<c_i, C x>`` of the array code's draw (absent for dots); ``r``: the public counts. The
two rings of the last b values live in a global scratch array laid out ``(2 b, rows)``.

CI tests this driver and kernel without a GPU (NVRTC, and the host stand-in of
:mod:`minsep.testing.host_device`). **Not yet run or measured on a GPU.**
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from minsep.schemes.kernels import gpu
from minsep.schemes.kernels.blocks import tail_norms

#: The kernel's body (after :data:`~minsep.schemes.kernels.gpu.PREAMBLE`).
_BODY = r"""
DEVICE double minsep_tr_finish(const double* ring, long long rs, int b, double log_p, double p,
                               int warm) {
    double total = ring[0];
    if (!warm) return total;
    for (int j = 1; j < b; ++j)
        total = minsep_logaddexp(total, log_p + ring[(long long)j * rs]);
    return total - log1p((b - 1) * p);
}

/* ln P/Q of one sample; values[i * vs], signal[i * ss] (may be 0), counts[i * cs];
   ring_p[j * rs], ring_q[j * rs]. */
DEVICE double minsep_tr_row(
    const double* values, long long vs, const double* signal, long long ss,
    const long long* counts, long long cs, const double* half_norms,
    int n, int b, double a, double inv_s2, double log_p, double p, double log_q, int stays,
    int warm, long long max_batch, double* ring_p, double* ring_q, long long rs)
{
    double cap = (double)max_batch;
    for (int j = 0; j < b; ++j) {
        ring_p[(long long)j * rs] = 0.0;
        ring_q[(long long)j * rs] = 0.0;
    }
    for (int i = n - 1; i >= 0; --i) {
        double x = a * values[(long long)i * vs];
        if (signal) x += inv_s2 * signal[(long long)i * ss];
        double h = half_norms[i];
        long long r = counts[(long long)i * cs];
        double lp, lq;
        if (r >= max_batch) {
            double keep = cap / fmax((double)r + 1.0, cap + 1.0);
            double log_keep = log(keep), log_drop = log1p(-keep);
            lp = log_p + minsep_logaddexp(log_keep + 2.0 * x - 4.0 * h, log_drop);
            lq = log_p + minsep_logaddexp(log_keep - x - h, log_drop);
        } else {
            lp = log_p + (x - h);
            lq = log_p;
        }
        long long slot = (long long)(i % b) * rs;
        long long next = (long long)((i + 1) % b) * rs;
        double go_p = lp + ring_p[slot], go_q = lq + ring_q[slot];
        ring_p[slot] = stays ? minsep_logaddexp(log_q + ring_p[next], go_p) : go_p;
        ring_q[slot] = stays ? minsep_logaddexp(log_q + ring_q[next], go_q) : go_q;
    }
    return minsep_tr_finish(ring_p, rs, b, log_p, p, warm)
        - minsep_tr_finish(ring_q, rs, b, log_p, p, warm);
}

extern "C" __global__ void minsep_truncated(
    const double* values, long long vs_s, long long vs_i,
    const double* signal, long long ss_s, long long ss_i, int has_signal,
    const long long* counts, long long cs_s, long long cs_i, const double* half_norms,
    int n, int b, double a, double inv_s2, double log_p, double p, double log_q, int stays,
    int warm, long long max_batch, double* out, int row0, int rows, double* ring)
{
    int local = blockDim.x * blockIdx.x + threadIdx.x;
    if (local >= rows) return;
    long long s = (long long)row0 + local;
    out[s] = minsep_tr_row(values + s * vs_s, vs_i, has_signal ? signal + s * ss_s : 0, ss_i,
                           counts + s * cs_s, cs_i, half_norms, n, b, a, inv_s2, log_p, p,
                           log_q, stays, warm, max_batch, ring + local,
                           ring + (long long)b * rows + local, rows);
}
"""

#: The declared kernel (its checked launcher: ``KERNEL.launcher()``).
KERNEL = gpu.declare(_BODY, "minsep_truncated")
#: Its whole CUDA source (also C++ for the host under ``-DMINSEP_HOST``).
SOURCE = KERNEL.source


def device_truncated(
    values: Any, given: Any, sigma: float, value_scale: float, model: Any
) -> Any:  # pragma: no cover - needs a GPU
    """``ln P(y|r)/Q(y|r)`` per row on the GPU from ``x_i = value_scale * values_i + signal_i
    / sigma^2`` (``signal = given.signal``; None: no signal) and the counts ``r =
    given.counts``."""
    import cupy as cp

    coefficients, probability, min_sep = model.coefficients, model.probability, model.min_sep
    warm_start, max_batch_size = model.warm_start, model.max_batch_size
    rows, n = int(values.shape[0]), int(values.shape[1])
    values_rows = gpu.float64_rows(values, cp)
    signal_rows = gpu.signal_rows(given.signal, values_rows[0], cp)
    counts = cp.asarray(given.counts, dtype=cp.int64)
    inv_s2 = 1.0 / (sigma * sigma)
    half_norms = cp.asarray((0.5 * inv_s2) * tail_norms(coefficients, n))
    q = 1.0 - probability
    stays = q > 0.0
    operands = (
        *values_rows,
        *signal_rows,
        counts,
        np.int64(counts.strides[0] // counts.itemsize),
        np.int64(counts.strides[1] // counts.itemsize),
        half_norms,
        np.int32(n),
        np.int32(min_sep),
        np.float64(value_scale),
        np.float64(inv_s2),
        np.float64(math.log(probability)),
        np.float64(probability),
        np.float64(math.log(q) if stays else 0.0),
        np.int32(stays),
        np.int32(warm_start),
        np.int64(max_batch_size),
    )
    kernel = KERNEL.launcher()
    return gpu.launch(kernel, rows, 2 * min_sep, operands, cp)
