"""The grids of paper §7.1 (:mod:`minsep.paper.mse_comparison`): the paper's full grid, the
committed quick corner and the demo's setting, with the extra strategies compared."""

from __future__ import annotations

from typing import Any

import attrs

from minsep.framework.errors import ConfigurationError
from minsep.framework.setup import parse_strategy_spec
from minsep.framework.validation import (
    integer,
    one_of,
    optional,
    positive,
    positive_int,
    probability,
)
from minsep.paper.options import paper_samples, tuple_of

#: The families compared (DP-SGD and unamplified BandMF only as context rows).
FAMILIES: tuple[str, ...] = (
    "poisson",
    "cyclic_poisson",
    "balls_in_bins",
    "b_min_sep",
    "unamplified",
)


def _strategy_specs(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a (possibly empty) tuple of strategy specs of registered strategies."""
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(
            f"MSESettings.strategies = {value!r} is invalid: must be a tuple of strategy specs "
            "(name or name:key=value:...)",
            parameter="strategies",
        )
    for spec in value:
        parse_strategy_spec(spec, owner="MSESettings.strategies")


@attrs.frozen(kw_only=True)
class MSESettings:
    """The grid of one run (the paper's full grid by default).

    Attributes:
        n_steps: training steps n.
        delta: target delta.
        epsilons: target epsilons.
        epoch_lengths: |D|/B values; the participation rate is 1/|D|/B.
        bands: numbers of bands of the MSE-optimal banded Toeplitz strategies.
        samples: Monte Carlo verification samples per direction (None: ``paper_samples``).
        families: schemes compared (a subset of :data:`FAMILIES`).
        strategies: extra strategy specs compared besides the bands grid (see the module).
    """

    n_steps: int = attrs.field(default=1024, validator=positive_int())
    delta: float = attrs.field(default=1e-3, validator=probability(open_high=True))
    epsilons: tuple[float, ...] = attrs.field(
        default=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0), validator=tuple_of(positive())
    )
    epoch_lengths: tuple[int, ...] = attrs.field(
        default=(128, 256, 512, 1024), validator=tuple_of(positive_int())
    )
    bands: tuple[int, ...] = attrs.field(
        default=(2, 4, 8, 16, 32), validator=tuple_of(positive_int())
    )
    samples: int | None = attrs.field(default=None, validator=optional(integer(low=100)))
    families: tuple[str, ...] = attrs.field(default=FAMILIES, validator=tuple_of(one_of(*FAMILIES)))
    strategies: tuple[str, ...] = attrs.field(default=(), validator=_strategy_specs)

    def resolved_samples(self) -> int:
        """``samples``, or :func:`paper_samples` of ``delta`` when None."""
        return self.samples if self.samples is not None else paper_samples(self.delta)

    def min_seps(self, bands: int, epoch_length: int) -> tuple[int, ...]:
        """The powers of two b with ``bands <= b <= epoch_length`` (the paper's b grid)."""
        return tuple(
            2**e for e in range(epoch_length.bit_length()) if bands <= 2**e <= epoch_length
        )

    def monte_carlo_rows(self) -> int:
        """How many Monte Carlo calibrations the grid needs (b-min-sep and balls-in-bins; an
        extra strategy counted at every b, as a strategy that is not banded)."""
        per_setup = 0
        for length in self.epoch_lengths:
            for k in self.bands:
                if "b_min_sep" in self.families:
                    per_setup += len(self.min_seps(k, length))
                if "balls_in_bins" in self.families:
                    per_setup += 1
            if "b_min_sep" in self.families:
                per_setup += len(self.strategies) * len(self.min_seps(1, length))
        return per_setup * len(self.epsilons)


#: The paper's grid (§7.1).
FULL = MSESettings()

#: The demo's setting (n = 1024, |D|/B = 256, delta = 1e-3, epsilon = 2) with the MSE-optimal
#: banded grid and its max-objective variant as extra strategy; the strategies that are not
#: banded are added on the command line (``--strategies blt,banded_inverse``).
DEMO = MSESettings(
    epsilons=(2.0,),
    epoch_lengths=(256,),
    bands=(4, 8, 16),
    strategies=("banded_toeplitz:bands=8:objective=max",),
)

#: The committed quick run: a corner of the paper's grid at the paper's n, delta and sample
#: count (verification at delta/2).
QUICK = MSESettings(epsilons=(1.0, 4.0), epoch_lengths=(128, 1024), bands=(4, 16))


__all__ = ["DEMO", "FAMILIES", "FULL", "QUICK", "MSESettings"]
