"""Vectorised sampling primitives shared by the samplers.

Poisson sampling of ``m`` items at probability ``p`` is drawn as a count ``K ~ Binomial(m, p)``
followed by a uniform ``K``-subset: the same law as ``m`` independent coins, at a cost that
grows with the sample, not with ``m``.
"""

from __future__ import annotations

import numpy as np


def uniform_positions(rng: np.random.Generator, m: int, k: int) -> np.ndarray:
    """``k`` distinct positions drawn uniformly from ``range(m)`` (unordered), as int64."""
    if k == 0:
        return np.empty(0, dtype=np.int64)
    if k == m:
        return np.arange(m, dtype=np.int64)
    return np.asarray(rng.choice(m, size=k, replace=False, shuffle=False), dtype=np.int64)


def poisson_subset(rng: np.random.Generator, items: np.ndarray, p: float) -> np.ndarray:
    """Each of ``items`` independently with probability ``p`` (binomial count, uniform choice)."""
    k = int(rng.binomial(items.size, p)) if items.size else 0
    return np.asarray(items[uniform_positions(rng, items.size, k)], dtype=np.int64)


class AvailabilityPool:
    """The examples available at the current step, with O(sample) updates.

    ``pool[:size]`` holds the available examples in no particular order. :meth:`take` removes a
    Poisson(p) sample of them; :meth:`release` returns examples whose bar has expired. The
    remaining slots of ``pool`` hold the barred examples' room, so the array never grows.
    """

    def __init__(self, available: np.ndarray, capacity: int) -> None:
        self.pool = np.empty(capacity, dtype=np.int64)
        self.size = int(available.size)
        self.pool[: self.size] = available

    def release(self, examples: np.ndarray) -> None:
        """Make ``examples`` (currently barred) available again."""
        end = self.size + examples.size
        self.pool[self.size : end] = examples
        self.size = end

    def take(self, rng: np.random.Generator, p: float) -> np.ndarray:
        """Remove and return each available example independently with probability ``p``."""
        m = self.size
        k = int(rng.binomial(m, p)) if m else 0
        positions = uniform_positions(rng, m, k)
        chosen = np.array(self.pool[positions], dtype=np.int64)
        # Move the chosen entries to the tail [m - k, m): every chosen position outside the
        # tail is filled by one unchosen position inside it (there are equally many).
        tail = m - k
        in_tail = positions >= tail
        holes = positions[~in_tail]
        if holes.size:
            free = np.ones(k, dtype=bool)
            free[positions[in_tail] - tail] = False
            fillers = tail + np.flatnonzero(free)
            self.pool[holes] = self.pool[fillers]
        self.size = tail
        return chosen
