"""Exact laws of a user's participation under Algorithms 3 and 4 on tiny graphs, and exact
delta(epsilon) of Gaussian-mixture pairs in low dimension (docs/math.md §5.1). Test plumbing.

A graph is a tuple of examples, each the frozenset of users it is attributed to; the sensitive
user is ``u``. ``run_algorithm`` maps one realisation of the holding sets S_1..S_n (which
examples were Poisson-sampled at each step) to the user's per-step counts x_i = |B_i ∩ D_u|;
enumerating all 2^(|D| n) realisations with their probabilities gives the exact law of x.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

Graph = tuple[frozenset[str], ...]
Pattern = tuple[int, ...]


def run_algorithm(
    graph: Graph,
    samples: Sequence[frozenset[int]],
    min_sep: int,
    user: str,
    by_batches: bool,
) -> Pattern:
    """The user's counts for given holding sets ``samples`` (S_1..S_n).

    Algorithm 3 (``by_batches=False``) excludes e at step i if an example of S_{i-b+1..i-1}
    shares a user with e; Algorithm 4 (``by_batches=True``) looks at B_{i-b+1..i-1} instead.
    """
    batches: list[frozenset[int]] = []
    counts = []
    for i, held in enumerate(samples):
        window = range(max(0, i - min_sep + 1), i)
        looked = [batches[j] if by_batches else samples[j] for j in window]
        blocked = set().union(*(graph[e] for s in looked for e in s)) if looked else set()
        batch = frozenset(e for e in held if not (graph[e] & blocked))
        batches.append(batch)
        counts.append(sum(1 for e in batch if user in graph[e]))
    return tuple(counts)


def participation_law(
    graph: Graph, n: int, p: float, min_sep: int, user: str, by_batches: bool
) -> dict[Pattern, float]:
    """Exact law of the user's counts: every example Poisson(p)-sampled at every step.

    Forward over the steps, keeping for every reachable (last b-1 looked-at sets, counts so
    far) its probability: the same sum over all 2^(|D| n) realisations as enumerating them
    (checked against :func:`run_algorithm` by the tests), at a cost polynomial in n.
    """
    size = len(graph)
    subsets = [
        (frozenset(e for e in range(size) if bits >> e & 1), bin(bits).count("1"))
        for bits in range(1 << size)
    ]
    window = max(min_sep - 1, 0)
    states: dict[tuple[tuple[frozenset[int], ...], Pattern], float] = {((), ()): 1.0}
    for _ in range(n):
        nxt: dict[tuple[tuple[frozenset[int], ...], Pattern], float] = {}
        for (history, x), prob in states.items():
            blocked = set().union(*(graph[e] for s in history for e in s)) if history else set()
            for held, k in subsets:
                weight = prob * p**k * (1 - p) ** (size - k)
                if weight == 0.0:
                    continue
                batch = frozenset(e for e in held if not (graph[e] & blocked))
                count = sum(1 for e in batch if user in graph[e])
                looked = batch if by_batches else held
                new_history = (*history, looked)[-window:] if window else ()
                key = (new_history, (*x, count))
                nxt[key] = nxt.get(key, 0.0) + weight
        states = nxt
    law: dict[Pattern, float] = {}
    for (_, x), prob in states.items():
        law[x] = law.get(x, 0.0) + prob
    return law


def enumerated_law(
    graph: Graph, n: int, p: float, min_sep: int, user: str, by_batches: bool
) -> dict[Pattern, float]:
    """:func:`participation_law` by brute force over all 2^(|D| n) realisations (small n)."""
    law: dict[Pattern, float] = {}
    size = len(graph)
    for bits in itertools.product((0, 1), repeat=size * n):
        samples = [frozenset(e for e in range(size) if bits[i * size + e]) for i in range(n)]
        k = sum(bits)
        prob = p**k * (1 - p) ** (size * n - k)
        x = run_algorithm(graph, samples, min_sep, user, by_batches)
        law[x] = law.get(x, 0.0) + prob
    return law


def single_user_law(n: int, p: float, min_sep: int, k_u: int) -> dict[Pattern, float]:
    """The dominating process of Theorem 6.1: x_i = 0 within b-1 steps after a positive entry,
    else x_i ~ Binomial(k_u, p)."""
    law: dict[Pattern, float] = {(): 1.0}
    for i in range(n):
        nxt: dict[Pattern, float] = {}
        for x, prob in law.items():
            recent = x[max(0, i - min_sep + 1) : i]
            if any(recent):
                nxt[(*x, 0)] = nxt.get((*x, 0), 0.0) + prob
                continue
            for j in range(k_u + 1):
                w = math.comb(k_u, j) * p**j * (1 - p) ** (k_u - j)
                nxt[(*x, j)] = nxt.get((*x, j), 0.0) + prob * w
        law = nxt
    return law


def hermite_grid(dims: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights of N(0, I_dims) (tensor rule, ``nodes`` per axis)."""
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)
    grids = np.meshgrid(*([z] * dims), indexing="ij")
    weights = np.ones_like(grids[0])
    for axis_w in np.meshgrid(*([w] * dims), indexing="ij"):
        weights = weights * axis_w
    return np.stack([g.ravel() for g in grids], axis=1), weights.ravel()


def mixture_deltas(
    law: dict[Pattern, float],
    C: np.ndarray,
    sigma: float,
    epsilons: Sequence[float],
    nodes: int,
) -> np.ndarray:
    """``delta(eps)`` of P = sum_x Pr[x] N(Cx, sigma^2 I) against Q = N(0, sigma^2 I), max of
    both directions, by a tensor Gauss-Hermite rule under Q:

        H(P||Q) = E_Q[(P/Q - e^eps)_+],  H(Q||P) = E_Q[(1 - e^eps P/Q)_+].
    """
    z, w = hermite_grid(C.shape[0], nodes)
    y = sigma * z
    patterns = np.asarray(list(law), dtype=float)
    probs = np.asarray(list(law.values()))
    means = patterns @ C.T
    logits = (y @ means.T - 0.5 * np.sum(means**2, axis=1)) / sigma**2
    ratio = np.exp(logsumexp(logits, axis=1, b=probs))
    out = []
    for eps in epsilons:
        remove = float(np.sum(w * np.maximum(ratio - math.exp(eps), 0.0)))
        add = float(np.sum(w * np.maximum(1.0 - math.exp(eps) * ratio, 0.0)))
        out.append(max(remove, add))
    return np.asarray(out)
