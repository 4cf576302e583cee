"""Shared implementation for lower-triangular Toeplitz strategies that are not banded (BLT,
banded inverse; docs/math.md §8.4-§8.6).

A subclass provides the first column of C (:meth:`column`), the first column of ``C^-1``
(:meth:`inverse_column`) and the streaming noise; the matrix, Gram entries, workload error and
sensitivity follow here. Such a C is not banded: :attr:`coefficients` and :attr:`bands` raise
NotAccountableError, so b-min-sep loss models refuse it rather than treat it as banded.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from minsep.framework.workloads import Workload
from minsep.strategies import columns
from minsep.strategies.checked import CheckedStrategy
from minsep.strategies.sensitivity import sensitivity as column_sensitivity
from minsep.strategies.sensitivity import sensitivity_is_exact as column_sensitivity_is_exact
from minsep.strategies.toeplitz import check_steps


class LowerToeplitzStrategy(CheckedStrategy):
    """A lower-triangular Toeplitz C given through its first column (not banded)."""

    @abstractmethod
    def column(self, n_steps: int) -> np.ndarray:
        """The first column ``c_0..c_{n-1}`` of C (non-negative, ``c_0 > 0``)."""

    @abstractmethod
    def inverse_column(self, n_steps: int) -> np.ndarray:
        """The first column of ``C^-1`` (length n)."""

    @property
    def is_banded(self) -> bool:
        """False: C has no finite number of bands."""
        return False

    @property
    def coefficients(self) -> np.ndarray:
        """Not available: raises NotAccountableError (C is not banded; use
        :meth:`toeplitz_column`)."""
        raise self.not_banded_error("banded coefficients")

    def matrix(self, n_steps: int) -> np.ndarray:
        """The dense n x n C (small n)."""
        return columns.dense(self.column(check_steps(self._owner("matrix"), n_steps)))

    def toeplitz_column(self, n_steps: int) -> np.ndarray:
        """:meth:`column`: C is Toeplitz."""
        return self.column(check_steps(self._owner("toeplitz_column"), n_steps))

    def column_gram(self, n_steps: int) -> np.ndarray:
        """``C^T C`` in O(n^2) from the first column."""
        return columns.gram(self.column(check_steps(self._owner("column_gram"), n_steps)))

    def column_inner_products(self, n_steps: int, i: Any, j: Any) -> np.ndarray:
        """``(C^T C)[i, j]``, O(n) per entry."""
        n = check_steps(self._owner("column_inner_products"), n_steps)
        return columns.inner_products(self.column(n), i, j)

    def mse(self, n_steps: int, workload: Workload | None = None) -> float:
        """``(1/n) ||A C^-1||_F^2`` from the inverse column: O(n + cost of the column) for a
        constant learning rate, O(n^2) time and O(n) memory for a decaying one."""
        n = check_steps(self._owner("mse"), n_steps)
        return columns.workload_error(self.inverse_column(n), workload) / n

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        """b-min-sep sensitivity from the first column (docs/math.md §4, §8.7): exact when
        the column is non-increasing (or only one participation fits), else the
        non-increasing-envelope upper bound. O(n^2 / ...) by a direct convolution."""
        n = check_steps(self._owner("sensitivity"), n_steps)
        return column_sensitivity(self.column(n), n, min_sep, max_participations)

    def _exact(self, min_sep: int, n_steps: int | None, max_participations: int | None) -> bool:
        """True when the first column over ``n_steps`` steps is non-increasing (then
        :meth:`sensitivity` is exact); without ``n_steps``, False (it may be a bound)."""
        if n_steps is None:
            return False
        n = self._steps("sensitivity_is_exact", n_steps)
        return column_sensitivity_is_exact(self.column(n), min_sep)
