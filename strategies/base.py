"""Shared implementation of the Strategy interface for banded Toeplitz ``C`` (docs/math.md §1, §8).

Subclasses only provide :attr:`coefficients` (unit l2 norm, non-negative, ``c_0 > 0``); the
matrix, the prefix-sum MSE, the b-min-sep sensitivity and the streaming noise all follow from
the first column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.workloads import Workload
from minsep.strategies import columns, toeplitz
from minsep.strategies import noise as _noise
from minsep.strategies import sensitivity as _sensitivity
from minsep.strategies.checked import CheckedStrategy
from minsep.strategies.toeplitz import as_coefficients


class ToeplitzStrategy(CheckedStrategy):
    """A banded lower-triangular Toeplitz strategy given by its first-column coefficients."""

    @property
    def name(self) -> str:
        """The registered name (class name if unregistered)."""
        return getattr(type(self), "registry_name", type(self).__name__)

    def matrix(self, n_steps: int) -> np.ndarray:
        """The dense n x n ``C`` with ``C[i, j] = c[i - j]`` for ``0 <= i - j < bands``."""
        toeplitz.check_steps(self._owner("matrix"), n_steps)
        return toeplitz.toeplitz_matrix(self.coefficients, n_steps)

    def toeplitz_column(self, n_steps: int) -> np.ndarray:
        """The first column of C: the coefficients zero-padded (or cut) to length n."""
        toeplitz.check_steps(self._owner("toeplitz_column"), n_steps)
        return columns.padded(self.coefficients, n_steps)

    def column_gram(self, n_steps: int) -> np.ndarray:
        """``C^T C`` in O(n^2) from the first column (docs/math.md §8.6)."""
        return columns.gram(self.toeplitz_column(n_steps))

    def column_inner_products(self, n_steps: int, i: Any, j: Any) -> np.ndarray:
        """``(C^T C)[i, j]``: O(bands) per entry (the column has ``bands`` non-zeros)."""
        n = toeplitz.check_steps(self._owner("column_inner_products"), n_steps)
        c = self.coefficients
        ii, jj = np.broadcast_arrays(np.asarray(i), np.asarray(j))
        columns.check_indices(ii, jj, n)
        lag = np.abs(ii - jj)
        rows = n - np.maximum(ii, jj)
        out = np.zeros(ii.shape)
        for t in range(c.size):
            partner = t + lag
            ok = (partner < c.size) & (t < rows)
            out = out + np.where(ok, c[t] * c[np.minimum(partner, c.size - 1)], 0.0)
        return out

    def mse(self, n_steps: int, workload: Workload | None = None) -> float:
        """``(1/n) ||A C^-1||_F^2`` from the first column of ``C^-1`` (O(n * bands) for a
        constant learning rate, O(n^2) otherwise; docs/math.md §8.3). Equals
        :meth:`prefix_mse` for prefix sums."""
        n = toeplitz.check_steps(self._owner("mse"), n_steps)
        return columns.workload_error(self.inverse_coefficients(n), workload) / n

    def inverse_coefficients(self, n_steps: int) -> np.ndarray:
        """The first column of ``C^-1`` (length n), O(n * bands)."""
        toeplitz.check_steps(self._owner("inverse_coefficients"), n_steps)
        return toeplitz.inverse_coefficients(self.coefficients, n_steps)

    def prefix_mse(self, n_steps: int) -> float:
        """``(1/n) ||A C^-1||_F^2`` in O(n * bands); with ``||c|| = 1`` this is the prefix-sum
        MSE at unit single-participation sensitivity (docs/math.md §8)."""
        toeplitz.check_steps(self._owner("prefix_mse"), n_steps)
        return toeplitz.prefix_mse(self.coefficients, n_steps)

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        """``max ||sum_{j in pi} C[:, j]||_2`` over b-min-sep patterns with at most ``K``
        participations (docs/math.md §4). Exact when the coefficients are non-increasing (always
        true for the optimiser's output in practice) or ``min_sep >= bands``; otherwise a
        guaranteed upper bound (see :mod:`minsep.strategies.sensitivity`)."""
        return _sensitivity.sensitivity(self.coefficients, n_steps, min_sep, max_participations)

    def _exact(self, min_sep: int, n_steps: int | None, max_participations: int | None) -> bool:
        """True when :meth:`sensitivity` is exact rather than an upper bound (for every
        ``n_steps`` and ``max_participations``: they are accepted and ignored)."""
        return _sensitivity.sensitivity_is_exact(self.coefficients, min_sep)

    def _stream(self, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any) -> Iterator[Any]:
        """The banded recursion, holding O(bands * prod(shape)) memory."""
        c = as_coefficients(self.coefficients, owner=self._owner("noise"), allow_negative=True)
        return _noise._stream(c, shape, n, rng, xp)

    def public_parameters(self) -> dict[str, Any]:
        """The strategy as plain data (for results and records)."""
        return {
            "strategy": self.name,
            "bands": self.bands,
            "coefficients": [float(v) for v in self.coefficients],
        }
