"""Theorem 6.1(i) and the Algorithm 4 conjecture on tiny graphs, exactly (docs/math.md §5.1).

The user's participation law under Algorithms 3 and 4 is enumerated over every realisation of
the holding sets; delta(epsilon) of the resulting Gaussian mixture is integrated by a tensor
Gauss-Hermite rule and compared with the single-user process of Theorem 6.1. The rule's error
on these kinked integrands was measured at <= 6e-4 (32-40 nodes per axis in 3 dimensions against
160), so a violation is only reported beyond ``TOLERANCE``. At sigma -> 0 the comparison reduces
to Pr[x = 0] (both directions tend to 1 - e^eps Pr[x = 0] at eps = 0), which is checked exactly
up to n = 8.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.theorems import oracles
from tests.theorems.attribution_exact import (
    Graph,
    enumerated_law,
    mixture_deltas,
    participation_law,
    run_algorithm,
    single_user_law,
)

TOLERANCE = 2e-3
EPSILONS = (0.0, 0.25, 0.5, 1.0, 2.0)


def graph(*users: str) -> Graph:
    """Examples given as strings of user letters, e.g. ``graph("uw", "u", "w")``."""
    return tuple(frozenset(e) for e in users)


#: (graph, n, min-sep b): 2-3 users, every example count up to 3.
GRAPHS = [
    (graph("uw", "u", "w"), 3, 2),
    (graph("uv", "uw", "vw"), 3, 2),
    (graph("u", "u", "v"), 3, 2),
    (graph("uv", "v", "v"), 3, 3),
]


def k_u(g: Graph) -> int:
    return sum(1 for e in g if "u" in e)


# --- §6.3: coordinate-wise mean domination fails for Algorithm 4, holds for Algorithm 3 ----


def test_algorithm_4_counterexample_to_mean_domination() -> None:
    """Shared holding sets S_1 = {g}, S_2 = {a}, S_3 = {c} with a: {u, w}, c: {u}, g: {w}.

    On D_u = {a, c}: a joins at step 2 and blocks c at step 3, x = (0, 1, 0). On D: g joins
    at step 1 and blocks a (through w) at step 2; with B_2 empty, c joins at step 3:
    x' = (0, 0, 1). Neither dominates the other coordinate-wise (paper §6.3).
    """
    full = graph("uw", "u", "w")  # a, c, g
    alone = graph("uw", "u")  # D_u: the user's examples only
    samples = [frozenset({2}), frozenset({0}), frozenset({1})]
    on_full = run_algorithm(full, samples, 2, "u", by_batches=True)
    on_alone = run_algorithm(alone, [s - {2} for s in samples], 2, "u", by_batches=True)
    assert on_alone == (0, 1, 0)
    assert on_full == (0, 0, 1)
    x, y = np.asarray(on_full), np.asarray(on_alone)
    assert not np.all(x <= y) and not np.all(y <= x)
    C = oracles.strategy_matrix((0.8, 0.6), 3)
    mean_full, mean_alone = C @ x, C @ y
    assert not np.all(mean_full <= mean_alone) and not np.all(mean_alone <= mean_full)
    # Algorithm 3 on the same coupling: a is still excluded at step 2 (g in S_1), and its
    # presence in S_2 still blocks c at step 3, so the full run is dominated.
    assert run_algorithm(full, samples, 2, "u", by_batches=False) == (0, 0, 0)
    assert run_algorithm(alone, [s - {2} for s in samples], 2, "u", by_batches=False) == (0, 1, 0)


def test_algorithm_3_coupling_dominates_on_every_realisation() -> None:
    """Step (1) of Theorem 6.1: under Algorithm 3, sharing S_i ∩ D_u, the counts on D are
    entrywise at most those on D_u, for every realisation (exhaustive, n = 3)."""
    import itertools

    full = graph("uw", "u", "w", "vw")
    mine = [e for e, users in enumerate(full) if "u" in users]
    alone = tuple(full[e] for e in mine)
    for bits in itertools.product((0, 1), repeat=len(full) * 3):
        samples = [frozenset(e for e in range(4) if bits[i * 4 + e]) for i in range(3)]
        restricted = [frozenset(mine.index(e) for e in s if e in mine) for s in samples]
        x = run_algorithm(full, samples, 2, "u", by_batches=False)
        y = run_algorithm(alone, restricted, 2, "u", by_batches=False)
        assert all(a <= b for a, b in zip(x, y, strict=True))


# --- exact comparisons ------------------------------------------------------------------


@pytest.mark.parametrize(("g", "n", "b"), GRAPHS)
@pytest.mark.parametrize("by_batches", [False, True], ids=["alg3", "alg4"])
def test_single_user_process_dominates_delta(g: Graph, n: int, b: int, by_batches: bool) -> None:
    """Theorem 6.1(i) (Algorithm 3) and the conjecture (Algorithm 4): delta_G <= delta_S."""
    p, sigma = 0.4, 0.8
    C = oracles.strategy_matrix((0.8, 0.6), n)
    law = participation_law(g, n, p, b, "u", by_batches)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    single = single_user_law(n, p, b, k_u(g))
    d_graph = mixture_deltas(law, C, sigma, EPSILONS, nodes=32)
    d_single = mixture_deltas(single, C, sigma, EPSILONS, nodes=32)
    assert np.all(d_graph <= d_single + TOLERANCE), (d_graph, d_single)


@pytest.mark.parametrize("n", [4, 6, 8])
@pytest.mark.parametrize("by_batches", [False, True], ids=["alg3", "alg4"])
def test_no_participation_is_at_least_as_likely_as_for_the_single_user(
    n: int, by_batches: bool
) -> None:
    """The sigma -> 0 limit, exact: Pr_G[x = 0] >= Pr_S[x = 0] (n up to 8)."""
    g = graph("uw", "u", "w")
    p, b = 0.3, 2
    law = participation_law(g, n, p, b, "u", by_batches)
    single = single_user_law(n, p, b, k_u(g))
    zero = (0,) * n
    assert law.get(zero, 0.0) >= single[zero] - 1e-12


@pytest.mark.parametrize("by_batches", [False, True], ids=["alg3", "alg4"])
@pytest.mark.parametrize(("g", "n", "b"), GRAPHS)
def test_forward_law_equals_enumeration(g: Graph, n: int, b: int, by_batches: bool) -> None:
    fast = participation_law(g, n, 0.4, b, "u", by_batches)
    slow = enumerated_law(g, n, 0.4, b, "u", by_batches)
    assert set(fast) == set(slow)
    for x, prob in slow.items():
        assert fast[x] == pytest.approx(prob, abs=1e-12)


def test_single_user_law_matches_the_enumerated_user_alone_at_b_1() -> None:
    """With b = 1 nothing is excluded: the user's counts are independent Binomial(k_u, p)."""
    g = graph("u", "u")
    law = participation_law(g, 3, 0.3, 1, "u", by_batches=False)
    single = single_user_law(3, 0.3, 1, 2)
    assert set(law) == set(single)
    for x, prob in single.items():
        assert law[x] == pytest.approx(prob, abs=1e-12)


# --- the conjecture search --------------------------------------------------------------------


def random_graph(rng: np.random.Generator) -> Graph:
    """2-3 users (u among them), 2-4 examples, each attributed to a random non-empty subset;
    at least one example of u."""
    users = "uvw"[: int(rng.integers(2, 4))]
    size = int(rng.integers(2, 5))
    examples = []
    for _ in range(size):
        chosen = frozenset(c for c in users if rng.random() < 0.5) or frozenset(users[0])
        examples.append(chosen)
    if not any("u" in e for e in examples):
        examples[0] = examples[0] | {"u"}
    return tuple(examples)


def conjecture_gaps(count: int, seed: int) -> tuple[float, float]:
    """Largest delta_G - delta_S (n = 3, Gauss-Hermite) and largest Pr_S[0] - Pr_G[0] (n = 8,
    exact) over ``count`` random graphs under Algorithm 4, b in {2, 3}, p in {0.3, 0.6},
    sigma in {0.5, 1, 2}."""
    rng = np.random.default_rng(seed)
    worst_delta, worst_zero = -np.inf, -np.inf
    for _ in range(count):
        g = random_graph(rng)
        b = int(rng.integers(2, 4))
        p = float(rng.choice([0.3, 0.6]))
        c = (0.8, 0.6) if b == 2 else (0.7, 0.5, 0.5)
        C = oracles.strategy_matrix(c, 3)
        law = participation_law(g, 3, p, b, "u", by_batches=True)
        single = single_user_law(3, p, b, k_u(g))
        for sigma in (0.5, 1.0, 2.0):
            gap = mixture_deltas(law, C, sigma, EPSILONS, 32) - mixture_deltas(
                single, C, sigma, EPSILONS, 32
            )
            worst_delta = max(worst_delta, float(np.max(gap)))
        long_law = participation_law(g, 8, p, b, "u", by_batches=True)
        zero = (0,) * 8
        long_single = single_user_law(8, p, b, k_u(g))
        worst_zero = max(worst_zero, long_single[zero] - long_law.get(zero, 0.0))
    return worst_delta, worst_zero


def test_conjecture_search_micro() -> None:
    worst_delta, worst_zero = conjecture_gaps(3, seed=17)
    assert worst_delta <= TOLERANCE
    assert worst_zero <= 1e-12


@pytest.mark.slow
def test_conjecture_search() -> None:
    worst_delta, worst_zero = conjecture_gaps(60, seed=2026)
    assert worst_delta <= TOLERANCE
    assert worst_zero <= 1e-12
