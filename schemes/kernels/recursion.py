"""The backward recursion of Theorem 5.1 in the log domain, and the warm-start average.

With g_i = ln f_i (0-based steps, g_j = 0 for j >= n):

    g_i = logaddexp(log_stay + g_{i+1}, log_go[:, i] + g_{i+b})

where ``exp(log_stay)`` is the probability of not participating at an available step and
``exp(log_go[:, i])`` is the (per-sample) weight of participating at step i times the block
likelihood ratio (docs/math.md §3, §5, §6). Everything stays in logs, so block log-ratios of
thousands (small sigma) neither overflow nor lose the small terms. Cost: O(n) vector operations
over the samples; memory: a ring of b per-sample vectors. On host numpy with numba the same
recursion runs compiled, one sample at a time (:func:`~.cpu_kernels.log_recursion_rows`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def log_or_neg_inf(value: float) -> float:
    """``ln value`` with ``ln 0 = -inf`` (scalars; avoids numpy's divide-by-zero warning)."""
    return math.log(value) if value > 0 else -math.inf


def backward_log_recursion(
    log_go: Any, log_stay: float, min_sep: int, xp: Any, *, kernels: str
) -> list[Any]:
    """Run the recursion over all n steps; return ``[g_0, ..., g_{b-1}]`` (per-sample vectors).

    ``log_go`` is ``(n_samples, n)``; ``log_stay`` a scalar (``-inf`` when p = 1, in which case
    the stay branch is dropped rather than evaluated). Entries ``g_j`` with ``j >= n`` are 0.
    ``kernels``: the backend's kernel set (``"numba"`` runs the compiled recursion).
    """
    n_samples, n = int(log_go.shape[0]), int(log_go.shape[1])
    if kernels == "numba":  # the same recursion, compiled, one sample at a time
        from minsep.schemes.kernels.cpu_kernels import log_recursion_rows

        out = np.empty((n_samples, min_sep))
        log_recursion_rows(np.ascontiguousarray(log_go, dtype=np.float64), log_stay, min_sep, out)
        return [out[:, j] for j in range(min_sep)]
    zero = xp.zeros((n_samples,), dtype=xp.float64)
    future: deque[Any] = deque([zero] * min_sep, maxlen=min_sep)  # future[m] = g_{i+1+m}
    stays = math.isfinite(log_stay)
    for i in range(n - 1, -1, -1):
        go = log_go[:, i] + future[-1]
        future.appendleft(xp.logaddexp(log_stay + future[0], go) if stays else go)
    return list(future)


def warm_start_average(g: list[Any], p: float, xp: Any) -> Any:
    """``ln[(f_1 + p sum_{i=2}^{b} f_i) / (1 + (b-1) p)]`` (docs/math.md §3, Algorithm 2).

    The sensitive example starts in state s with the stationary probability pi(s); from state
    s it is first available at step s + 1, where the conditional ratio is f_{s+1}.
    """
    b = len(g)
    log_p = math.log(p)
    total = g[0]
    for j in range(1, b):
        total = xp.logaddexp(total, log_p + g[j])
    return total - math.log1p((b - 1) * p)


def chain_log_ratio(
    log_block: Any, probability: float, min_sep: int, warm_start: bool, xp: Any, *, kernels: str
) -> Any:
    """``ln f_1`` (cold start) or the warm-start average (:func:`warm_start_average`) of
    Theorem 5.1's recursion whose step i, when available, participates with probability p and
    then has the per-sample block log-ratio ``log_block[:, i]`` (docs/math.md §3)."""
    log_go = math.log(probability) + log_block
    log_stay = log_or_neg_inf(1.0 - probability)
    g = backward_log_recursion(log_go, log_stay, min_sep, xp, kernels=kernels)
    return warm_start_average(g, probability, xp) if warm_start else g[0]


def logsumexp_terms(term: Callable[[int], Any], indices: Sequence[int], xp: Any) -> Any:
    """Stable ``ln sum_m exp(term(m))`` over ``m`` in ``indices`` (at least one term finite
    everywhere), streaming: each term is built twice (once for the peak, once for the sum) and
    never kept, so the memory is a few arrays of one term's shape whatever ``len(indices)``."""
    peak = None
    for m in indices:
        value = term(m)
        peak = value if peak is None else xp.maximum(peak, value)
    if peak is None:
        raise ValueError("logsumexp_terms needs at least one index")
    total = xp.zeros_like(peak)
    for m in indices:
        total = total + xp.exp(term(m) - peak)
    return peak + xp.log(total)
