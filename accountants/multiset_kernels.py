"""Compiled kernels of the multiset forward pass and its backward walk (docs/rdp-escort.md §3.1).

A multiset of ``L`` ring slots out of ``{0..b-1}`` is stored as its sorted tuple
``s_0 <= ... <= s_{L-1}`` and ranked in colex order of the strictly increasing
``c_i = s_i + i``: ``rank(s) = sum_i C(s_i + i, i + 1)``, a bijection onto
``0 .. C(b + L - 1, L) - 1`` (the multisets whose largest slot is below v come first; there
are ``C(v + L - 1, L)`` of them). Without numba (``MINSEP_KERNELS=array``) these run as plain
Python: the same numbers, slowly.
"""

from __future__ import annotations

import math

import numpy as np

from minsep.schemes.kernels.jit import NUMBA_AVAILABLE, njit

__all__ = [
    "NUMBA_AVAILABLE",
    "backward_block",
    "binomials",
    "enumerate_multisets",
    "forward_step",
    "initial_masses",
    "unrank",
]

#: Slots of the per-step memo of predecessor weights (:func:`backward_block`).
_MEMO = 4096


def binomials(top: int, order: int) -> np.ndarray:
    """``table[c, i] = C(c, i)`` for ``0 <= c <= top``, ``0 <= i <= order + 1`` (int64)."""
    table = np.zeros((top + 1, order + 2), dtype=np.int64)
    for c in range(top + 1):
        for i in range(min(c, order + 1) + 1):
            table[c, i] = math.comb(c, i)
    return table


@njit(inline="always")
def _rank(s: np.ndarray, binom: np.ndarray) -> int:  # pragma: no cover - compiled
    r = 0
    for i in range(s.shape[0]):
        r += binom[s[i] + i, i + 1]
    return r


@njit(inline="always")
def _sort(s: np.ndarray) -> None:  # pragma: no cover - compiled; insertion sort (L small)
    for i in range(1, s.shape[0]):
        v = s[i]
        k = i - 1
        while k >= 0 and s[k] > v:
            s[k + 1] = s[k]
            k -= 1
        s[k + 1] = v


@njit
def enumerate_multisets(slots: int, size: int, count: int) -> np.ndarray:  # pragma: no cover
    """Every sorted ``size``-tuple over ``0..slots-1`` (``count`` of them), row = rank."""
    out = np.zeros((count, size), dtype=np.int64)
    s = np.zeros(size, dtype=np.int64)
    for r in range(count):
        out[r] = s
        for i in range(size):  # colex successor: bump the first position that may grow
            top = s[i + 1] if i + 1 < size else slots - 1
            if s[i] < top:
                s[i] += 1
                for k in range(i):
                    s[k] = 0
                break
    return out


@njit
def initial_masses(  # pragma: no cover - compiled; tested against the outer product
    law: np.ndarray, order: int, count: int, out: np.ndarray
) -> None:
    """``out[rank(s)] = lam! / prod_v n_v! * prod_i law[s_i]``: the mass of the ordered tuples
    of ``order`` independent slots drawn from ``law`` whose multiset is s."""
    slots = law.shape[0]
    s = np.zeros(order, dtype=np.int64)
    log_fact = np.zeros(order + 1)
    for i in range(1, order + 1):
        log_fact[i] = log_fact[i - 1] + math.log(i)
    for r in range(count):
        mass = math.exp(log_fact[order])
        run = 1
        for i in range(order):
            mass *= law[s[i]]
            if i > 0 and s[i] == s[i - 1]:
                run += 1
                mass /= run
            else:
                run = 1
        out[r] = mass
        for i in range(order):
            top = s[i + 1] if i + 1 < order else slots - 1
            if s[i] < top:
                s[i] += 1
                for k in range(i):
                    s[k] = 0
                break


@njit
def forward_step(  # pragma: no cover - compiled; tested against the tuple pass
    alpha: np.ndarray,
    lower: np.ndarray,
    binom: np.ndarray,
    w: np.ndarray,
    free: int,
    min_sep: int,
    join_pow: np.ndarray,
    decline_pow: np.ndarray,
    masses: np.ndarray,
) -> float:
    """Advance the multiset message ``alpha`` over the step with free slot ``free``, in place;
    returns the change of its total mass.

    The states with a copy in ``free`` are ``lower[r] + {free}`` (``lower``: every sorted
    ``(lam - 1)``-tuple, each such state once). Their mass moves to the states where j of
    their m free copies joined (stay in ``free``) and m - j declined (move to ``after``),
    times ``C(m, j) p^j (1 - p)^(m - j) exp(j E + j (j - 1) / 2 w_b)`` with ``E`` the sum of
    ``w`` over the copies not in ``free`` (``join_pow[j] = p^j``, ``decline_pow[d] =
    (1 - p)^d``). The other states are untouched (nobody is free)."""
    rows, low = lower.shape
    lam = low + 1
    after = (free + 1) % min_sep
    w_b = w[min_sep]
    s = np.empty(lam, dtype=np.int64)
    ranks = np.empty(rows, dtype=np.int64)
    for r in range(rows):
        _insert(lower, r, free, s)
        k = _rank(s, binom)
        ranks[r] = k
        masses[r] = alpha[k]
    for r in range(rows):
        alpha[ranks[r]] = 0.0
    change = 0.0
    target = np.empty(lam, dtype=np.int64)
    for r in range(rows):
        v = masses[r]
        if v == 0.0:
            continue
        _insert(lower, r, free, s)
        m, first, others = 0, lam, 0.0
        for i in range(lam):
            if s[i] == free:
                m += 1
                first = min(first, i)
            else:
                others += w[s[i]]
        for j in range(m + 1):
            weight = binom[m, j] * join_pow[j] * decline_pow[m - j]
            if weight == 0.0:
                continue
            weight *= math.exp(j * others + j * (j - 1) / 2.0 * w_b)
            for i in range(lam):
                target[i] = s[i]
            for i in range(first + j, first + m):
                target[i] = after
            if after < free:
                _sort(target)
            alpha[_rank(target, binom)] += v * weight
            change += v * weight
        change -= v
    return change


@njit(inline="always")
def _insert(  # pragma: no cover - compiled
    lower: np.ndarray, row: int, slot: int, out: np.ndarray
) -> None:
    """``out`` = the sorted tuple ``lower[row]`` with ``slot`` inserted (no row view: array
    views cost reference counting in the inner loops)."""
    k = 0
    placed = False
    for i in range(lower.shape[1]):
        v = lower[row, i]
        if not placed and slot <= v:
            out[k] = slot
            k += 1
            placed = True
        out[k] = v
        k += 1
    if not placed:
        out[k] = slot


@njit
def unrank(  # pragma: no cover - compiled
    ranks: np.ndarray, order: int, binom: np.ndarray, out: np.ndarray
) -> None:
    """``out[i]`` = the sorted tuple of rank ``ranks[i]`` (the inverse of the colex rank)."""
    for d in range(ranks.shape[0]):
        r = ranks[d]
        c = binom.shape[0] - 1
        for i in range(order - 1, -1, -1):
            while binom[c, i + 1] > r:
                c -= 1
            out[d, i] = c - i
            r -= binom[c, i + 1]
            c -= 1


@njit
def backward_block(  # pragma: no cover - compiled; tested against enumeration
    messages: np.ndarray,
    exponents: np.ndarray,
    uniforms: np.ndarray,
    first: int,
    last: int,
    min_sep: int,
    binom: np.ndarray,
    join_pow: np.ndarray,
    decline_pow: np.ndarray,
    post: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Steps ``t = last .. first`` (descending) of every draw's backward walk, in place.

    ``messages[t - first]``: the multiset message before step t; ``exponents[t - first]``: the
    ``w`` of step t; ``uniforms[last - t]``: one uniform per draw; ``post``: (draws, lam)
    sorted slots after step ``last``, left as the slots before step ``first``. After step t a
    state with j copies in ``free`` and a in ``after`` came from the state with ``j + d`` in
    ``free`` and ``a - d`` in ``after`` (``d = 0..a``), weighed by ``alpha_t`` times the
    forward transition weight; ``counts[:, t] = j``."""
    draws, lam = post.shape
    b = min_sep
    memo_code = np.full(_MEMO, -1, dtype=np.int64)
    memo_cumulative = np.empty((_MEMO, lam + 1))  # running sums of the predecessors' weights
    pred = np.empty(lam, dtype=np.int64)
    s = np.empty(lam, dtype=np.int64)
    for t in range(last, first - 1, -1):
        alpha = messages[t - first]
        w = exponents[t - first]
        free = t % b
        after = (t + 1) % b
        row = last - t
        memo_code[:] = -1
        for i in range(draws):
            j, a, code = 0, 0, 0
            for x in range(lam):
                v = post[i, x]
                s[x] = v
                code += binom[v + x, x + 1]
                j += v == free  # free != after (b >= 2): no branch on the slot
                a += v == after
            counts[i, t] = j
            if a == 0:
                continue  # one predecessor: the same multiset (nobody can have declined)
            entry = code & (_MEMO - 1)
            if memo_code[entry] != code:
                memo_code[entry] = code
                _weigh_predecessors(s, alpha, w, j, a, free, after, binom, join_pow,
                                    decline_pow, pred, memo_cumulative[entry])  # fmt: skip
                total = 0.0
                for d in range(a + 1):
                    total += memo_cumulative[entry, d]
                    memo_cumulative[entry, d] = total
            level = uniforms[row, i] * memo_cumulative[entry, a]
            pick = 0
            for d in range(a + 1):  # no view of the row: views cost reference counting here
                if level < memo_cumulative[entry, d]:
                    pick = d
                    break
            _step_back(s, j, a, pick, free, after)
            for x in range(lam):
                post[i, x] = s[x]


@njit(inline="always")
def _step_back(  # pragma: no cover - compiled
    s: np.ndarray, j: int, a: int, d: int, free: int, after: int
) -> None:
    """Turn the sorted state after the step (j copies in ``free``, a in ``after``) into the
    sorted state before it with ``j + d`` copies in ``free`` and ``a - d`` in ``after``, in
    place. For ``after = free + 1`` the two blocks are adjacent in s; for ``free = b - 1``
    (``after = 0``) the after-block leads, the free block closes and the others shift by d."""
    lam = s.shape[0]
    if after > free:
        start = 0
        while s[start] < free:
            start += 1
        for x in range(j + a):
            s[start + x] = free if x < j + d else after
    else:
        for x in range(a, lam - j):
            s[x - d] = s[x]
        for x in range(lam - j - d, lam):
            s[x] = free


@njit
def _weigh_predecessors(  # pragma: no cover - compiled
    s: np.ndarray,
    alpha: np.ndarray,
    w: np.ndarray,
    j: int,
    a: int,
    free: int,
    after: int,
    binom: np.ndarray,
    join_pow: np.ndarray,
    decline_pow: np.ndarray,
    pred: np.ndarray,
    weights: np.ndarray,
) -> int:
    """``weights[d] = alpha_t(pred_d) C(j + d, j) p^j (1 - p)^d exp(j E_d + j (j - 1) / 2
    w_b)`` for ``d = 0..a`` (``E_d``: ``w`` summed over ``pred_d``'s copies not in ``free``);
    returns ``a + 1``."""
    others = 0.0
    for x in range(s.shape[0]):
        if s[x] != free and s[x] != after:
            others += w[s[x]]
    w_b = w[w.shape[0] - 1]
    for d in range(a + 1):
        for x in range(s.shape[0]):
            pred[x] = s[x]
        _step_back(pred, j, a, d, free, after)
        exponent = j * (others + (a - d) * w[after]) + j * (j - 1) / 2.0 * w_b
        prior = binom[j + d, j] * join_pow[j] * decline_pow[d]
        weights[d] = alpha[_rank(pred, binom)] * prior * math.exp(exponent) if prior > 0 else 0.0
    return a + 1
