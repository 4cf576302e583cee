"""The participation chain of one unit: the public description exact RDP accounting needs.

A scheme whose sensitive unit participates according to the b-min-sep availability chain
(docs/math.md §3) describes it with a :class:`ParticipationChain`: state ``a`` in {0..b-1} is the
number of steps the unit is still barred; from 0 it participates with probability p (and goes
to b - 1) or stays at 0, from a >= 1 it moves to a - 1. Cold start begins at 0, warm start at
the stationary law pi. b = 1 is Poisson sampling at rate p. See docs/rdp-escort.md §2.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from minsep.framework.validation import fail, positive_int, probability
from minsep.framework.validation import steps as steps_validator


def _boolean(instance: object, attribute: attrs.Attribute[bool], value: object) -> None:
    if not isinstance(value, bool | np.bool_):
        raise fail(instance, attribute.name, value, "True or False")


@attrs.frozen
class ParticipationChain:
    """The availability chain of one unit over ``n_steps`` steps (docs/math.md §3).

    Attributes:
        n_steps: number of steps n.
        min_sep: b >= 1: at most one participation in any b consecutive steps.
        probability: p in (0, 1], the chance to participate when available.
        warm_start: initial state from the stationary law (else: available).
    """

    n_steps: int = attrs.field(validator=steps_validator())
    min_sep: int = attrs.field(validator=positive_int())
    probability: float = attrs.field(validator=probability())
    warm_start: bool = attrs.field(default=False, validator=_boolean)

    def initial_law(self) -> np.ndarray:
        """Law of the initial state over 0..b-1: the point mass at 0 (cold) or pi (warm)."""
        b, p = self.min_sep, self.probability
        if not self.warm_start:
            law = np.zeros(b)
            law[0] = 1.0
            return law
        law = np.full(b, p / (1.0 + (b - 1) * p))
        law[0] = 1.0 / (1.0 + (b - 1) * p)
        return law

    def log_no_participation(self) -> float:
        """``ln pi(empty)``: the log-probability that the unit never participates.

        From state a the unit is barred for a steps and then declines each of the remaining
        ``max(n - a, 0)`` steps with probability 1 - p.
        """
        law = self.initial_law()
        p, n = self.probability, self.n_steps
        if p >= 1.0:
            barred = [a for a in range(self.min_sep) if a >= n and law[a] > 0]
            return math.log(float(sum(law[a] for a in barred))) if barred else -math.inf
        log1mp = math.log1p(-p)
        terms = [
            math.log(float(law[a])) + max(n - a, 0) * log1mp
            for a in range(self.min_sep)
            if law[a] > 0
        ]
        top = max(terms)
        return top + math.log(sum(math.exp(t - top) for t in terms))
