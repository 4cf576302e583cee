"""Columns of a general (not banded) strategy C for the r-min-sep bound (docs/math.md §2.1).

The bound of paper App. B.1 needs, per step i, the full column c_i = C[:, i] (all rows, not a
block): the products ``<c_i, v>`` for a batch of vectors v (that is ``C^T v``), the norms
``||c_i||^2``, and the Gram matrix ``G = C^T C`` whose off-diagonal entries are the cross terms
``c_i^T c_j``. Two representations give them:

- :class:`ToeplitzColumns`: C lower-triangular Toeplitz with first column t (length n). Then
  ``<c_i, v> = sum_{m < n-i} t_m v_{i+m}`` is the sliding product of §2 over the whole column
  (FFT above a few non-zero entries) and ``||c_i||^2 = sum_{m < n-i} t_m^2`` (the tail norms of
  §2), O(n log n) per vector;
- :class:`DenseColumns`: any n x n C, ``C^T v`` by a matrix product, O(n^2) per vector.

:func:`strategy_columns` picks the first whenever the strategy reports a Toeplitz column.
Every array method takes the array namespace ``xp``; the host-side pieces (norms, Gram
matrix) are numpy float64.
"""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Strategy
from minsep.schemes.kernels.blocks import causal_convolve, sliding_dot, tail_norms

#: Negative entries of C down to this fraction of its largest entry are taken as rounding (a
#: numerically computed non-negative strategy); the bound stays rigorous for them (§2.1).
NEGATIVE_TOLERANCE = 1e-9


class Columns(Protocol):
    """What the r-min-sep loss model needs of C."""

    @property
    def n_steps(self) -> int:
        """n, the size of C."""

    def correlate(self, v: Any, xp: Any) -> Any:
        """``out[..., i] = <c_i, v[..., :]>`` (``v @ C``), float64 ``(..., n)`` of ``xp``."""

    def apply(self, x: Any, xp: Any) -> Any:
        """``(C x)[..., t]`` along the last axis, float64 ``(..., n)`` of ``xp``."""

    def norms(self) -> np.ndarray:
        """``||c_i||^2`` for i = 0..n-1 (host float64)."""

    def gram(self) -> np.ndarray:
        """``G = C^T C``, ``G[i, j] = <c_i, c_j>`` (host float64, n x n)."""


def _check_entries(owner: str, name: str, values: np.ndarray) -> np.ndarray:
    """Finite, non-negative up to :data:`NEGATIVE_TOLERANCE`, not all zero."""
    values = np.asarray(values, dtype=np.float64)
    allowed = "finite, entrywise non-negative (C >= 0, docs/math.md §1) and not all zero"
    if not np.all(np.isfinite(values)):
        raise ConfigurationError(
            f"{owner}.{name} has non-finite entries: must be {allowed}", parameter=name
        )
    top = float(np.max(np.abs(values))) if values.size else 0.0
    if top == 0.0:
        raise ConfigurationError(f"{owner}.{name} is all zero: must be {allowed}", parameter=name)
    low = float(np.min(values))
    if low < -NEGATIVE_TOLERANCE * top:
        raise ConfigurationError(
            f"{owner}.{name} has the entry {low!r} < 0: must be {allowed}", parameter=name
        )
    return values


def _toeplitz_column(instance: Any, attribute: Any, value: np.ndarray) -> None:
    if value.ndim != 1 or value.size < 1:
        raise ConfigurationError(
            f"ToeplitzColumns.column has shape {value.shape}: must be a vector of length n >= 1",
            parameter="column",
        )
    _check_entries("ToeplitzColumns", "column", value)


def _dense_matrix(instance: Any, attribute: Any, value: np.ndarray) -> None:
    if value.ndim != 2 or value.shape[0] != value.shape[1] or value.shape[0] < 1:
        raise ConfigurationError(
            f"DenseColumns.matrix has shape {value.shape}: must be square n x n with n >= 1",
            parameter="matrix",
        )
    _check_entries("DenseColumns", "matrix", value)


def _as_float_array(value: Any) -> np.ndarray:
    try:
        return np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"strategy columns {value!r} are invalid: must be an array of reals"
        ) from None


def _checked_gram(gram: np.ndarray, n_steps: int) -> np.ndarray:
    """A Gram matrix supplied by the strategy (``column_gram``): n x n and finite."""
    gram = np.asarray(gram, dtype=np.float64)
    if gram.shape != (n_steps, n_steps) or not np.all(np.isfinite(gram)):
        raise ConfigurationError(
            f"strategy columns: known_gram of shape {gram.shape} is invalid: must be a finite "
            f"{n_steps} x {n_steps} matrix (C^T C)",
            parameter="known_gram",
        )
    return gram


@attrs.frozen(eq=False)
class ToeplitzColumns:
    """Lower-triangular Toeplitz C given by its first column t (length n, ``C[i, j] =
    t[i - j]`` for i >= j).

    Attributes:
        column: t_0..t_{n-1}, finite and non-negative.
    """

    column: np.ndarray = attrs.field(converter=_as_float_array, validator=_toeplitz_column)
    known_gram: np.ndarray | None = attrs.field(default=None, kw_only=True, repr=False)

    @property
    def n_steps(self) -> int:
        return int(self.column.size)

    def _support(self) -> tuple[float, ...]:
        """t up to its last non-zero entry (a banded C stays cheap: the direct sum of §2)."""
        nonzero = np.flatnonzero(self.column)
        return tuple(float(v) for v in self.column[: int(nonzero[-1]) + 1])

    def correlate(self, v: Any, xp: Any) -> Any:
        return sliding_dot(v, self._support(), xp)

    def apply(self, x: Any, xp: Any) -> Any:
        return causal_convolve(x, self._support(), xp)

    def norms(self) -> np.ndarray:
        return tail_norms(self._support(), self.n_steps)

    def matrix(self) -> np.ndarray:
        """The dense C."""
        n = self.n_steps
        lags = np.arange(n)[:, None] - np.arange(n)[None, :]
        return np.where(lags >= 0, self.column[np.clip(lags, 0, None)], 0.0)

    def gram(self) -> np.ndarray:
        if self.known_gram is not None:
            return _checked_gram(self.known_gram, self.n_steps)
        dense = self.matrix()
        return np.asarray(dense.T @ dense, dtype=np.float64)


@attrs.frozen(eq=False)
class DenseColumns:
    """Any n x n C (non-negative), held densely.

    Attributes:
        matrix: C, finite and non-negative.
    """

    matrix: np.ndarray = attrs.field(converter=_as_float_array, validator=_dense_matrix)
    known_gram: np.ndarray | None = attrs.field(default=None, kw_only=True, repr=False)

    @property
    def n_steps(self) -> int:
        return int(self.matrix.shape[0])

    def correlate(self, v: Any, xp: Any) -> Any:
        return v @ xp.asarray(self.matrix)

    def apply(self, x: Any, xp: Any) -> Any:
        return x @ xp.asarray(np.ascontiguousarray(self.matrix.T))

    def norms(self) -> np.ndarray:
        return np.asarray(np.sum(self.matrix**2, axis=0), dtype=np.float64)

    def gram(self) -> np.ndarray:
        if self.known_gram is not None:
            return _checked_gram(self.known_gram, self.n_steps)
        return np.asarray(self.matrix.T @ self.matrix, dtype=np.float64)


def strategy_columns(strategy: Strategy, n_steps: int) -> ToeplitzColumns | DenseColumns:
    """The columns of ``strategy`` for ``n_steps`` steps: its Toeplitz first column when it has
    one (``strategy.toeplitz_column(n)``), else its dense ``matrix(n)``; the Gram matrix from
    the strategy's own ``column_gram(n)`` (structured and cheaper than ``C^T C``)."""
    column = strategy.toeplitz_column(n_steps)
    gram = strategy.column_gram(n_steps)
    if column is not None:
        return ToeplitzColumns(column, known_gram=gram)
    return DenseColumns(strategy.matrix(n_steps), known_gram=gram)


def cross_term_budgets(gram: np.ndarray, min_sep: int) -> tuple[np.ndarray, np.ndarray]:
    """``(up, down)``: for each step j, the most the cross terms of j with the **earlier**
    participations of a min-sep pattern can add to (``up``) or take from (``down``)
    ``||Cx||^2 / 2`` (docs/math.md §2.1).

    ``up[j] = max_S sum_{i in S} max(G[i, j], 0)`` and ``down[j] = max_S sum_{i in S}
    max(-G[i, j], 0)``, the maxima over the sets S of steps ``<= j - b`` that are pairwise at
    least b apart (the participations a pattern with min-sep b can have before j). Summing over
    the participations j of a pattern x counts every pair once, so

        -sum_{j in x} down[j] <= sum_{i < j in x} G[i, j] <= sum_{j in x} up[j].

    Each maximum is a weighted interval-scheduling recursion over i, run for all j at once:
    O(n^2) time, O(b n) memory beyond G.
    """
    n = int(gram.shape[0])
    b = int(min_sep)
    if b < 1:
        raise ConfigurationError(
            f"cross_term_budgets.min_sep = {min_sep!r} is invalid: must be an integer >= 1",
            parameter="min_sep",
        )
    steps = np.arange(n)
    out = []
    for sign in (1.0, -1.0):
        weights = np.maximum(sign * gram, 0.0)
        best = np.zeros(n)  # best over i' <= i, for every j (columns)
        history = [np.zeros(n) for _ in range(b)]  # history[i % b] = best after step i
        for i in range(n):
            usable = steps >= i + b  # i may precede j when j - i >= b
            take = np.where(usable, weights[i] + (history[(i - b) % b] if i >= b else 0.0), 0.0)
            best = np.maximum(best, take)
            history[i % b] = best
        out.append(best)
    return out[0], out[1]


def cross_term_ceiling(gram: np.ndarray, min_sep: int) -> float:
    """The largest ``|G[i, j]|`` over pairs at least ``min_sep`` apart (0 when there are none):
    how far the strategy is from having disjoint columns at this min-sep."""
    n = int(gram.shape[0])
    lags = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    far = lags >= min_sep
    return float(np.max(np.abs(gram[far]))) if np.any(far) else 0.0


__all__ = [
    "NEGATIVE_TOLERANCE",
    "Columns",
    "DenseColumns",
    "ToeplitzColumns",
    "cross_term_budgets",
    "cross_term_ceiling",
    "strategy_columns",
]
