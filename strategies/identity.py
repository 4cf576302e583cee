"""The identity strategy: DP-SGD, independent noise at every step (docs/math.md §4)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import strategies
from minsep.strategies.base import ToeplitzStrategy


@strategies.register("identity")
@attrs.frozen
class Identity(ToeplitzStrategy):
    """C = I (DP-SGD): one band with coefficient 1; ``prefix_mse(n) = (n + 1) / 2``."""

    @property
    def coefficients(self) -> np.ndarray:
        """``[1.0]``."""
        return np.ones(1)

    @property
    def bands(self) -> int:
        """Always 1."""
        return 1

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> Identity:
        """``Identity()``; the identity takes no options."""
        if options:
            option, value = next(iter(options.items()))
            raise ConfigurationError(
                f"Identity.{option} = {value!r} is invalid: the identity strategy takes no options"
            )
        return cls()

    @classmethod
    def example(cls) -> Identity:
        return cls()
