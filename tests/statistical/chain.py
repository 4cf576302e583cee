"""Exact laws of one example under b-min-sep, by dynamic programming over the availability chain.

Oracles for the statistical tests (docs/math.md §3, §9): the state is the number of steps an example
is still barred, 0..b-1; from 0 it joins with probability p (and moves to b-1), otherwise it
stays; from s >= 1 it moves to s-1.
"""

from __future__ import annotations

import itertools

import numpy as np

from minsep.schemes.b_min_sep.scheme import stationary_law


def initial_law(p: float, b: int, warm: bool) -> np.ndarray:
    """pi (warm start) or everyone available (cold start)."""
    return stationary_law(p, b) if warm else np.eye(b)[0]


def count_distribution(n: int, b: int, p: float, warm: bool) -> np.ndarray:
    """P(an example participates exactly c times in n steps), c = 0..n."""
    law = np.zeros((b, n + 1))
    law[:, 0] = initial_law(p, b, warm)
    for _ in range(n):
        new = np.zeros_like(law)
        joins = p * law[0]
        new[0] += (1 - p) * law[0]
        new[:-1] += law[1:] if b > 1 else 0.0
        new[b - 1, 1:] += joins[:-1]
        law = new
    return law.sum(axis=0)


def moments(dist: np.ndarray) -> tuple[float, float, float]:
    """Mean, variance and fourth central moment of a distribution over 0..len-1."""
    c = np.arange(dist.size)
    mean = float(dist @ c)
    var = float(dist @ (c - mean) ** 2)
    fourth = float(dist @ (c - mean) ** 4)
    return mean, var, fourth


def pattern_law(n: int, b: int, p: float, warm: bool) -> dict[tuple[int, ...], float]:
    """P(participation pattern x in {0,1}^n), by enumerating the chain's paths."""
    start = initial_law(p, b, warm)
    law: dict[tuple[int, ...], float] = {}
    for pattern in itertools.product((0, 1), repeat=n):
        total = 0.0
        for s0 in range(b):
            prob, s = start[s0], s0
            for x in pattern:
                if s > 0:
                    if x:
                        prob = 0.0
                        break
                    s -= 1
                elif x:
                    prob *= p
                    s = b - 1
                else:
                    prob *= 1 - p
            total += prob
        if total > 0:
            law[pattern] = total
    return law


def participation_matrix(batches: list[np.ndarray], size: int) -> np.ndarray:
    """Boolean (examples x steps) matrix of who is in which batch (padding ignored)."""
    x = np.zeros((size, len(batches)), dtype=bool)
    for step, batch in enumerate(batches):
        x[batch[batch >= 0], step] = True
    return x


def min_gap(batches: list[np.ndarray]) -> int:
    """The smallest gap between two participations of one example (a large number if none)."""
    steps = np.concatenate([np.full(b[b >= 0].size, i) for i, b in enumerate(batches)])
    who = np.concatenate([b[b >= 0] for b in batches])
    order = np.lexsort((steps, who))
    who, steps = who[order], steps[order]
    same = who[1:] == who[:-1]
    gaps = np.diff(steps)[same]
    return int(gaps.min()) if gaps.size else 10**9
