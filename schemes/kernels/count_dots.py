"""Column dot products of outputs ``y = C x + sigma z`` from the counts x and the noise
correlations, without forming y (docs/rdp-escort.md §7).

With ``v_i = <c_i, z>`` already correlated (the fused noise kernels of :mod:`.fused`),

    <c_i, y> = sigma v_i + sum_j x_j <c_i, C e_j>,

and ``<c_i, C e_j>`` is nonzero only for ``|i - j| < k``: with ``d = i - j`` and ``M = min(k -
1, n - 1 - i)`` (block i cut at row n, docs/math.md §2)

    <c_i, C e_j> = sum_{m = max(0, -d)}^{min(M, k - 1 - d)} c_m c_{m + d} = T[M, d + k - 1].

A count x_j > 0 thus touches the ``2k - 1`` dots around j; a row of counts with a few nonzero
entries (an escort draw participates a few times) costs O(n) to scan plus O(k) per nonzero
count, against O(n k) for the dense mean and its correlation.
"""

from __future__ import annotations

import functools

import numpy as np

from minsep.schemes.kernels.blocks import effective_coefficients
from minsep.schemes.kernels.jit import njit

__all__ = ["add_count_signal", "count_table"]


@functools.lru_cache(maxsize=64)
def count_table(coefficients: tuple[float, ...], n_steps: int) -> np.ndarray:
    """``T[M, d + k - 1]`` of the module docstring, shape ``(k, 2k - 1)`` for the ``k``
    effective coefficients (read-only, cached)."""
    c = effective_coefficients(coefficients, n_steps)
    k = int(c.size)
    table = np.zeros((k, 2 * k - 1))
    for d in range(-(k - 1), k):
        low, high = max(0, -d), k - 1 - max(d, 0)  # m with both c_m and c_{m + d} defined
        running = np.cumsum(c[low : high + 1] * c[low + d : high + 1 + d])
        for big_m in range(low, k):
            table[big_m, d + k - 1] = running[min(big_m, high) - low]
    table.setflags(write=False)
    return table


def add_count_signal(
    values: np.ndarray,
    counts: np.ndarray,
    coefficients: tuple[float, ...],
    sigma: float,
    compiled: bool,
) -> np.ndarray:
    """``values <- sigma values + <c_i, C counts>`` in place (float64 ``(S, n)`` C-contiguous
    noise correlations, integer counts of the same shape) and return it: the compiled row
    kernel when ``compiled``, else array code over the nonzero counts (the same sums)."""
    n = int(values.shape[1])
    table = count_table(tuple(float(x) for x in coefficients), n)
    if counts.shape != values.shape:
        raise ValueError(f"counts {counts.shape} and values {values.shape} differ in shape")
    if compiled:
        _add_count_signal_rows(values, counts, float(sigma), table)
        return values
    values *= sigma
    k = table.shape[0]
    rows, steps = np.nonzero(counts)
    weights = counts[rows, steps].astype(np.float64)
    for d in range(-(k - 1), k):
        dots = steps + d
        keep = (dots >= 0) & (dots < n)
        at = dots[keep]
        # (row, step) pairs are distinct, so are (row, step + d): a plain += adds each once
        values[rows[keep], at] += weights[keep] * table[np.minimum(k - 1, n - 1 - at), d + k - 1]
    return values


@njit
def _add_count_signal_rows(
    values: np.ndarray, counts: np.ndarray, sigma: float, table: np.ndarray
) -> None:  # pragma: no cover - compiled; pinned against the array code and dense y
    n_rows, n = values.shape
    k = table.shape[0]
    for r in range(n_rows):
        row = values[r]
        for i in range(n):
            row[i] *= sigma
        count = counts[r]
        for j in range(n):
            x = count[j]
            if x == 0:
                continue
            weight = float(x)
            for i in range(max(0, j - k + 1), min(n, j + k)):
                row[i] += weight * table[min(k - 1, n - 1 - i), i - j + k - 1]
