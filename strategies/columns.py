"""Lower-triangular Toeplitz matrices from their first column: Gram entries and workload error
(docs/math.md §8.3, §8.6).

``C[i, j] = c[i - j]`` for ``i >= j``. Column j of the n x n matrix is ``c`` shifted down by j
and cut at row n, so for ``i <= j`` and lag ``d = j - i``

    (C^T C)[i, j] = sum_{t=0}^{n-1-j} c_t c_{t+d},

and the whole Gram matrix follows from ``H[p, q] = H[p-1, q-1] + c_p c_q`` (``H`` is ``C^T C``
read from the bottom-right corner) in O(n^2) without a matrix product.

For a workload ``A = P diag(eta) M`` (:mod:`minsep.framework.workloads`) and ``C^-1`` with first
column ``r``, ``M C^-1`` is Toeplitz with column ``gamma = (m * r)[:n]`` and

    ||A C^-1||_F^2 = sum_s sum_{t>=s} (sum_{u=s}^{t} eta_u gamma_{u-s})^2,

which is ``eta_0^2 sum_j (n - j) (cumsum gamma)_j^2`` for a constant learning rate (O(n)) and an
O(n^2)-time, O(n)-memory loop over the columns s otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.workloads import PrefixSums, Workload
from minsep.strategies.filters import fftconvolve, lfilter


def padded(column: np.ndarray, n_steps: int) -> np.ndarray:
    """``column`` cut or zero-padded to length ``n_steps``."""
    out = np.zeros(int(n_steps))
    m = min(out.size, column.size)
    out[:m] = column[:m]
    return out


def dense(column: np.ndarray) -> np.ndarray:
    """The n x n lower-triangular Toeplitz matrix with first column ``column``."""
    n = column.size
    lag = np.subtract.outer(np.arange(n), np.arange(n))
    return np.asarray(np.where(lag >= 0, column[np.clip(lag, 0, None)], 0.0), dtype=np.float64)


def gram(column: np.ndarray) -> np.ndarray:
    """``C^T C`` for the n x n lower-triangular Toeplitz ``C`` with first column ``column``
    (O(n^2) time, one n x n array)."""
    c = np.asarray(column, dtype=np.float64)
    n = c.size
    H = np.empty((n, n))
    H[0, :] = c[0] * c
    for p in range(1, n):
        H[p, 0] = c[p] * c[0]
        H[p, 1:] = H[p - 1, :-1] + c[p] * c[1:]
    return np.asarray(H[::-1, ::-1], dtype=np.float64)


def inner_products(column: np.ndarray, i: Any, j: Any) -> np.ndarray:
    """``(C^T C)[i, j]`` for broadcastable index arrays, O(n) per entry, no n x n array."""
    c = np.asarray(column, dtype=np.float64)
    n = c.size
    ii, jj = np.broadcast_arrays(np.asarray(i), np.asarray(j))
    check_indices(ii, jj, n)
    out = np.empty(ii.shape)
    for index in np.ndindex(ii.shape):
        a, b = int(ii[index]), int(jj[index])
        lag, last = abs(a - b), max(a, b)
        length = n - last
        out[index] = float(c[:length] @ c[lag : lag + length])
    return out


def check_indices(i: np.ndarray, j: np.ndarray, n: int) -> None:
    """Column indices must be integers in [0, n)."""
    for name, values in (("i", i), ("j", j)):
        if values.size and (
            not np.issubdtype(values.dtype, np.integer) or values.min() < 0 or values.max() >= n
        ):
            raise ConfigurationError(
                f"column_inner_products.{name} = {values!r} is invalid: must be integer column "
                f"indices in [0, {n})",
                parameter=name,
            )


def workload_error(inverse_column: np.ndarray, workload: Workload | None) -> float:
    """``||A C^-1||_F^2`` for lower-triangular Toeplitz ``C^-1`` with first column
    ``inverse_column`` (length n) and the workload's ``A`` (module docstring)."""
    r = np.asarray(inverse_column, dtype=np.float64)
    n = r.size
    w = workload or PrefixSums()
    beta = w.momentum
    gamma = r if beta == 0.0 else np.asarray(lfilter([1.0], [1.0, -beta], r))
    eta = w.learning_rates(n)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.all(eta == eta[0]):
            b = eta[0] * np.cumsum(gamma)
            total = float((n - np.arange(n)) @ (b * b))
        else:
            total = 0.0
            for s in range(n):
                column = np.cumsum(eta[s:] * gamma[: n - s])
                total += float(column @ column)
    return total


def workload_error_and_gradient(
    inverse_column: np.ndarray, workload: Workload | None
) -> tuple[float, np.ndarray]:
    """:func:`workload_error` and its gradient in ``inverse_column`` (reverse-mode through
    the cumulative sums and the momentum filter; same cost as the value)."""
    r = np.asarray(inverse_column, dtype=np.float64)
    n = r.size
    w = workload or PrefixSums()
    beta = w.momentum
    gamma = r if beta == 0.0 else np.asarray(lfilter([1.0], [1.0, -beta], r))
    eta = w.learning_rates(n)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.all(eta == eta[0]):
            weights = n - np.arange(n)
            b = eta[0] * np.cumsum(gamma)
            total = float(weights @ (b * b))
            grad_gamma = eta[0] * np.cumsum((2.0 * weights * b)[::-1])[::-1]
        else:
            total = 0.0
            grad_gamma = np.zeros(n)
            for s in range(n):
                column = np.cumsum(eta[s:] * gamma[: n - s])
                total += float(column @ column)
                grad_gamma[: n - s] += 2.0 * eta[s:] * np.cumsum(column[::-1])[::-1]
        if beta == 0.0:
            return total, grad_gamma
        grad_r = np.asarray(lfilter([1.0], [1.0, -beta], grad_gamma[::-1]))[::-1]
    return total, np.asarray(grad_r, dtype=np.float64)


def inverse_adjoint(inverse: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """``dL/dc`` for ``y = C^-1 e_0`` (C lower-triangular Toeplitz with first column ``c``,
    ``y = inverse``), given ``gradient = dL/dy``: ``dL/dc_k = -sum_m lambda_m y_{m-k}`` with
    ``lambda = C^-T dL/dy`` (FFT correlations, O(n log n))."""
    n = inverse.size
    lam = fftconvolve(gradient[::-1], inverse)[:n][::-1]
    return np.asarray(-fftconvolve(lam[::-1], inverse)[:n][::-1], dtype=np.float64)
