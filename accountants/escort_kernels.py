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

#: Slots of the per-step memo of predecessor weights (:func:`backward_block`).
_MEMO = 4096


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
    # Draws in the same joint state at step t weigh the same predecessors: a direct-mapped
    # memo of the weights per state code (reset every step), so that the common states (every
    # copy free, say) are weighed once per step instead of once per draw.
    memo_code = np.full(_MEMO, -1, dtype=np.int64)
    memo_count = np.zeros(_MEMO, dtype=np.int64)
    memo_subsets = np.empty((_MEMO, n_subsets), dtype=np.int64)
    memo_weights = np.empty((_MEMO, n_subsets))
    for t in range(last, first - 1, -1):
        alpha = messages[t - first]
        w = exponents[t - first]
        free = t % b
        after = (t + 1) % b
        row = last - t
        memo_code[:] = -1
        for i in range(draws):
            n_joined = 0
            mask = 0  # copies in slot `after`: only they can have declined at t
            code = 0
            for j in range(lam):
                slot = post[i, j]
                code = code * size + slot
                if slot == free:
                    n_joined += 1
                elif slot == after:
                    mask |= 1 << (lam - 1 - j)
            counts[i, t] = n_joined
            if probability >= 1.0:
                mask = 0  # a declined copy has probability 0: only the empty subset
            entry = code % _MEMO
            if memo_code[entry] != code:
                memo_code[entry] = code
                memo_count[entry] = _weigh(
                    post[i], alpha, w, mask, n_joined, free, b, log_p, log_q,
                    probability, memo_subsets[entry], memo_weights[entry],
                )  # fmt: skip
            n_valid = memo_count[entry]
            weights = memo_weights[entry]
            total = 0.0
            for k in range(n_valid):
                total += weights[k]
            level = uniforms[row, i] * total
            cumulative = 0.0
            pick = 0
            for k in range(n_valid):
                cumulative += weights[k]
                if level < cumulative:
                    pick = k
                    break
            s = memo_subsets[entry, pick]
            for j in range(lam):
                if (s >> (lam - 1 - j)) & 1:
                    post[i, j] = free
                # a copy that joined at t was free before it; every other copy keeps its slot


@njit
def _weigh(  # pragma: no cover - compiled; tested against the array code
    state: np.ndarray,
    alpha: np.ndarray,
    w: np.ndarray,
    mask: int,
    n_joined: int,
    free: int,
    b: int,
    log_p: float,
    log_q: float,
    probability: float,
    subsets: np.ndarray,
    weights: np.ndarray,
) -> int:
    """The predecessors of joint state ``state`` after step t with nonzero prior weight: the
    subsets of ``mask`` (the copies that may have declined) in increasing order, the weights
    ``alpha_t(s) * weight(s -> state)`` of each; returns how many. The subsets outside
    ``mask`` weigh 0, so the running sums and the pick equal those over all 2^lam subsets."""
    lam = state.shape[0]
    size = b + 1
    n_valid = 0
    s = 0
    while True:
        n_declined = 0
        others = 0.0
        index = 0
        for j in range(lam):
            slot = state[j]
            if (s >> (lam - 1 - j)) & 1:
                n_declined += 1
                candidate = free
            else:
                candidate = slot
            if slot != free:
                others += w[candidate]
            index = index * size + candidate
        exponent = n_joined * others + n_joined * (n_joined - 1) / 2.0 * w[b]
        log_t = n_joined * log_p
        if n_declined > 0 and probability < 1.0:
            log_t += n_declined * log_q
        log_t += exponent
        subsets[n_valid] = s
        weights[n_valid] = alpha[index] * math.exp(log_t)
        n_valid += 1
        if s == mask:
            break
        s = (s - mask) & mask
    return n_valid
