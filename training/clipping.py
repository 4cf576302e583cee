"""Per-example gradient clipping: clip(g, C) = g · min(1, C / ‖g‖₂) (paper §2, DP-SGD).

After clipping, every row has l2 norm at most C, so adding or removing one example changes the
gradient sum of a step by at most C: the sensitivity the accountant assumes (docs/math.md §1, clip
norm 1 after dividing by C).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minsep.framework.validation import check_range

Array = Any


def row_norms(grads: Array, xp: Any = np) -> Array:
    """l2 norm of each row of a (m, P) matrix."""
    return xp.sqrt(xp.sum(grads * grads, axis=1))


def clip_rows(grads: Array, clip_norm: float, xp: Any = np) -> Array:
    """Scale each row g to ``g · min(1, C/‖g‖)``; rows already inside the ball are unchanged.

    Written as ``C / max(‖g‖, C)`` so a zero row never divides by zero.
    """
    check_range("clip_rows", "clip_norm", clip_norm, low=0.0, low_open=True)
    norms = row_norms(grads, xp)
    factors = clip_norm / xp.maximum(norms, clip_norm)
    return grads * factors[:, None]


def clipped_sum(grads: Array, clip_norm: float | None, mask: Array, xp: Any = np) -> Array:
    """Σ_j mask_j · clip(g_j, C) over the rows (``clip_norm=None``: no clipping).

    ``mask`` is 1 for real examples and 0 for padding slots, which thus contribute nothing.
    """
    if clip_norm is not None:
        grads = clip_rows(grads, clip_norm, xp)
    return mask.astype(grads.dtype) @ grads
