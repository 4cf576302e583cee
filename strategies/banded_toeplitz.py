"""BandMF: a banded Toeplitz strategy, fixed or MSE-optimal (docs/math.md §1, §8)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter
from minsep.framework.registries import strategies
from minsep.strategies import optimize
from minsep.strategies.base import ToeplitzStrategy
from minsep.strategies.toeplitz import as_coefficients, unit_norm


def _unit_coefficients(values: Any) -> tuple[float, ...]:
    """Converter: validate (non-empty, finite, non-negative, c_0 > 0), then scale to unit norm."""
    return unit_norm(as_coefficients(values, owner="BandedToeplitz"))


@strategies.register("banded_toeplitz")
@attrs.frozen
class BandedToeplitz(ToeplitzStrategy):
    """Banded lower-triangular Toeplitz C with first column ``c`` (BandMF; bands = len(c)).

    ``coefficients`` may be given at any positive scale: they are validated (non-empty, finite,
    entrywise non-negative, ``c_0 > 0``) and **normalised to unit l2 norm** at construction,
    since scaling C only rescales the noise multiplier (docs/math.md §1). ``BandedToeplitz((1.0,))``
    is the identity. Use :meth:`optimal` (or :meth:`for_steps`) for MSE-optimal coefficients.
    """

    _coefficients: tuple[float, ...] = attrs.field(
        converter=_unit_coefficients, alias="coefficients"
    )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(coefficients={self._coefficients!r})"

    @property
    def coefficients(self) -> np.ndarray:
        """The unit-norm first-column coefficients ``c_0..c_{k-1}`` (a fresh array)."""
        return np.array(self._coefficients, dtype=np.float64)

    @property
    def bands(self) -> int:
        """The number of bands k."""
        return len(self._coefficients)

    @classmethod
    def optimal(
        cls, n_steps: int, bands: int, objective: str = "mean", *, cache: bool = True
    ) -> BandedToeplitz:
        """The MSE-optimal ``bands``-banded Toeplitz strategy for ``n_steps`` steps.

        Minimises ``||c||^2 (1/n)||A C^-1||_F^2`` (``objective="mean"``) or ``||c||^2 max_i
        ||(A C^-1)[i, :]||^2`` (``"max"``) over non-negative ``c`` with L-BFGS-B from
        ``c_j = C(2j, j)/4^j`` (McKenna 2025; see :mod:`minsep.strategies.optimize`).
        Deterministic and cached in memory and on disk (``cache=False`` recomputes).
        ``1 <= bands <= n_steps``; ``bands=1`` is the identity.
        """
        return cls(optimize.optimal_coefficients(n_steps, bands, objective, cache_results=cache))

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``bands`` and ``objective`` (:meth:`optimal`), or fixed ``coefficients``."""
        return (
            Parameter("bands", "int", False, None, "bands k of the MSE-optimal strategy"),
            Parameter("objective", "str", False, "mean", "MSE objective: mean or max"),
            Parameter("coefficients", "object", False, None, "fixed first column c"),
        )

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> BandedToeplitz:
        """The strategy for an ``n_steps`` run: ``bands=k`` (required) and optionally
        ``objective="mean"|"max"`` give :meth:`optimal`; ``coefficients=...`` instead gives
        fixed coefficients. Other options raise ConfigurationError."""
        allowed = {"bands", "objective", "coefficients"}
        for option in options:
            if option not in allowed:
                raise ConfigurationError(
                    f"BandedToeplitz.{option} = {options[option]!r} is invalid: not an option of "
                    f"banded_toeplitz (allowed: {sorted(allowed)})"
                )
        if "coefficients" in options:
            if len(options) > 1:
                raise ConfigurationError(
                    f"BandedToeplitz.coefficients = {options['coefficients']!r} is invalid: "
                    "must not be combined with bands or objective"
                )
            return cls(options["coefficients"])
        if "bands" not in options:
            raise ConfigurationError(
                "BandedToeplitz.bands = <missing> is invalid: must be an integer in "
                f"[1, {n_steps}] (pass bands=...)"
            )
        return cls.optimal(n_steps, options["bands"], options.get("objective", "mean"))

    @classmethod
    def example(cls) -> BandedToeplitz:
        """Three non-increasing bands (a fixed, not optimised, instance)."""
        return cls((1.0, 0.5, 0.25))

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"coefficients": ()}, "coefficients"),
            ({"coefficients": (0.0, 1.0)}, "coefficients"),
            ({"coefficients": (1.0, -0.1)}, "coefficients"),
            ({"coefficients": (1.0, float("nan"))}, "coefficients"),
            ({"coefficients": (1.0, float("inf"))}, "coefficients"),
            ({"coefficients": "abc"}, "coefficients"),
        ]
