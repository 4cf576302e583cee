"""Statistical laws of the multi-attribution samplers (docs/math.md §5), fixed seeds, 5 sd."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.schemes import AttributionGraph, MultiAttribution, MultiAttributionParticipation

Z = 5.0


def random_graph(
    seed: int, examples: int = 600, users: int = 400, k_u: int = 3
) -> AttributionGraph:
    rng = np.random.default_rng(seed)
    lists = [rng.choice(users, size=rng.integers(1, 4), replace=False) for _ in range(examples)]
    graph, _ = AttributionGraph.from_lists(lists, n_users=users).bound_contributions(k_u, rng)
    return graph


GRAPH = random_graph(0)


@pytest.mark.parametrize("cls", [MultiAttribution, MultiAttributionParticipation])
def test_no_user_participates_twice_within_b_steps(cls: type[MultiAttribution]) -> None:
    b = 5
    scheme = cls(n_steps=80, rate=0.02, probability=0.05, min_sep=b, max_user_examples=3)
    for seed in range(10):
        last = np.full(GRAPH.n_users, -(10**6))
        for step, batch in enumerate(scheme.batches(GRAPH, np.random.default_rng(seed))):
            users = np.unique(GRAPH.gather_users(batch)[0])
            assert np.all(step - last[users] >= b)
            last[users] = step


def batch_sizes(scheme: MultiAttribution, runs: int) -> np.ndarray:
    return np.array(
        [[b.size for b in scheme.batches(GRAPH, np.random.default_rng(s))] for s in range(runs)]
    )


def test_algorithm_3_batch_sizes_follow_the_closed_form() -> None:
    # Cold start: E|B_i| = sum_e p (1-p)^(m_e min(b-1, i-1)) rises to its stationary value.
    scheme = MultiAttribution(
        n_steps=8, rate=0.02, probability=0.08, min_sep=4, max_user_examples=3
    )
    sizes = batch_sizes(scheme, 300)
    expected = scheme.expected_batch_sizes(GRAPH)
    assert expected[0] > expected[3] * 1.3  # the cold-start transient is visible
    sd = sizes.std(axis=0, ddof=1) / math.sqrt(sizes.shape[0])
    np.testing.assert_array_less(np.abs(sizes.mean(axis=0) - expected), Z * sd)


def test_algorithm_4_excludes_less_than_algorithm_3() -> None:
    # Same p: Algorithm 4 only blocks on realised batches, so its batches are larger than
    # Algorithm 3's closed form; the gap must be far beyond sampling noise.
    args = {"n_steps": 30, "rate": 0.02, "probability": 0.15, "min_sep": 4, "max_user_examples": 3}
    three = MultiAttribution(**args, burn_in=3)
    four = MultiAttributionParticipation(**args, burn_in=60)
    sizes = batch_sizes(four, 40)
    sd = sizes.mean(axis=1).std(ddof=1) / math.sqrt(sizes.shape[0])
    assert sizes.mean() - three.expected_batch_sizes(GRAPH).mean() > 10 * sd
    three_sizes = batch_sizes(three, 40)
    sd3 = three_sizes.mean(axis=1).std(ddof=1) / math.sqrt(40)
    assert abs(three_sizes.mean() - three.expected_batch_sizes(GRAPH).mean()) < Z * sd3


def test_from_rate_reaches_the_target_batch_size() -> None:
    p0 = 0.03
    scheme = MultiAttribution.from_rate(20, p0, min_sep=4, max_user_examples=3, graph=GRAPH)
    assert isinstance(scheme, MultiAttribution)
    sizes = batch_sizes(scheme, 100)
    per_run = sizes.mean(axis=1)
    sd = per_run.std(ddof=1) / math.sqrt(per_run.size)
    assert abs(per_run.mean() - p0 * len(GRAPH)) < Z * sd
    # Stationary after b - 1 burn-in steps: no step differs from N·p0 beyond noise.
    step_sd = sizes.std(axis=0, ddof=1) / math.sqrt(sizes.shape[0])
    np.testing.assert_array_less(np.abs(sizes.mean(axis=0) - p0 * len(GRAPH)), Z * step_sd)


def test_single_example_users_reduce_to_sampled_exclusion() -> None:
    # One user per example, k_u = 1: Algorithm 3 participates iff sampled now and not sampled
    # in the previous b - 1 steps, rate p (1-p)^(b-1); Algorithm 4 is plain b-min-sep, rate
    # p / (1 + (b-1) p) in stationarity.
    size, b, p = 4000, 3, 0.2
    graph = AttributionGraph.from_lists([[e] for e in range(size)])
    args = {"n_steps": 30, "rate": 0.01, "probability": p, "min_sep": b, "max_user_examples": 1}
    three = MultiAttribution(**args, burn_in=b - 1)
    four = MultiAttributionParticipation(**args, burn_in=200)
    for scheme, rate in ((three, p * (1 - p) ** (b - 1)), (four, p / (1 + (b - 1) * p))):
        sizes = [bt.size for bt in scheme.batches(graph, np.random.default_rng(1))]
        # Per step Binomial(size, rate) (examples independent); 30 steps pooled.
        sd = math.sqrt(size * rate * (1 - rate) / len(sizes))
        assert abs(np.mean(sizes) - size * rate) < Z * sd
