"""The random-phase participation law of one unit: the description exact RDP accounting needs.

A scheme whose sensitive unit draws a uniform phase g in {0..b-1}, independently of everything
else, and then participates at each step i with i mod b = g independently with probability q
(random-phase cyclic Poisson, docs/math.md §4.1) describes it with a :class:`PhaseMixture`.
b = 1 is Poisson sampling at rate q. See docs/rdp-escort.md §10.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from minsep.framework.validation import positive_int, probability
from minsep.framework.validation import steps as steps_validator

__all__ = ["PhaseMixture"]


@attrs.frozen
class PhaseMixture:
    """A uniform mixture over ``phases`` of independent Bernoulli(q) coins on a residue class.

    Attributes:
        n_steps: number of steps n.
        phases: b >= 1; phase g owns the steps ``i = g, g + b, g + 2b, ... < n``.
        probability: q in (0, 1], the chance to participate at each step of the phase.
    """

    n_steps: int = attrs.field(validator=steps_validator())
    phases: int = attrs.field(validator=positive_int())
    probability: float = attrs.field(validator=probability())

    @property
    def min_sep(self) -> int:
        """b: two participations of one unit are at least b steps apart."""
        return self.phases

    def phase_steps(self) -> np.ndarray:
        """``m_g``: how many steps phase g owns, ``max(0, ceil((n - g) / b))`` (int64, length b)."""
        g = np.arange(self.phases, dtype=np.int64)
        return np.maximum(0, -(-(self.n_steps - g) // self.phases))

    def log_no_participation(self) -> float:
        """``ln pi(empty) = ln(b^-1 sum_g (1 - q)^{m_g})`` (``-inf`` when it is 0)."""
        m = self.phase_steps()
        q, b = self.probability, self.phases
        if q >= 1.0:
            idle = int(np.count_nonzero(m == 0))
            return math.log(idle / b) if idle else -math.inf
        terms = m * math.log1p(-q)
        top = float(terms.max())
        return top + math.log(float(np.exp(terms - top).sum())) - math.log(b)
