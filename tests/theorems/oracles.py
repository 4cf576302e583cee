"""Brute-force oracles: dense matrices and explicit enumeration of participation patterns.

Deliberately naive and independent of ``minsep.schemes.losses``: every density ratio is
``P(y)/R(y) = sum_x Pr[x] N(Cx, sigma^2 I)(y) / N(0, sigma^2 I)(y)`` summed over all patterns
``x`` (``itertools.product``), with ``C`` built as a dense matrix (docs/math.md §1-§6). Only usable
for tiny ``n``; pinned against the exact digits of docs/math.md in the theorem tests. The generic
pieces (dense ``C``, mixture ratios, the availability chain's law) are the plugin kit's
:mod:`minsep.testing.zero_out`, re-exported here; the scheme-specific laws stay below.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
from scipy.special import comb

from minsep.testing.zero_out import (
    Pattern,
    chain_path_probability,
    log_gaussian_ratio,
    log_mixture_ratio,
    min_sep_law,
)
from minsep.testing.zero_out import banded_toeplitz_matrix as strategy_matrix
from minsep.testing.zero_out import min_sep_initial_law as initial_law

__all__ = [
    "Pattern",
    "chain_path_probability",
    "initial_law",
    "log_gaussian_ratio",
    "log_mixture_ratio",
    "strategy_matrix",
]


# --- b-min-sep (docs/math.md §3): an explicit availability chain ----------------------------------


def b_min_sep_law(n: int, p: float, b: int, warm: bool) -> dict[Pattern, float]:
    """Law of the participation pattern of one example under Algorithm 1 (cold) / 2 (warm)."""
    return min_sep_law(n, p, b, warm)


def b_min_sep_log_ratio(
    coefficients: Sequence[float], y: np.ndarray, sigma: float, p: float, b: int, warm: bool
) -> float:
    """``ln P(y)/Q(y)`` for b-min-sep by enumeration."""
    n = len(y)
    return log_mixture_ratio(
        b_min_sep_law(n, p, b, warm), strategy_matrix(coefficients, n), y, sigma
    )


# --- balls-in-bins (docs/math.md §4) --------------------------------------------------------------


def balls_in_bins_law(n: int, cycle: int) -> dict[Pattern, float]:
    """One uniform bin in [T], participation at bin, bin + T, ... (empty if bin > n)."""
    law: dict[Pattern, float] = {}
    for s in range(cycle):
        x = tuple(1 if t % cycle == s else 0 for t in range(n))
        law[x] = law.get(x, 0.0) + 1.0 / cycle
    return law


def balls_in_bins_log_ratio(
    coefficients: Sequence[float], y: np.ndarray, sigma: float, cycle: int
) -> float:
    n = len(y)
    return log_mixture_ratio(
        balls_in_bins_law(n, cycle), strategy_matrix(coefficients, n), y, sigma
    )


# --- multi-attribution (docs/math.md §5) ----------------------------------------------------------


def multi_attribution_law(n: int, p: float, b: int, k_u: int) -> dict[Pattern, float]:
    """x_i = 0 if any of the previous b-1 entries is > 0, else x_i ~ Binomial(k_u, p)."""
    law: dict[Pattern, float] = {}
    for x in itertools.product(range(k_u + 1), repeat=n):
        prob = 1.0
        for t, xt in enumerate(x):
            blocked = any(x[j] > 0 for j in range(max(0, t - b + 1), t))
            if blocked:
                if xt:
                    prob = 0.0
                    break
            else:
                prob *= comb(k_u, xt, exact=True) * p**xt * (1 - p) ** (k_u - xt)
        if prob > 0:
            law[x] = prob
    return law


def multi_attribution_log_ratio(
    coefficients: Sequence[float], y: np.ndarray, sigma: float, p: float, b: int, k_u: int
) -> float:
    n = len(y)
    law = multi_attribution_law(n, p, b, k_u)
    return log_mixture_ratio(law, strategy_matrix(coefficients, n), y, sigma)


# --- truncated b-min-sep (docs/math.md §6, paper App. D) ------------------------------------------


def truncated_laws(
    n: int, p: float, b: int, warm: bool, counts: Sequence[int], max_batch: int
) -> tuple[dict[Pattern, float], dict[Pattern, float]]:
    """Laws of the P-vector (entries 0/1/2) and the Q-vector (entries 0/-1) given the counts.

    The sensitive example samples by its own chain; at a sampled step with ``r >= B_max`` it
    survives truncation with probability ``B_max / (r + 1)`` (independent coins).
    """
    return truncated_laws_given(b_min_sep_law(n, p, b, warm), counts, max_batch)


def truncated_laws_given(
    sampled_law: dict[Pattern, float], counts: Sequence[int], max_batch: int
) -> tuple[dict[Pattern, float], dict[Pattern, float]]:
    """:func:`truncated_laws` for a given law of the sensitive example's sampled steps."""
    p_law: dict[Pattern, float] = {}
    q_law: dict[Pattern, float] = {}
    for sampled, prob in sampled_law.items():
        n = len(sampled)
        truncating = [t for t in range(n) if sampled[t] and counts[t] >= max_batch]
        for coins in itertools.product((0, 1), repeat=len(truncating)):
            weight = prob
            survive = dict(zip(truncating, coins, strict=True))
            for t, c in survive.items():
                keep = max_batch / (counts[t] + 1)
                weight *= keep if c else 1 - keep
            xp_ = tuple(
                0 if not sampled[t] else (1 if t not in survive else 2 * survive[t])
                for t in range(n)
            )
            xq = tuple(-survive.get(t, 0) for t in range(n))
            p_law[xp_] = p_law.get(xp_, 0.0) + weight
            q_law[xq] = q_law.get(xq, 0.0) + weight
    return p_law, q_law


def truncated_log_ratio(
    coefficients: Sequence[float],
    y: np.ndarray,
    sigma: float,
    p: float,
    b: int,
    warm: bool,
    counts: Sequence[int],
    max_batch: int,
) -> float:
    """``ln P(y | r)/Q(y | r)`` for truncated b-min-sep by enumeration."""
    n = len(y)
    C = strategy_matrix(coefficients, n)
    p_law, q_law = truncated_laws(n, p, b, warm, counts, max_batch)
    return log_mixture_ratio(p_law, C, y, sigma) - log_mixture_ratio(q_law, C, y, sigma)


def other_counts_law(n: int, p: float, b: int, warm: bool, others: int) -> dict[Pattern, float]:
    """Law of r = (number of the other examples sampled at each step), by enumerating every
    other example's own path (they are independent, docs/math.md §6)."""
    single = b_min_sep_law(n, p, b, warm)
    law: dict[Pattern, float] = {tuple([0] * n): 1.0}
    for _ in range(others):
        combined: dict[Pattern, float] = {}
        for r, pr in law.items():
            for x, px in single.items():
                key = tuple(ri + xi for ri, xi in zip(r, x, strict=True))
                combined[key] = combined.get(key, 0.0) + pr * px
        law = combined
    return law


def all_patterns(law: dict[Pattern, float]) -> Iterator[tuple[Pattern, float]]:
    """Patterns with their probabilities in a fixed order (for chi-square tests)."""
    yield from sorted(law.items())
