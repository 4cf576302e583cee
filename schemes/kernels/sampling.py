"""Sampling kernels: participation patterns of the sensitive unit and the public counts.

Kept apart from the log-ratio kernels so that a performance pass can replace either. Patterns
are drawn vectorised over samples with a Python loop over steps, from the two primitives of
:class:`~minsep.framework.backend.RandomSource` (``random``, ``standard_normal``) and functions
numpy, cupy and array-API namespaces share.

The availability chain of one example (docs/math.md §3): state s in {0..b-1} = steps still barred.
From 0 it participates with probability p and moves to b-1 (so it is barred for the next b-1
steps), else stays at 0; from s >= 1 it moves to s-1.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from minsep.framework.backend import Backend, RandomSource


def stationary_law(p: float, b: int) -> np.ndarray:
    """pi(0) = 1/(1+(b-1)p), pi(s) = p/(1+(b-1)p) for s >= 1 (host float64, length b)."""
    law = np.full(b, p / (1.0 + (b - 1) * p))
    law[0] = 1.0 / (1.0 + (b - 1) * p)
    return law


def initial_states(n_samples: int, p: float, b: int, rng: RandomSource, xp: Any) -> Any:
    """Initial chain states drawn from pi (Algorithm 2's virtual history), int64 ``(S,)``.

    Inverse CDF from one uniform: state 0 if u < pi(0), else 1 + floor((u - pi(0)) / pi(1))
    (the states 1..b-1 share the probability pi(1) = p/(1+(b-1)p)); O(1) per sample.
    """
    u = rng.random((n_samples,))
    law = stationary_law(p, b)
    if b == 1:
        return xp.zeros((n_samples,), dtype=xp.int64)
    # clip the float before the cast: (u - pi(0)) / pi(1) is huge for tiny p
    excess = xp.clip((u - float(law[0])) / float(law[1]), 0.0, float(b - 2))
    barred = _astype(xp.floor(excess), xp.int64, xp) + 1
    return xp.where(u < float(law[0]), 0, barred)


def chain_participation(
    n_samples: int,
    n_steps: int,
    p: float,
    min_sep: int,
    warm_start: bool,
    rng: RandomSource,
    xp: Any,
) -> Any:
    """Participation of one example under b-min-sep (Algorithm 1 cold, 2 warm): bool ``(S, n)``.

    Draws ``S`` initial-state uniforms (warm only), then ``S x n`` step uniforms.
    """
    if warm_start:
        state = initial_states(n_samples, p, min_sep, rng, xp)
    else:
        state = xp.zeros((n_samples,), dtype=xp.int64)
    u = rng.random((n_samples, n_steps))
    columns = []
    for t in range(n_steps):
        joins = (state == 0) & (u[:, t] < p)
        columns.append(joins)
        state = xp.where(joins, min_sep - 1, xp.maximum(state - 1, 0))
    return xp.stack(columns, axis=1)


def model_chain_steps(model: Any, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
    """:func:`chain_steps` of a loss model on the availability chain (its ``n_steps``,
    ``probability``, ``min_sep`` and ``warm_start``) with the backend's kernel set."""
    return chain_steps(
        n_samples,
        model.n_steps,
        model.probability,
        model.min_sep,
        model.warm_start,
        rng,
        backend.xp,
        kernels=backend.kernels,
    )


def chain_steps(
    n_samples: int,
    n_steps: int,
    p: float,
    min_sep: int,
    warm_start: bool,
    rng: RandomSource,
    xp: Any,
    *,
    kernels: str,
) -> Any:
    """Participation steps of one example under b-min-sep: int32 ``(S, ceil(n / b))``.

    Row s lists the steps (0-based, ascending) at which sample s participates, then the
    sentinel ``n``. The chain of docs/math.md §3 is run by its renewal structure: from an
    available step the wait until the next participation is Geometric(p) on {0, 1, ...}
    (inverse CDF ``floor(ln(1 - u) / ln(1 - p))``: ``Pr[G >= g] = (1 - p)^g``; exact up to
    float64 rounding of the logarithms), after which the example is barred for b - 1 steps. So

        t_1 = s_0 + G_1,   t_{j+1} = t_j + b + G_{j+1},

    with s_0 the initial state (0 cold; drawn from pi warm, Algorithm 2), until some t_j >= n.
    A sample thus takes one uniform per participation plus the one that ends it (about
    ``n p / (1 + (b - 1) p) + 1``), not one per possible participation.

    ``ln(1 - u)`` is computed as ``log(1 - u)``: numpy's uniforms are multiples of 2^-53 in
    [0, 1), so ``1 - u`` is exact and the one rounding is the logarithm's, as in ``log1p(-u)``;
    numpy's ``log`` is vectorised and ``log1p`` is not (the measured difference:
    docs/performance.md).

    Stream: ``S`` uniforms for s_0 (warm only), then rounds: round r draws one uniform for each
    sample whose chain is still inside the horizon after r - 1 gaps, in sample order, until no
    sample is left. ``kernels``: the backend's kernel set (``"numba"`` runs each round compiled
    on the host, its waits from a vectorised logarithm that gives numpy's waits bit for bit:
    :mod:`.chain_logs`; otherwise the same IEEE operations as the array code).
    """
    m = -(-n_steps // min_sep)
    if warm_start:
        start = initial_states(n_samples, p, min_sep, rng, xp)
    else:
        start = xp.zeros((n_samples,), dtype=xp.int64)
    log_stay = math.log1p(-p) if p < 1.0 else -math.inf  # p = 1: every wait is 0
    # t_0 = s_0 - b, so that t_1 = t_0 + (G_1 + b) like every later participation
    times = _astype(start, xp.float64, xp) - float(min_sep)
    if kernels == "numba":
        return _host_chain_steps(times, n_steps, min_sep, m, log_stay, rng)
    return _array_chain_steps(times, n_steps, min_sep, m, log_stay, rng, xp)


def _host_chain_steps(
    times: np.ndarray, n_steps: int, b: int, m: int, log_stay: float, rng: RandomSource
) -> np.ndarray:
    """The rounds of :func:`chain_steps` with the update of each round compiled."""
    from minsep.schemes.kernels import sfc64
    from minsep.schemes.kernels.buffers import reusable
    from minsep.schemes.kernels.chain_logs import round_waits
    from minsep.schemes.kernels.cpu_kernels import chain_round, rounds_to_steps
    from minsep.schemes.kernels.fused import generator_of

    n_samples = int(times.shape[0])
    times = np.array(times, dtype=np.float64)  # a private, writable copy
    out = reusable((n_samples, m), np.int32, role="steps")  # no fresh mapping
    # round r's slot of every sample; a round after the m-th records nothing
    rounds = reusable((m + 1, n_samples), np.int32, role="steps-rounds")
    active = np.arange(n_samples, dtype=np.int64)
    alive = n_samples
    used = 0
    generator = generator_of(rng)  # draw into one buffer when there is one
    scratch = reusable((n_samples,), role="chain-uniforms")
    wait_buffer = reusable((n_samples,), role="chain-waits")
    while alive:
        if generator is not None:
            uniforms = scratch[:alive]
            sfc64.fill(generator, "random", uniforms)  # the numbers of rng.random((alive,))
        else:
            uniforms = np.asarray(rng.random((alive,)), dtype=np.float64)
        waits = wait_buffer[:alive]
        round_waits(uniforms, waits, log_stay, b, n_steps)
        row = rounds[min(used, m)]
        row.fill(n_steps)
        alive = chain_round(waits, active, alive, times, n_steps, row)
        used += 1
    rounds_to_steps(rounds, used, n_steps, out)
    return out


def _array_chain_steps(
    times: Any, n_steps: int, b: int, m: int, log_stay: float, rng: RandomSource, xp: Any
) -> Any:
    """The rounds of :func:`chain_steps` in portable array code (no scatter: each round's
    uniforms are spread over the samples still active by a gather)."""
    n_samples = int(times.shape[0])
    nf = float(n_steps)
    active = times < nf  # every chain starts inside the horizon (t_0 < 0)
    alive = n_samples
    columns = []
    while alive:
        logs = xp.log(1.0 - rng.random((alive,)))
        # the i-th active sample (in sample order) takes the i-th uniform of the round
        rank = _cumulative_sum(_astype(active, xp.int64, xp), xp) - 1
        spread = xp.take(logs, xp.clip(rank, 0, alive - 1), axis=0)
        waits = xp.minimum(xp.floor(spread / log_stay), nf)
        moved = times + (waits + float(b))
        inside = active & (moved < nf)
        columns.append(xp.where(inside, moved, nf))
        times = xp.where(active, moved, times)
        active = inside
        alive = int(xp.sum(_astype(active, xp.int64, xp)))
    # at most m participations fit in n steps: later columns hold only the sentinel
    columns += [xp.full((n_samples,), nf)] * max(0, m - len(columns))
    return _astype(xp.stack(columns[:m], axis=1), xp.int32, xp)


def _astype(values: Any, dtype: Any, xp: Any) -> Any:
    """``xp.astype`` (array API), or the array method where a namespace lacks it."""
    if hasattr(xp, "astype"):
        return xp.astype(values, dtype)
    return values.astype(dtype)


def _cumulative_sum(values: Any, xp: Any) -> Any:
    """Cumulative sum of a vector (``cumulative_sum`` of the array API, else ``cumsum``)."""
    if hasattr(xp, "cumulative_sum"):
        return xp.cumulative_sum(values, axis=0)
    return xp.cumsum(values, axis=0)


def steps_to_pattern(steps: Any, n_steps: int, xp: Any) -> Any:
    """The bool ``(S, n)`` participation pattern of :func:`chain_steps`' steps.

    numpy and cupy scatter (O(S m)); other array-API namespaces, which have no scatter, compare
    each column of steps against the step indices (O(S m n): for small problems and tests).
    """
    n_samples, m = int(steps.shape[0]), int(steps.shape[1])
    if getattr(xp, "__name__", "") in ("numpy", "cupy"):
        pattern = xp.zeros((n_samples, n_steps + 1), dtype=xp.bool_)
        pattern[xp.arange(n_samples)[:, None], steps] = True
        return pattern[:, :n_steps]
    pattern = xp.zeros((n_samples, n_steps), dtype=xp.bool)
    grid = xp.reshape(xp.arange(n_steps, dtype=steps.dtype), (1, n_steps))
    for j in range(m):
        pattern = pattern | (steps[:, j : j + 1] == grid)
    return pattern


@functools.lru_cache(maxsize=32)
def binomial_thresholds(trials: int, p: float) -> np.ndarray:
    """``F(m) = Pr[Binomial(trials, p) <= m]`` for m = 0..trials-1 (inverse-CDF thresholds;
    cached, read-only)."""
    from scipy import stats  # lazy: scipy.stats costs ~0.7 s to import

    thresholds = np.asarray(stats.binom.cdf(np.arange(trials), trials, p), dtype=np.float64)
    thresholds.setflags(write=False)
    return thresholds


def user_participation(
    n_samples: int,
    n_steps: int,
    p: float,
    min_sep: int,
    max_user_examples: int,
    rng: RandomSource,
    xp: Any,
) -> Any:
    """The dominating single-user process of Section 6 (cold start): float64 counts ``(S, n)``.

    x_i = 0 if any of x_{i-b+1..i-1} > 0, else x_i ~ Binomial(k_u, p) by inverse CDF from one
    uniform per step (exact up to the float64 rounding of the k_u thresholds); O(n log k_u)
    per sample.
    """
    thresholds = binomial_thresholds(max_user_examples, p)
    u = rng.random((n_samples, n_steps))
    state = xp.zeros((n_samples,), dtype=xp.int64)
    columns = []
    # count = #{m : u >= F(m)}: one sorted search per step instead of k_u comparisons
    sorted_thresholds = xp.asarray(thresholds)
    for t in range(n_steps):
        found = xp.searchsorted(sorted_thresholds, u[:, t], side="right")
        count = xp.where(state == 0, xp.astype(found, xp.float64), 0.0)
        columns.append(count)
        state = xp.where(count > 0, min_sep - 1, xp.maximum(state - 1, 0))
    return xp.stack(columns, axis=1)


def host_generator(rng: RandomSource, backend: Backend) -> np.random.Generator:
    """A host numpy generator seeded from four uniforms of ``rng`` (reproducible, exact).

    Used where exact binomial / multinomial draws with per-sample trial counts are needed; the
    seed is a deterministic function of ``rng``'s stream, so results stay reproducible per seed.
    """
    words = backend.to_numpy(rng.random((4,)))
    entropy = [int(w * 2.0**53) for w in np.asarray(words, dtype=np.float64)]
    return np.random.Generator(np.random.SFC64(np.random.SeedSequence(entropy)))


def other_counts(
    n_samples: int,
    n_steps: int,
    others: int,
    p: float,
    min_sep: int,
    warm_start: bool,
    generator: np.random.Generator,
) -> np.ndarray:
    """r_i = number of the other ``others`` examples sampled at step i (host int64 ``(S, n)``).

    Each other example runs its own availability chain (independent of the sensitive one and of
    truncation: dropped examples stay barred). So the counts follow a b-step renewal: the number
    available at step i is ``others - (r_{i-b+1} + ... + r_{i-1})`` and r_i ~ Binomial(that, p),
    drawn exactly by numpy. Warm start: the initial state counts are Multinomial(others, pi); the
    count in state s (s >= 1) acts as the sampled count of step s - b (docs/math.md §6).
    """
    counts = np.empty((n_samples, n_steps), dtype=np.int64)
    ring_size = min_sep - 1
    if warm_start:
        initial = generator.multinomial(others, stationary_law(p, min_sep), size=n_samples)
        ring = np.asarray(initial[:, 1:], dtype=np.int64)  # slot s-1 holds state s
    else:
        ring = np.zeros((n_samples, ring_size), dtype=np.int64)
    barred = ring.sum(axis=1)
    for t in range(n_steps):
        sampled = generator.binomial(others - barred, p)
        counts[:, t] = sampled
        if ring_size:
            slot = t % ring_size  # holds the examples in state 1 at step t: free at t + 1
            barred += sampled - ring[:, slot]
            ring[:, slot] = sampled
    return counts
