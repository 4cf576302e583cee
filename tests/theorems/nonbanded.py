"""Test-only strategies that are not banded (docs/math.md §2.1), written against the agreed
Strategy interface (``is_banded``, ``toeplitz_column``, ``matrix``) and deliberately plain:
dense matrices built element by element."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Strategy


def toeplitz_from_column(column: Sequence[float]) -> np.ndarray:
    """``C[i, j] = t[i - j]`` for i >= j."""
    n = len(column)
    C = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            C[i, j] = column[i - j]
    return C


def geometric_column(n: int, ratio: float) -> np.ndarray:
    """``t_m = ratio^m``, normalised to unit norm."""
    column = ratio ** np.arange(n, dtype=float)
    return column / np.linalg.norm(column)


def inverse_banded_column(inverse: Sequence[float], n: int) -> np.ndarray:
    """First column t of C when C^-1 is lower-triangular Toeplitz with first column ``inverse``
    (banded): forward substitution of ``sum_j h_j t_{m-j} = [m = 0]``, written out."""
    h = list(inverse)
    t = np.zeros(n)
    for m in range(n):
        acc = 1.0 if m == 0 else 0.0
        for j in range(1, min(m, len(h) - 1) + 1):
            acc -= h[j] * t[m - j]
        t[m] = acc / h[0]
    return t


def random_lower_triangular(n: int, seed: int) -> np.ndarray:
    """A dense non-negative lower-triangular C with a positive diagonal (no structure)."""
    gen = np.random.default_rng(seed)
    C = np.tril(gen.uniform(0.0, 1.0, size=(n, n)))
    C[np.diag_indices(n)] += 0.5
    return C


class DenseTestStrategy(Strategy):
    """A fixed n x n C; Toeplitz when ``column`` is given (its first column)."""

    def __init__(self, matrix: np.ndarray, column: np.ndarray | None = None) -> None:
        self._matrix = np.asarray(matrix, dtype=float)
        self._column = None if column is None else np.asarray(column, dtype=float)

    @classmethod
    def toeplitz(cls, column: Sequence[float]) -> DenseTestStrategy:
        return cls(toeplitz_from_column(column), np.asarray(column, dtype=float))

    @property
    def is_banded(self) -> bool:
        return False

    @property
    def coefficients(self) -> np.ndarray:
        raise self.not_banded_error("coefficients")

    def public_parameters(self) -> dict[str, Any]:
        return {"strategy": "dense-test", "n_steps": int(self._matrix.shape[0])}

    def _check(self, n_steps: int) -> None:
        if n_steps != self._matrix.shape[0]:
            raise ConfigurationError(
                f"DenseTestStrategy.n_steps = {n_steps} is invalid: must be {self._matrix.shape[0]}"
            )

    def toeplitz_column(self, n_steps: int) -> np.ndarray | None:
        self._check(n_steps)
        return None if self._column is None else self._column.copy()

    def matrix(self, n_steps: int) -> np.ndarray:
        self._check(n_steps)
        return self._matrix.copy()

    def prefix_mse(self, n_steps: int) -> float:
        self._check(n_steps)
        A = np.tril(np.ones((n_steps, n_steps)))
        return float(np.sum((A @ np.linalg.inv(self._matrix)) ** 2) / n_steps)

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        raise NotImplementedError

    def noise(self, shape: Sequence[int], n_steps: int, rng: Any, backend: Any) -> Iterator[Any]:
        raise NotImplementedError
