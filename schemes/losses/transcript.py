"""sigma-free transcripts of the loss models (the Transcript protocol of the framework).

A transcript stores what ``log_ratio`` needs to rebuild ``<c_i, y>`` for any sigma:
``y = C x + sigma z`` gives ``<c_i, y> = signal_i + sigma * noise_i`` with
``signal_i = <c_i, C x>`` and ``noise_i = <c_i, z>``, z standard normal (MATH.md §2). Arrays are
float64 of the backend's namespace, one row per sample: each ``(n_samples, n)`` array costs
``n_samples * n * 8`` bytes. ``signal`` is None when x = 0 (the ADD direction of the untruncated
models), halving the memory.
"""

from __future__ import annotations

from typing import Any

import attrs

from minsep.framework.interfaces import Direction


def _rows(array: Any) -> int:
    return int(array.shape[0])


@attrs.frozen(eq=False)
class BlockTranscript:
    """Per-step block correlations (b-min-sep, Poisson, multi-attribution).

    Attributes:
        direction: REMOVE (x from the scheme's law) or ADD (x = 0).
        xp: the array namespace of the arrays.
        noise: ``<c_i, z>``, float64 ``(n_samples, n)`` -- ``8 n`` bytes per sample.
        signal: ``<c_i, C x>``, float64 ``(n_samples, n)``, or None for x = 0 -- ``8 n`` bytes
            per sample when present.
    """

    direction: Direction
    xp: Any = attrs.field(repr=False)
    noise: Any = attrs.field(repr=False)
    signal: Any = attrs.field(default=None, repr=False)

    @property
    def n_samples(self) -> int:
        return _rows(self.noise)


@attrs.frozen(eq=False)
class BinsTranscript:
    """Per-bin correlations for balls-in-bins: one column per non-empty bin s (T' = min(T, n)).

    Attributes:
        direction: REMOVE (a uniform bin) or ADD (x = 0).
        xp: the array namespace of the arrays.
        noise: ``<C x_s, z>``, float64 ``(n_samples, T')`` -- ``8 T'`` bytes per sample.
        signal: ``<C x_s, C x_{s*}>`` for the drawn bin s*, float64 ``(n_samples, T')``, or None
            under ADD -- ``8 T'`` bytes per sample when present.
    """

    direction: Direction
    xp: Any = attrs.field(repr=False)
    noise: Any = attrs.field(repr=False)
    signal: Any = attrs.field(default=None, repr=False)

    @property
    def n_samples(self) -> int:
        return _rows(self.noise)


@attrs.frozen(eq=False)
class TruncatedTranscript:
    """Block correlations plus the public counts r_i of truncated b-min-sep (MATH.md §6).

    Under both directions x is drawn (entries 0/1/2 under P, 0/-1 under Q: the dominating pair
    of paper App. D is not centred at zero), so ``signal`` is always present.

    Attributes:
        direction: REMOVE (y ~ P) or ADD (y ~ Q).
        xp: the array namespace of the arrays.
        noise: ``<c_i, z>``, float64 ``(n_samples, n)`` -- ``8 n`` bytes per sample.
        signal: ``<c_i, C x>``, float64 ``(n_samples, n)`` -- ``8 n`` bytes per sample.
        counts: r_i, the other examples sampled at step i before truncation, int64
            ``(n_samples, n)`` -- ``8 n`` bytes per sample.
    """

    direction: Direction
    xp: Any = attrs.field(repr=False)
    noise: Any = attrs.field(repr=False)
    signal: Any = attrs.field(repr=False)
    counts: Any = attrs.field(repr=False)

    @property
    def n_samples(self) -> int:
        return _rows(self.noise)
