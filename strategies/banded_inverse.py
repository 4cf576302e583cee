"""Banded-inverse strategies: ``C^-1`` is banded lower-triangular Toeplitz (docs/math.md §8.5).

``C^-1 = H`` has first column ``h_0..h_{k-1}`` (``h_0 > 0``; later entries may be negative).
C is lower-triangular Toeplitz with first column ``c = H^-1 e_0`` by forward substitution,

    c_0 = 1 / h_0,    c_m = -(1 / h_0) sum_{t=1}^{min(m, k-1)} h_t c_{m-t},

O(n k). C need not be non-negative for arbitrary ``h``, and the accounting needs it to be, so
**every method checks the column for the n it is asked about** (ConfigurationError naming
``coefficients`` and ``n_steps`` on a negative entry or an overflow), and :meth:`for_steps`
checks at construction for the run's n. The optimiser's parametrisation ``h(z) = h_0 prod_i
(1 - a_i z)`` with ``a_i`` in [0, 1) guarantees it: ``1/h(z)`` is then a product of geometric
series with non-negative coefficients. The noise ``C^-1 Z = H Z`` needs the last ``k - 1`` draws
only: O(k d) memory.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter
from minsep.framework.registries import strategies
from minsep.framework.workloads import workload_from_spec
from minsep.strategies.columns import padded
from minsep.strategies.filters import lfilter
from minsep.strategies.lower_toeplitz import LowerToeplitzStrategy
from minsep.strategies.toeplitz import as_coefficients, check_steps

#: Relative size below which a negative entry of C counts as rounding (``c_m >= -TOL max|c|``).
NEGATIVE_TOLERANCE = 1e-12


def _inverse_coefficients(values: Any) -> tuple[float, ...]:
    arr = as_coefficients(values, owner="BandedInverse", allow_negative=True)
    return tuple(float(v) for v in arr)


@functools.lru_cache(maxsize=8)
def _column(h: tuple[float, ...], n: int) -> np.ndarray:
    impulse = np.zeros(n)
    impulse[0] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.asarray(lfilter([1.0], np.array(h), impulse), dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ConfigurationError(
            f"BandedInverse.coefficients = {h!r} is invalid for n_steps = {n}: C overflows "
            "(h(z) has a zero inside the unit disc)",
            parameter="coefficients",
        )
    scale = np.maximum.accumulate(np.abs(c))
    bad = np.flatnonzero(c < -NEGATIVE_TOLERANCE * scale)
    if bad.size:
        m = int(bad[0])
        raise ConfigurationError(
            f"BandedInverse.coefficients = {h!r} is invalid for n_steps = {n}: C has a "
            f"negative entry c_{m} = {c[m]:.3g} (C must be entrywise non-negative; choose h "
            "with 1/h(z) having non-negative coefficients, e.g. h(z) = prod (1 - a_i z), "
            "0 <= a_i < 1)",
            parameter="coefficients",
        )
    c.setflags(write=False)
    return c


@strategies.register("banded_inverse")
@attrs.frozen
class BandedInverse(LowerToeplitzStrategy):
    """C with banded Toeplitz inverse ``H`` (first column ``h``; module docstring).

    Attributes:
        coefficients: ``h_0..h_{k-1}`` of ``C^-1`` (``h_0 > 0``, finite).
    """

    inverse_coefficients: tuple[float, ...] = attrs.field(
        converter=_inverse_coefficients, alias="coefficients"
    )

    @property
    def inverse_bands(self) -> int:
        """The number of bands k of ``C^-1``."""
        return len(self.inverse_coefficients)

    def public_parameters(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy_name,
            "inverse_coefficients": list(self.inverse_coefficients),
        }

    def column(self, n_steps: int) -> np.ndarray:
        """``c_0..c_{n-1}`` by forward substitution, checked non-negative (module docstring)."""
        n = check_steps(self._owner("column"), n_steps)
        return np.array(_column(self.inverse_coefficients, n))

    def inverse_column(self, n_steps: int) -> np.ndarray:
        """``h`` zero-padded (or cut) to length n; checks C for this n first."""
        n = check_steps(self._owner("inverse_column"), n_steps)
        _column(self.inverse_coefficients, n)
        return padded(np.array(self.inverse_coefficients), n)

    def _steps(self, method: str, n_steps: int) -> int:
        """``n_steps`` checked, and C checked non-negative over that many steps."""
        n = super()._steps(method, n_steps)
        _column(self.inverse_coefficients, n)
        return n

    def _stream(self, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any) -> Iterator[Any]:
        h = self.inverse_coefficients
        lags = len(h) - 1
        d = math.prod(shape)
        if lags == 0:
            for _ in range(n):
                z = xp.asarray(rng.standard_normal(shape), dtype=xp.float64)
                yield h[0] * z
            return
        # Ring buffer of the last k - 1 draws, as in minsep.strategies.noise: at step i, slot s
        # holds Z_{i-j} with j = ((i - s - 1) % lags) + 1, whose weight is h_j.
        base = xp.asarray([h[((-s - 1) % lags) + 1] for s in range(lags)], dtype=xp.float64)
        buffer = xp.zeros((lags, d), dtype=xp.float64)
        for i in range(n):
            z = xp.reshape(xp.asarray(rng.standard_normal(shape), dtype=xp.float64), (d,))
            out = h[0] * z + xp.roll(base, i % lags) @ buffer
            buffer[i % lags, :] = z
            yield xp.reshape(out, shape)

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``bands`` and ``workload`` (optimised), or fixed ``coefficients``."""
        return (
            Parameter("bands", "int", False, 2, "bands of the optimised inverse"),
            Parameter("workload", "str", False, "prefix", "workload it is optimised for"),
            Parameter("coefficients", "object", False, None, "fixed inverse coefficients"),
        )

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> BandedInverse:
        """``coefficients=...`` (fixed; C checked non-negative for ``n_steps``), or
        ``bands=k`` (default 2) and optionally ``workload=...`` (default prefix sums): the banded
        inverse optimised for that workload (:mod:`minsep.strategies.optimize_structured`)."""
        from minsep.strategies import optimize_structured

        n = check_steps("BandedInverse.for_steps", n_steps)
        allowed = {"coefficients", "bands", "workload"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ConfigurationError(
                f"BandedInverse.{unknown[0]} = {options[unknown[0]]!r} is invalid: not an "
                f"option of banded_inverse (allowed: {sorted(allowed)})",
                parameter=unknown[0],
            )
        if "coefficients" in options:
            if len(options) > 1:
                raise ConfigurationError(
                    f"BandedInverse.coefficients = {options['coefficients']!r} is invalid: must "
                    "not be combined with bands or workload",
                    parameter="coefficients",
                )
            strategy = cls(options["coefficients"])
        else:
            workload = workload_from_spec(options.get("workload", "prefix"))
            strategy = cls(
                optimize_structured.optimal_banded_inverse(n, options.get("bands", 2), workload)
            )
        strategy.column(n)  # non-negativity for this run
        return strategy

    @classmethod
    def example(cls) -> BandedInverse:
        """``h(z) = (1 - 0.6 z)(1 - 0.3 z)``: C non-negative for every n."""
        return cls((1.0, -0.9, 0.18))

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"coefficients": ()}, "coefficients"),
            ({"coefficients": (0.0, 1.0)}, "coefficients"),
            ({"coefficients": (1.0, float("nan"))}, "coefficients"),
            ({"coefficients": "abc"}, "coefficients"),
        ]
