"""The attribution graph and the multi-attribution samplers (Algorithms 3 and 4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from minsep.framework.errors import ConfigurationError, InfeasibleError
from minsep.schemes import AttributionGraph, MultiAttribution, MultiAttributionParticipation
from minsep.schemes.multi_attribution.scheme import example_graph

# -- the graph -------------------------------------------------------------------------------


def test_from_lists_normalises_and_infers_users() -> None:
    graph = AttributionGraph.from_lists([[3, 1, 3], [0], [2, 1]])
    assert graph.n_examples == len(graph) == 3
    assert graph.n_users == 4
    np.testing.assert_array_equal(graph.users_of(0), [1, 3])
    np.testing.assert_array_equal(graph.user_example_counts(), [1, 2, 1, 1])
    assert graph.max_user_examples == 2


def test_from_csr_matches_from_lists() -> None:
    lists = [[0, 2], [1], [2, 1, 0]]
    dense = np.zeros((3, 3))
    for e, users in enumerate(lists):
        dense[e, users] = 5.0
    a = AttributionGraph.from_csr(sp.csr_matrix(dense))
    b = AttributionGraph.from_lists(lists)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert a.n_users == 3
    np.testing.assert_array_equal(a.to_csr().toarray() > 0, dense > 0)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: AttributionGraph.from_lists([[0], []]), "no user"),
        (lambda: AttributionGraph.from_lists([[0], [-1]]), "user ids"),
        (lambda: AttributionGraph.from_lists([[0], [5]], n_users=3), "user ids"),
        (lambda: AttributionGraph.from_lists([]), "indptr"),
        (lambda: AttributionGraph(indptr=[0, 2], indices=[1, 0], n_users=2), "sorted"),
        (lambda: AttributionGraph.from_csr(np.eye(2)), "scipy sparse"),
        (lambda: AttributionGraph(indptr=[0, 1], indices=[0], n_users=-1), "n_users"),
    ],
)
def test_invalid_graphs(build: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        build()  # type: ignore[operator]


def test_gather_users_and_subset() -> None:
    graph = AttributionGraph.from_lists([[0, 1], [2], [1, 3, 4]])
    users, counts = graph.gather_users(np.array([2, 0]))
    np.testing.assert_array_equal(users, [1, 3, 4, 0, 1])
    np.testing.assert_array_equal(counts, [3, 2])
    sub = graph.subset([2, 1])
    np.testing.assert_array_equal(sub.users_of(0), [1, 3, 4])
    np.testing.assert_array_equal(sub.users_of(1), [2])


def test_neighbourhood_sizes_brute_force() -> None:
    rng = np.random.default_rng(0)
    lists = [rng.choice(8, size=rng.integers(1, 3), replace=False).tolist() for _ in range(15)]
    graph = AttributionGraph.from_lists(lists)
    brute = [sum(bool(set(a) & set(b)) for b in lists) for a in lists]
    np.testing.assert_array_equal(graph.neighbourhood_sizes(), brute)


def test_bound_contributions_is_a_maximal_bounded_subset() -> None:
    rng = np.random.default_rng(1)
    lists = [rng.choice(30, size=rng.integers(1, 4), replace=False).tolist() for _ in range(200)]
    graph = AttributionGraph.from_lists(lists, n_users=30)
    assert graph.max_user_examples > 2
    bounded, kept = graph.bound_contributions(2, np.random.default_rng(5))
    assert bounded.max_user_examples <= 2
    for new, old in enumerate(kept):
        np.testing.assert_array_equal(bounded.users_of(new), graph.users_of(int(old)))
    counts = bounded.user_example_counts()
    dropped = np.setdiff1d(np.arange(200), kept)
    assert dropped.size > 0
    for e in dropped:  # greedy is maximal: every dropped example hits a full user
        assert np.any(counts[graph.users_of(int(e))] >= 2)
    _, kept_again = graph.bound_contributions(2, np.random.default_rng(5))
    np.testing.assert_array_equal(kept, kept_again)
    with pytest.raises(ConfigurationError, match="max_user_examples"):
        graph.bound_contributions(0, rng)


# -- the samplers ------------------------------------------------------------------------------

BASE = {"n_steps": 6, "rate": 0.1, "probability": 1.0, "min_sep": 2, "max_user_examples": 2}


def test_algorithm_3_excludes_by_sampled_sets_algorithm_4_by_batches() -> None:
    # Two examples of one user, p = 1, b = 2. Step 0 takes both. Under Algorithm 3 every later
    # step samples both, they are excluded, and the exclusion renews itself: all empty. Under
    # Algorithm 4 an empty batch blocks nothing, so the batches alternate.
    graph = AttributionGraph.from_lists([[0], [0]])
    three = [b.tolist() for b in MultiAttribution(**BASE).batches(graph, np.random.default_rng(0))]
    four = [
        b.tolist()
        for b in MultiAttributionParticipation(**BASE).batches(graph, np.random.default_rng(0))
    ]
    assert three == [[0, 1], [], [], [], [], []]
    assert four == [[0, 1], [], [0, 1], [], [0, 1], []]


def test_burn_in_steps_are_not_yielded() -> None:
    graph = AttributionGraph.from_lists([[0], [0]])
    scheme = MultiAttributionParticipation(**{**BASE, "burn_in": 1})
    batches = [b.tolist() for b in scheme.batches(graph, np.random.default_rng(0))]
    assert batches == [[], [0, 1], [], [0, 1], [], [0, 1]]


def test_population_must_be_a_bounded_graph() -> None:
    scheme = MultiAttribution(**BASE)
    with pytest.raises(ConfigurationError, match="AttributionGraph"):
        scheme.batches(10, np.random.default_rng(0))
    crowded = AttributionGraph.from_lists([[0], [0], [0]])
    with pytest.raises(InfeasibleError, match=r"max_user_examples = 2.*3 examples"):
        scheme.batches(crowded, np.random.default_rng(0))


@pytest.mark.parametrize("cls", [MultiAttribution, MultiAttributionParticipation])
def test_no_user_twice_within_b_steps(cls: type[MultiAttribution]) -> None:
    graph = example_graph()
    for seed in range(5):
        scheme = cls(n_steps=60, rate=0.05, probability=0.2, min_sep=4, max_user_examples=4)
        last = np.full(graph.n_users, -100)
        for step, batch in enumerate(scheme.batches(graph, np.random.default_rng(seed))):
            users = np.unique(graph.gather_users(batch)[0])
            assert np.all(step - last[users] >= 4)
            last[users] = step


def test_closed_form_batch_size_brute_force() -> None:
    # P(e in B_i) = p (1-p)^(m_e L): check it by enumerating the holding sets of a tiny graph.
    lists = [[0], [0, 1], [1], [2]]
    graph = AttributionGraph.from_lists(lists)
    p, b = 0.3, 3
    scheme = MultiAttribution(
        n_steps=3, rate=0.05, probability=p, min_sep=b, max_user_examples=2, burn_in=0
    )
    n = graph.n_examples
    for step in range(3):
        total = 0.0
        # Holding sets of steps max(0, step-b+1)..step, each a subset of the examples.
        window = list(range(max(0, step - b + 1), step + 1))
        for masks in itertools.product(range(2**n), repeat=len(window)):
            prob = 1.0
            for m in masks:
                k = bin(m).count("1")
                prob *= p**k * (1 - p) ** (n - k)
            blocked = {u for m in masks[:-1] for e in range(n) if m >> e & 1 for u in lists[e]}
            current = masks[-1]
            total += prob * sum(
                1 for e in range(n) if current >> e & 1 and not set(lists[e]) & blocked
            )
        assert scheme.expected_batch_sizes(graph)[step] == pytest.approx(total, rel=1e-12)


def test_from_rate_with_graph_hits_the_rate() -> None:
    graph = example_graph()
    scheme = MultiAttribution.from_rate(20, 0.02, min_sep=3, max_user_examples=4, graph=graph)
    assert isinstance(scheme, MultiAttribution)
    assert scheme.burn_in == 2
    np.testing.assert_allclose(scheme.expected_batch_sizes(graph), 0.02 * len(graph), rtol=1e-9)
    cold = MultiAttribution.from_rate(
        20, 0.02, min_sep=3, max_user_examples=4, graph=graph, burn_in=0
    )
    assert isinstance(cold, MultiAttribution)
    assert np.mean(cold.expected_batch_sizes(graph)) == pytest.approx(0.02 * len(graph))
    with pytest.raises(InfeasibleError, match="largest attainable"):
        MultiAttribution.from_rate(20, 0.3, min_sep=3, max_user_examples=4, graph=graph)


def test_from_rate_options() -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        MultiAttribution.from_rate(5, 0.02, min_sep=3, max_user_examples=4)
    with pytest.raises(ConfigurationError, match="max_user_examples"):
        MultiAttribution.from_rate(5, 0.02, min_sep=3, probability=0.1)
    with pytest.raises(ConfigurationError, match="bogus"):
        MultiAttribution.from_rate(5, 0.02, min_sep=3, max_user_examples=2, bogus=1)
    explicit = MultiAttribution.from_rate(5, 0.02, min_sep=3, max_user_examples=2, probability=0.1)
    assert explicit == MultiAttribution(
        n_steps=5, rate=0.02, probability=0.1, min_sep=3, max_user_examples=2, burn_in=2
    )
    with pytest.raises(InfeasibleError, match="graph"):
        MultiAttribution.from_rate(
            5, 0.02, min_sep=3, max_user_examples=2, graph=example_graph()
        )  # the example graph has users with 4 examples


def test_algorithm_4_from_rate_by_simulation() -> None:
    graph = example_graph()
    scheme = MultiAttributionParticipation.from_rate(
        30, 0.03, min_sep=3, max_user_examples=4, graph=graph, burn_in=30
    )
    assert isinstance(scheme, MultiAttributionParticipation)
    # With the calibration's own draws (seed 0) the mean batch size just reaches N·p0; the
    # simulated rate is a step function of p, so it may overshoot by a few participations.
    sizes = [b.size for b in scheme.batches(graph, np.random.default_rng(0))]
    assert 0.03 * len(graph) <= np.mean(sizes) <= 1.05 * 0.03 * len(graph)
    default = MultiAttributionParticipation.from_rate(
        5, 0.05, min_sep=3, max_user_examples=4, probability=0.2
    )
    assert isinstance(default, MultiAttributionParticipation) and default.burn_in == 80
