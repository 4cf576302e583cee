"""Sensitivity of an arbitrary lower-triangular C under b-min-sep participation (docs/math.md
§4, §8.7), from its Gram matrix ``G = C^T C``:

    S^2 = max_pi sum_{i, j in pi} G_ij

over non-empty patterns ``pi`` of {0..n-1} with gaps ``>= b`` and at most ``K`` elements.

- **Exact** by enumeration when there are at most :data:`ENUMERATION_LIMIT` patterns.
- **Upper bound** otherwise. For any feasible ``pi`` and ``i`` in ``pi``, ``sum_{j in pi} G_ij
  <= M_i := max over feasible pi' containing i of sum_{j in pi'} G_ij``, so ``S^2 <= max_pi
  sum_{i in pi} M_i``. Both maxima are over b-separated sets of at most K positions with
  additive weights, which a dynamic programme solves exactly (O(n K) each, O(n^2 K) in all).
  Valid for any signs of ``G``; tight when one pattern maximises every row sum at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from minsep.framework.validation import check_range

#: Most patterns :func:`sensitivity` enumerates before it falls back to the bound.
ENUMERATION_LIMIT = 20_000


def _check(owner: str, n: int, min_sep: int, max_participations: int) -> None:
    check_range(owner, "n_steps", n, low=1, integer=True)
    check_range(owner, "min_sep", min_sep, low=1, integer=True)
    check_range(owner, "max_participations", max_participations, low=1, integer=True)


def pattern_count(n_steps: int, min_sep: int, max_participations: int) -> int:
    """The number of non-empty b-separated subsets of {0..n-1} with at most K elements."""
    _check("pattern_count", n_steps, min_sep, max_participations)
    n, b, K = int(n_steps), int(min_sep), int(max_participations)
    # ways[t][m]: subsets of {t..n-1} with exactly m elements (python ints: no overflow).
    ways = [[0] * (K + 1) for _ in range(n + b + 1)]
    for t in range(n + b, -1, -1):
        ways[t][0] = 1
        if t < n:
            for m in range(1, K + 1):
                ways[t][m] = ways[t + 1][m] + ways[min(t + b, n)][m - 1]
    return sum(ways[0][1:])


def patterns(n_steps: int, min_sep: int, max_participations: int) -> Iterator[tuple[int, ...]]:
    """Every non-empty b-separated pattern with at most K elements (increasing tuples)."""
    _check("patterns", n_steps, min_sep, max_participations)
    n, b, K = int(n_steps), int(min_sep), int(max_participations)

    def extend(prefix: tuple[int, ...], start: int) -> Iterator[tuple[int, ...]]:
        for t in range(start, n):
            pattern = (*prefix, t)
            yield pattern
            if len(pattern) < K:
                yield from extend(pattern, t + b)

    return extend((), 0)


def exact_square(gram: np.ndarray, min_sep: int, max_participations: int) -> float:
    """``S^2`` by enumerating every pattern (cost: :func:`pattern_count` patterns)."""
    n = gram.shape[0]
    best = -math.inf
    for pattern in patterns(n, min_sep, max_participations):
        idx = np.array(pattern)
        best = max(best, float(gram[np.ix_(idx, idx)].sum()))
    return best


def best_separated(weights: np.ndarray, min_sep: int, max_participations: int) -> float:
    """``max sum_{i in S} w_i`` over b-separated sets S with at most K elements (empty: 0)."""
    n, b, K = weights.size, int(min_sep), int(max_participations)
    best = np.zeros((n + b + 1, K + 1))  # best[t, m]: within {t..n-1}, at most m elements
    for t in range(n - 1, -1, -1):
        take = weights[t] + best[min(t + b, n), :-1]
        best[t, 1:] = np.maximum(best[t + 1, 1:], take)
    return float(best[0, K])


def _side_tables(row: np.ndarray, b: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """``left[t, m]``: best within {0..t-1}; ``right[t, m]``: best within {t..n-1}; at most m
    b-separated elements with weights ``row`` (empty sets allowed)."""
    n = row.size
    right = np.zeros((n + b + 1, K + 1))
    for t in range(n - 1, -1, -1):
        right[t, 1:] = np.maximum(right[t + 1, 1:], row[t] + right[min(t + b, n), :-1])
    left = np.zeros((n + 1, K + 1))
    for t in range(1, n + 1):
        take = row[t - 1] + left[max(t - b, 0), :-1]
        left[t, 1:] = np.maximum(left[t - 1, 1:], take)
    return left, right


def row_bound_square(gram: np.ndarray, min_sep: int, max_participations: int) -> float:
    """The upper bound on ``S^2`` of the module docstring (O(n^2 K))."""
    n, b, K = gram.shape[0], int(min_sep), int(max_participations)
    rows = np.empty(n)
    for i in range(n):
        left, right = _side_tables(gram[i], b, K)
        before = left[max(i - b + 1, 0)]  # positions <= i - b
        after = right[min(i + b, n)]  # positions >= i + b
        split = before[:K][:, None] + after[:K][None, :]
        m = np.add.outer(np.arange(K), np.arange(K))
        rows[i] = gram[i, i] + float(np.max(np.where(m <= K - 1, split, -np.inf)))
    return max(best_separated(rows, b, K), float(np.max(np.diag(gram))))


def sensitivity(gram: np.ndarray, min_sep: int, max_participations: int) -> tuple[float, bool]:
    """``(S, exact)`` for the Gram matrix ``gram``: exact by enumeration when affordable, else
    the row bound (never below the maximum)."""
    n = gram.shape[0]
    _check("sensitivity", n, min_sep, max_participations)
    if pattern_count(n, min_sep, max_participations) <= ENUMERATION_LIMIT:
        return math.sqrt(max(exact_square(gram, min_sep, max_participations), 0.0)), True
    return math.sqrt(max(row_bound_square(gram, min_sep, max_participations), 0.0)), False
