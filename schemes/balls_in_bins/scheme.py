"""Balls-in-bins sampling (Chua et al. 2024; Choquette-Choo et al. 2024; docs/math.md §4).

Cycle length T = 1/p0. Each example draws one uniform bin s in [T] for the whole run and
participates at steps s, s+T, s+2T, ... The Monte Carlo loss is exact for any number of bands
(the mixture over the T bins is enumerated), even when T < bands.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import InfeasibleError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.registries import schemes
from minsep.framework.validation import MIN_RATE, check_range, positive_int
from minsep.framework.validation import steps as steps_validator
from minsep.schemes import _accounting as acc
from minsep.schemes.base import Keep, SchemeBase, check_options

#: ``from_rate`` accepts a rate when ``|1/rate - round(1/rate)| <= INTEGRAL_TOLERANCE *
#: max(1, round(1/rate))``.
INTEGRAL_TOLERANCE = 1e-9


def cycle_length_for(rate: float) -> int:
    """The integral cycle length T = 1/rate; InfeasibleError when 1/rate is not an integer."""
    check_range("BallsInBins", "rate", rate, low=MIN_RATE, high=1.0)
    inverse = 1.0 / float(rate)
    cycle = round(inverse)
    if abs(inverse - cycle) > INTEGRAL_TOLERANCE * max(1, cycle):
        raise InfeasibleError(
            f"BallsInBins.rate = {rate!r} is infeasible: balls-in-bins needs an integral cycle "
            f"length T = 1/rate, but 1/rate = {inverse!r}; use rate = 1/T, e.g. "
            f"{1.0 / max(1, cycle)!r}"
        )
    return int(cycle)


@schemes.register("balls_in_bins")
@attrs.frozen
class BallsInBins(SchemeBase):
    """Balls-in-bins: each example keeps one uniform bin of T and participates every T steps.

    Attributes:
        n_steps: number of steps n.
        cycle_length: T >= 1, so the participation rate is p0 = 1/T.
    """

    label: ClassVar[str | None] = "balls-in-bins"
    compare_rank: ClassVar[int] = 20
    derived_from_rate: ClassVar[tuple[str, ...]] = ("cycle_length",)

    n_steps: int = attrs.field(validator=steps_validator())
    cycle_length: int = attrs.field(validator=positive_int())

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Balls-in-bins with T = 1/rate (refused unless 1/rate is an integer within 1e-9)."""
        check_options(cls, options)
        return cls(n_steps=n_steps, cycle_length=cycle_length_for(rate))

    @classmethod
    def example(cls) -> BallsInBins:
        return cls(n_steps=10, cycle_length=4)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"n_steps": 0, "cycle_length": 4}, "n_steps"),
            ({"n_steps": 10, "cycle_length": 0}, "cycle_length"),
            ({"n_steps": 10, "cycle_length": 2.5}, "cycle_length"),
        ]

    @property
    def rate(self) -> float:
        return 1.0 / self.cycle_length

    @property
    def min_separation(self) -> int:
        return self.cycle_length

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Draw every example's bin once, then cycle through the T bins."""
        cycle = self.cycle_length
        bins = rng.integers(cycle, size=prepared)
        order = np.argsort(bins, kind="stable").astype(np.int64)
        members = np.split(order, np.cumsum(np.bincount(bins, minlength=cycle))[:-1])
        for step in range(self.n_steps):
            sample = members[step % cycle]
            yield sample.copy() if keep is None else keep(sample.copy())

    # -- accounting -------------------------------------------------------------------------

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """The exact balls-in-bins mixture over the T bins (any number of bands)."""
        from minsep.schemes.balls_in_bins.loss import BallsInBinsLossModel

        model: PrivacyLossModel = BallsInBinsLossModel(
            coefficients=acc.coefficients(strategy),
            n_steps=self.n_steps,
            cycle_length=self.cycle_length,
        )
        return model
