"""Verification samples chosen from the question: delta and a target precision (docs/math.md
§7.3).

The certified epsilon is the epsilon at which a verification at base delta ``delta_b <
delta`` passes, so it exceeds the estimate ``eps_hat(delta)`` by about the change of epsilon
between ``delta`` and ``delta_b``. The planning model: a relative precision ``r`` (certified
epsilon, or certified sigma, within a fraction ``r`` of the estimate) needs
``ln(delta / delta_b) <= r ln(1 / delta)``, i.e. ``delta_b = delta**(1 + r)``; the samples are
the fewest that certify ``delta`` verifying there, ``min_samples(delta**(1 + r), delta, R)``
with ``R`` the number of candidates. A planning rule, not a guarantee: the guarantee of the
answer is untouched (only its tightness depends on ``m``), and the result reports the gap it
achieved.
"""

from __future__ import annotations

import math

from minsep.framework.montecarlo.bounds import base_delta, min_samples
from minsep.framework.validation import check_range

__all__ = [
    "BEYOND_PRECISION",
    "DEFAULT_PRECISION",
    "LOOSEST_PRECISION",
    "precision_of_samples",
    "samples_for_precision",
]

#: Target relative gap between the certified answer and the estimate when none is given.
DEFAULT_PRECISION = 0.05
#: The loosest precision a run is shrunk to when it must fit a time limit (``delta_b =
#: delta**1.3``: 1/8 of delta at delta = 1e-3; looser runs often certify nothing).
LOOSEST_PRECISION = 0.3
#: How a route's label (an accountant's ``routed``) says that the answer it plans lies beyond
#: the precision asked for, traded for a time limit; ``compare`` repeats it in a row's note.
BEYOND_PRECISION = "beyond the precision asked for"


def samples_for_precision(delta: float, precision: float, *, candidates: int = 1) -> int:
    """The fewest verification samples per direction that certify ``delta`` at base delta
    ``delta**(1 + precision)`` with ``candidates`` claims (module docstring)."""
    check_range("samples_for_precision", "delta", delta, low=0.0, high=1.0, low_open=True,
                high_open=True)  # fmt: skip
    check_range("samples_for_precision", "precision", precision, low=0.0, low_open=True)
    return int(min_samples(delta ** (1.0 + precision), delta, candidates=candidates))


def precision_of_samples(samples: int, delta: float, *, candidates: int = 1) -> float:
    """The precision ``m`` samples plan for: ``ln(delta / base_delta(m, delta, R)) /
    ln(1 / delta)``, the inverse of :func:`samples_for_precision` (raises ConfigurationError
    naming ``m`` when it is too few to certify ``delta`` at all)."""
    delta_b = base_delta(samples, delta, candidates=candidates)
    return math.log(delta / delta_b) / math.log(1.0 / delta)
