"""SGD with heavy-ball momentum and a piecewise-linear learning-rate decay.

The schedule follows the paper's CINIC10 setup (§7.2): the base rate η until step
``start·n``, then linearly down to ``final_factor·η`` at step ``end·n``, constant afterwards
(paper: η → η/20 over n/4 .. 3n/4).
"""

from __future__ import annotations

from typing import Any

import attrs

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import number, positive, positive_int

Array = Any


@attrs.frozen
class LinearDecay:
    """Learning rate at 0-based step i of n, with t = i / n:

    η(t) = η for t ≤ start; η·final_factor for t ≥ end; linear in between.
    """

    base: float = attrs.field(validator=positive())
    n_steps: int = attrs.field(validator=positive_int())
    final_factor: float = attrs.field(
        default=0.05, validator=number(low=0.0, high=1.0, low_open=True)
    )
    start: float = attrs.field(default=0.25, validator=number(low=0.0, high=1.0))
    end: float = attrs.field(default=0.75, validator=number(low=0.0, high=1.0))

    def __attrs_post_init__(self) -> None:
        if self.end < self.start:
            raise ConfigurationError(
                f"LinearDecay.end = {self.end!r} is invalid: must be >= start = {self.start!r}"
            )

    def __call__(self, step: int) -> float:
        t = step / self.n_steps
        if t <= self.start:
            return self.base
        if t >= self.end:
            return self.base * self.final_factor
        frac = (t - self.start) / (self.end - self.start)
        return self.base * (1.0 - frac * (1.0 - self.final_factor))


@attrs.frozen
class SGDMomentum:
    """Heavy-ball SGD: v ← μ·v + g, θ ← θ − η·v (μ = 0 is plain SGD)."""

    momentum: float = attrs.field(default=0.9, validator=number(low=0.0, high=1.0, high_open=True))

    def init(self, params: Array) -> Array:
        """The initial velocity (zeros shaped like ``params``)."""
        return params * 0.0

    def update(
        self, params: Array, velocity: Array, grad: Array, learning_rate: float
    ) -> tuple[Array, Array]:
        """One step; returns the new ``(params, velocity)`` (inputs are not modified)."""
        velocity = self.momentum * velocity + grad
        return params - learning_rate * velocity, velocity
