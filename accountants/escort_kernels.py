"""Compiled backward step of the escort sampler (docs/rdp-escort.md §6, "Exact draws").

:func:`backward_block` walks one block of steps backwards for every draw: given the joint
state after step t, it weighs the at most ``2^lam`` predecessors (copies now available again
either declined at t or were barred with countdown 1) by ``alpha_t(s) * weight(s -> s')`` and
draws one with the step's uniform. It does per draw and step exactly what the array code of
:mod:`minsep.accountants.escort` does for all draws at once (same subsets in the same order,
same uniforms), without the array temporaries that dominate that code's time.
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.kernels.jit import NUMBA_AVAILABLE, njit

__all__ = ["NUMBA_AVAILABLE", "backward_block"]


@njit
def backward_block(  # pragma: no cover - compiled; tested against the array code
    messages: np.ndarray,
    exponents: np.ndarray,
    uniforms: np.ndarray,
    first: int,
    last: int,
    min_sep: int,
    probability: float,
    post: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Steps ``t = last .. first`` (descending) for every draw, in place.

    ``messages[t - first]``: the flattened forward message before step t; ``exponents[t -
    first]``: the per-slot exponent ``w`` of step t (length b + 1); ``uniforms[last - t]``:
    the uniforms of step t (one per draw); ``post``: (draws, lam) slots after step ``last``,
    updated to the slots before step ``first``; ``counts[:, t]`` receives the joins at t.
    """
    draws, lam = post.shape
    b = min_sep
    size = b + 1
    n_subsets = 1 << lam
    log_p = math.log(probability)
    log_q = math.log1p(-probability) if probability < 1.0 else 0.0
    weights = np.empty(n_subsets)
    candidates = np.empty((n_subsets, lam), dtype=post.dtype)
    for t in range(last, first - 1, -1):
        alpha = messages[t - first]
        w = exponents[t - first]
        free = t % b
        after = (t + 1) % b
        row = last - t
        for i in range(draws):
            n_joined = 0
            for j in range(lam):
                if post[i, j] == free:
                    n_joined += 1
            counts[i, t] = n_joined
            for s in range(n_subsets):
                ok = True
                n_declined = 0
                for j in range(lam):
                    declined = (s >> (lam - 1 - j)) & 1
                    slot = post[i, j]
                    if declined:
                        n_declined += 1
                        if slot != after:
                            ok = False
                        candidates[s, j] = free
                    elif slot == free:
                        candidates[s, j] = free
                    else:
                        candidates[s, j] = slot
                if not ok or (probability >= 1.0 and n_declined > 0):
                    weights[s] = 0.0
                    continue
                others = 0.0
                for j in range(lam):
                    if post[i, j] != free:
                        others += w[candidates[s, j]]
                exponent = n_joined * others + n_joined * (n_joined - 1) / 2.0 * w[b]
                log_t = n_joined * log_p
                if n_declined > 0 and probability < 1.0:
                    log_t += n_declined * log_q
                log_t += exponent
                index = 0
                for j in range(lam):
                    index = index * size + candidates[s, j]
                weights[s] = alpha[index] * math.exp(log_t)
            total = 0.0
            for s in range(n_subsets):
                total += weights[s]
            level = uniforms[row, i] * total
            cumulative = 0.0
            pick = 0
            for s in range(n_subsets):
                cumulative += weights[s]
                if level < cumulative:
                    pick = s
                    break
            for j in range(lam):
                post[i, j] = candidates[pick, j]
