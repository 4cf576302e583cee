"""Sigma sweeps for Algorithm 5: the geometric sweep, its validation and the fallback advice."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range

__all__ = ["FALLBACK", "check_sweep", "geometric_sweep"]

#: Where to turn when nothing can be certified: accountants whose guarantee is exact.
FALLBACK = (
    "fall back to an accountant with an exact guarantee: 'pld' where the scheme has an exact "
    "event, else 'gaussian' (unamplified: loose, but sound for every scheme)."
)


def geometric_sweep(start: float, ratio: float, count: int) -> tuple[float, ...]:
    """``start / ratio**j`` for ``j = 0..count-1``: decreasing, most private first."""
    check_range("geometric_sweep", "start", start, low=0.0, low_open=True)
    check_range("geometric_sweep", "ratio", ratio, low=1.0, low_open=True)
    check_range("geometric_sweep", "count", count, low=1, integer=True)
    return tuple(float(start) / float(ratio) ** j for j in range(count))


def check_sweep(sweep: Sequence[float]) -> tuple[float, ...]:
    """The sweep as floats; ConfigurationError unless finite, > 0 and strictly decreasing."""
    values = tuple(float(s) for s in sweep)
    ok = bool(values) and all(math.isfinite(s) and s > 0 for s in values)
    if not ok or any(b >= a for a, b in itertools.pairwise(values)):
        raise ConfigurationError(
            f"calibrate_sweep.sweep = {values!r} is invalid: must be finite sigmas > 0 in "
            "strictly decreasing order (most private first)"
        )
    return values
