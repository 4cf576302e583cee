"""Block vectors of a banded Toeplitz strategy and their sliding dot products (docs/math.md §2).

Column i of the banded Toeplitz C, restricted to rows i..i+k-1 and cut at row n, is the block
vector c_i. All loss models need, per sample, the n sliding dot products

    <c_i, v> = sum_{j=0}^{k-1} c_j v_{i+j}   (terms with i + j >= n dropped)

and the tail norms ||c_i||^2 = sum_{j: i+j < n} c_j^2, which shrink over the last k-1 steps.
Indices are 0-based here. Every array function takes the array namespace ``xp`` (numpy, cupy,
or any array-API namespace) and keeps to functions all three provide.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import fft as host_fft

from minsep.framework.errors import ConfigurationError

#: Up to this many (effective) bands, sliding products use the direct O(n k) sum; above it,
#: an FFT of length ~n + k (O(n log n)); numpy's crossover lies at a few bands, measured by
#: tests/benchmarks/test_loss_kernels.py (figures: docs/performance.md).
DIRECT_MAX_BANDS = 8

METHODS = ("auto", "direct", "fft")


def effective_coefficients(coefficients: tuple[float, ...], n_steps: int) -> np.ndarray:
    """The coefficients that can touch an n-step output (the first ``min(k, n)``)."""
    return np.asarray(coefficients[: min(len(coefficients), n_steps)], dtype=np.float64)


def tail_norms(coefficients: tuple[float, ...], n_steps: int) -> np.ndarray:
    """``||c_i||^2 = sum_{j=0}^{min(k, n-i)-1} c_j^2`` for i = 0..n-1 (host float64).

    Equal to ``||c||^2`` for i <= n - k and shrinking over the last k - 1 steps (docs/math.md §2).
    """
    c = effective_coefficients(coefficients, n_steps)
    prefix = np.cumsum(c**2)
    remaining = np.minimum(c.size, n_steps - np.arange(n_steps))  # terms inside the horizon
    return np.asarray(prefix[remaining - 1], dtype=np.float64)


def _resolve(method: str, bands: int) -> str:
    if method not in METHODS:
        raise ConfigurationError(
            f"sliding_dot.method = {method!r} is invalid: must be one of {list(METHODS)}"
        )
    if method == "auto":
        return "direct" if bands <= DIRECT_MAX_BANDS else "fft"
    return method


def _fft_length(n_steps: int, bands: int) -> int:
    return int(host_fft.next_fast_len(n_steps + bands - 1, real=True))


def _zeros_like_prefix(v: Any, width: int, xp: Any) -> Any:
    return xp.zeros((*v.shape[:-1], width), dtype=xp.float64)


def sliding_dot(v: Any, coefficients: tuple[float, ...], xp: Any, method: str = "auto") -> Any:
    """``out[..., i] = <c_i, v[..., :]>`` for every step i (a correlation, cut at n).

    ``v`` is a float64 array of shape ``(..., n)``; returns the same shape. ``method`` picks the
    direct O(n k) sum, an FFT, or (``"auto"``) the cheaper of the two.
    """
    n = int(v.shape[-1])
    c = effective_coefficients(coefficients, n)
    k = int(c.size)
    if _resolve(method, k) == "direct":
        padded = xp.concat([v, _zeros_like_prefix(v, k - 1, xp)], axis=-1) if k > 1 else v
        out = float(c[0]) * v
        for j in range(1, k):
            if c[j] != 0.0:
                out = out + float(c[j]) * padded[..., j : j + n]
        return out
    length = _fft_length(n, k)
    kernel = xp.asarray(np.conj(np.fft.rfft(c, n=length)))
    spectrum = xp.fft.rfft(v, n=length, axis=-1)
    return xp.fft.irfft(spectrum * kernel, n=length, axis=-1)[..., :n]


def causal_convolve(x: Any, coefficients: tuple[float, ...], xp: Any, method: str = "auto") -> Any:
    """``(C x)[..., t] = sum_j c_j x[..., t - j]``: the banded Toeplitz C applied along the last
    axis (float64 ``(..., n)`` in and out)."""
    n = int(x.shape[-1])
    c = effective_coefficients(coefficients, n)
    k = int(c.size)
    if _resolve(method, k) == "direct":
        padded = xp.concat([_zeros_like_prefix(x, k - 1, xp), x], axis=-1) if k > 1 else x
        out = float(c[0]) * x
        for j in range(1, k):
            if c[j] != 0.0:
                out = out + float(c[j]) * padded[..., k - 1 - j : k - 1 - j + n]
        return out
    length = _fft_length(n, k)
    kernel = xp.asarray(np.fft.rfft(c, n=length))
    spectrum = xp.fft.rfft(x, n=length, axis=-1)
    return xp.fft.irfft(spectrum * kernel, n=length, axis=-1)[..., :n]


def signal_dots(x: Any, coefficients: tuple[float, ...], xp: Any, method: str = "auto") -> Any:
    """``<c_i, C x>`` for every step i: the noiseless part of ``<c_i, y>``."""
    return sliding_dot(causal_convolve(x, coefficients, xp, method), coefficients, xp, method)
