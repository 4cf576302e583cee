"""A strategy given by an explicit lower-triangular matrix (small n: tests, toy studies;
docs/math.md §8.7).

The matrix ``C`` is ``m x m``; a run of ``n <= m`` steps uses its leading ``n x n`` block (the
mechanism is causal: step i's output only depends on the first i participations). Nothing is
assumed about its structure: it is not treated as banded even when it happens to be
(``is_banded`` is False), so only accounting that holds for any C applies to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter
from minsep.framework.registries import strategies
from minsep.strategies import pattern_sensitivity
from minsep.strategies.checked import CheckedStrategy
from minsep.strategies.toeplitz import check_steps

#: Largest matrix accepted (it is held dense, and its sensitivity may cost O(m^2 K)).
MAX_SIZE = 2048


def _as_matrix(values: Any) -> tuple[tuple[float, ...], ...]:
    """Converter: a square, finite, lower-triangular, non-negative matrix with a positive
    diagonal, as nested tuples (hashable and immutable)."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    shape_ok = arr is not None and arr.ndim == 2 and arr.shape[0] == arr.shape[1]
    if arr is None or not shape_ok or not 1 <= arr.shape[0] <= MAX_SIZE:
        raise ConfigurationError(
            f"Dense.matrix = {values!r} is invalid: must be a square 2-D array of size 1 to "
            f"{MAX_SIZE}",
            parameter="matrix",
        )
    problems = (
        (not np.all(np.isfinite(arr)), "finite"),
        (np.any(np.triu(arr, 1) != 0), "lower-triangular (zero above the diagonal)"),
        (np.any(arr < 0), "entrywise non-negative"),
        (not np.all(np.diag(arr) > 0), "invertible with a positive diagonal"),
    )
    for bad, must in problems:
        if bad:
            raise ConfigurationError(
                f"Dense.matrix = {values!r} is invalid: must be {must}", parameter="matrix"
            )
    return tuple(tuple(float(v) for v in row) for row in arr)


@strategies.register("dense")
@attrs.frozen
class Dense(CheckedStrategy):
    """An explicit lower-triangular, non-negative, invertible matrix (module docstring).

    Attributes:
        matrix_entries: the m x m matrix C (constructor keyword ``matrix``).
    """

    matrix_entries: tuple[tuple[float, ...], ...] = attrs.field(
        converter=_as_matrix, alias="matrix", repr=False
    )

    def __repr__(self) -> str:
        return f"Dense(size={self.size})"

    @property
    def size(self) -> int:
        """m: the largest number of steps the strategy covers."""
        return len(self.matrix_entries)

    @property
    def is_banded(self) -> bool:
        """False: no banded structure is assumed."""
        return False

    @property
    def coefficients(self) -> np.ndarray:
        """Not available: raises NotAccountableError (C is not banded Toeplitz)."""
        raise self.not_banded_error("banded coefficients")

    def public_parameters(self) -> dict[str, Any]:
        return {"strategy": self.strategy_name, "matrix": [list(r) for r in self.matrix_entries]}

    def _steps(self, method: str, n_steps: int) -> int:
        n = check_steps(f"Dense.{method}", n_steps)
        if n > self.size:
            raise ConfigurationError(
                f"Dense.{method}.n_steps = {n_steps!r} is invalid: must be an integer in "
                f"[1, {self.size}] (the size of the matrix)",
                parameter="n_steps",
            )
        return n

    def matrix(self, n_steps: int) -> np.ndarray:
        """The leading n x n block of C."""
        n = self._steps("matrix", n_steps)
        return np.array(self.matrix_entries, dtype=np.float64)[:n, :n]

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        """Exact by enumerating patterns when there are at most
        :data:`~minsep.strategies.pattern_sensitivity.ENUMERATION_LIMIT`, else the row bound
        (an upper bound; :mod:`minsep.strategies.pattern_sensitivity`)."""
        gram = self.column_gram(self._steps("sensitivity", n_steps))
        return pattern_sensitivity.sensitivity(gram, min_sep, max_participations)[0]

    def _exact(self, min_sep: int, n_steps: int | None, max_participations: int | None) -> bool:
        """True when the patterns for ``n_steps`` and ``max_participations`` are enumerated."""
        if n_steps is None:
            return False
        n = self._steps("sensitivity_is_exact", n_steps)
        K = n if max_participations is None else max_participations
        count = pattern_sensitivity.pattern_count(n, min_sep, K)
        return count <= pattern_sensitivity.ENUMERATION_LIMIT

    def _stream(self, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any) -> Iterator[Any]:
        """``(C^-1 Z)[i]`` by forward substitution; holds every earlier output (O(n d) memory:
        a general C has no shorter recursion)."""
        return _substitution(self.matrix(n), shape, n, rng, xp)

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``matrix`` (Python only)."""
        return (Parameter("matrix", "object", True, None, "the matrix C (n x n or larger)"),)

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> Dense:
        """``matrix=...`` (at least n_steps x n_steps); other options raise ConfigurationError."""
        if set(options) != {"matrix"}:
            extra = sorted(set(options) - {"matrix"})
            name = extra[0] if extra else "matrix"
            raise ConfigurationError(
                f"Dense.{name} = {options.get(name, '<missing>')!r} is invalid: dense takes "
                "exactly one option, matrix",
                parameter=name,
            )
        strategy = cls(options["matrix"])
        strategy._steps("for_steps", n_steps)
        return strategy

    @classmethod
    def example(cls) -> Dense:
        """A 24 x 24 non-Toeplitz example: geometric decay with column-dependent rates."""
        m = 24
        lag = np.subtract.outer(np.arange(m), np.arange(m))
        rate = 0.3 + 0.4 * (np.arange(m) % 3) / 2.0
        return cls(np.where(lag >= 0, rate[None, :] ** np.clip(lag, 0, None), 0.0))

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"matrix": [[1.0, 0.0]]}, "matrix"),
            ({"matrix": [[1.0, 0.5], [0.5, 1.0]]}, "matrix"),
            ({"matrix": [[1.0, 0.0], [-0.5, 1.0]]}, "matrix"),
            ({"matrix": [[0.0, 0.0], [0.5, 1.0]]}, "matrix"),
            ({"matrix": [[1.0, 0.0], [float("nan"), 1.0]]}, "matrix"),
            ({"matrix": "abc"}, "matrix"),
        ]


def _substitution(
    C: np.ndarray, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any
) -> Iterator[Any]:
    """``(C^-1 Z)[i]``, i = 1..n, by forward substitution over the earlier outputs."""
    d = int(np.prod(shape, dtype=np.int64))
    outputs = xp.zeros((n, d), dtype=xp.float64)
    for i in range(n):
        z = xp.reshape(xp.asarray(rng.standard_normal(shape), dtype=xp.float64), (d,))
        row = xp.asarray(C[i, :i], dtype=xp.float64)
        out = (z - row @ outputs[:i]) / float(C[i, i])
        outputs[i, :] = out
        yield xp.reshape(out, shape)
