"""Sensitivity of a banded Toeplitz strategy under b-min-sep participation (docs/math.md §4).

    S = max_{pi} || sum_{j in pi} C[:, j] ||_2

over participation sets ``pi`` of {1..n} with pairwise gaps ``>= b`` (``min_sep``) and at most
``K`` (``max_participations``) elements. Write ``G = C^T C``; ``S^2 = max_pi sum_{i,j in pi}
G_ij``, and for Toeplitz ``C`` with ``i <= j``: ``G_ij = sum_{t=0}^{min(k-1, n-1-j)} c_t
c_{t+j-i}`` (``c_m = 0`` for m >= k).

Let ``pi* = {1, 1+b, 1+2b, ...}`` with ``K' = min(K, ceil(n/b))`` elements.

- **Exact, any coefficients, b >= k.** Columns at least k apart have disjoint supports, so
  ``S^2 = max sum_{j in pi} ||C[:, j]||^2``; column norms are non-increasing in j (later
  columns are cut at row n), so ``pi*`` attains the maximum.
- **Exact, non-negative non-increasing coefficients, any b.** Then ``G_ij >= 0``, ``G_ij`` is
  non-increasing in the lag ``j - i`` and in the later index ``j``. Match the a-th smallest
  element ``p_a`` of any feasible ``pi`` with ``q_a = 1 + (a-1)b <= p_a``: lags in ``pi`` are at
  least those in ``pi*`` and indices are later, so each ``G`` term of ``pi`` is at most its
  counterpart in ``pi*``, and ``pi*`` has at least as many (non-negative) terms.
- **Upper bound, otherwise.** ``|G_ij(c)| <= G_ij(c~)`` entrywise, with ``c~`` the smallest
  non-increasing sequence above ``|c|`` (``c~_j = max_{i >= j} |c_i|``). Hence
  ``S(c) <= S(c~)``, which the previous case evaluates exactly at ``pi*``. Never under-reports;
  tight when ``c`` is non-negative and non-increasing (then ``c~ = c``).

Cost: O(n k) for the exact sum at ``pi*`` (a direct convolution), O(n) memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from minsep.framework.validation import check_range
from minsep.strategies.toeplitz import as_coefficients, check_steps


def _check(owner: str, n_steps: int, min_sep: int, max_participations: int) -> None:
    check_steps(owner, n_steps)
    check_range(owner, "min_sep", min_sep, low=1, integer=True)
    check_range(owner, "max_participations", max_participations, low=1, integer=True)


def sensitivity_is_exact(coefficients: Iterable[float] | np.ndarray, min_sep: int) -> bool:
    """True when :func:`sensitivity` returns the exact maximum (else a safe upper bound)."""
    c = as_coefficients(coefficients, owner="sensitivity_is_exact", allow_negative=True)
    check_range("sensitivity_is_exact", "min_sep", min_sep, low=1, integer=True)
    return bool(min_sep >= c.size or (np.all(c >= 0) and np.all(np.diff(c) <= 0)))


def participation_count(n_steps: int, min_sep: int, max_participations: int) -> int:
    """``K' = min(K, ceil(n / b))``: the most participations a b-min-sep pattern can have."""
    return min(int(max_participations), -(-int(n_steps) // int(min_sep)))


def sensitivity(
    coefficients: Iterable[float] | np.ndarray,
    n_steps: int,
    min_sep: int,
    max_participations: int,
) -> float:
    """``S`` of the module docstring for the banded Toeplitz ``C`` with first column ``c``.

    Exact when :func:`sensitivity_is_exact` holds (``min_sep >= bands``, or ``c`` non-negative
    and non-increasing), otherwise an upper bound. The coefficients are used as given (not
    normalised). Raises ConfigurationError naming a bad argument.
    """
    c = as_coefficients(coefficients, owner="sensitivity", allow_negative=True)
    _check("sensitivity", n_steps, min_sep, max_participations)
    n, b = int(n_steps), int(min_sep)
    count = participation_count(n, b, max_participations)
    positions = np.arange(count) * b
    k = c.size
    if b >= k:
        # Disjoint columns: ||C[:, j]||^2 = sum of c_t^2 over the rows t < n - j.
        prefix = np.cumsum(c * c)
        lengths = np.minimum(k, n - positions)
        return math.sqrt(float(np.sum(prefix[lengths - 1])))
    envelope = np.maximum.accumulate(np.abs(c)[::-1])[::-1]
    indicator = np.zeros(n)
    indicator[positions] = 1.0
    column_sum = np.convolve(indicator, envelope)[:n]
    return float(np.linalg.norm(column_sum))
