"""Benchmarks of the batch samplers.

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_samplers.py --benchmark-only``.
Target (issue 4): b-min-sep over 10^6 examples for 1000 steps in a few seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.schemes import (
    AttributionGraph,
    BallsInBins,
    BMinSep,
    CyclicPoisson,
    MultiAttribution,
    Poisson,
    Truncated,
)

N, STEPS = 1_000_000, 1000


def consume(scheme: Any, population: Any) -> int:
    total = 0
    for batch in scheme.batches(population, np.random.default_rng(0)):
        total += batch.size
    return total


@pytest.mark.parametrize(
    "scheme",
    [
        BMinSep(n_steps=STEPS, rate=0.01, min_sep=8),
        BMinSep(n_steps=STEPS, rate=0.01, min_sep=8, warm_start=False),
        BMinSep(n_steps=STEPS, rate=1 / 64, min_sep=64),
        BMinSep(n_steps=STEPS, rate=0.1, min_sep=4),  # 10^5 examples per batch
        Poisson(n_steps=STEPS, rate=0.01),
        CyclicPoisson(n_steps=STEPS, rate=0.01, min_sep=8),
        BallsInBins(n_steps=STEPS, cycle_length=100),
        Truncated(
            base=BMinSep(n_steps=STEPS, rate=0.01, min_sep=8), max_batch_size=10_100, dataset_size=N
        ),
    ],
    ids=lambda s: repr(s)[:70],
)
def test_bench_sampler_million_examples(benchmark: Any, scheme: Any) -> None:
    total = benchmark.pedantic(consume, args=(scheme, N), rounds=1, iterations=1)
    assert total > 0


def test_bench_multi_attribution(benchmark: Any) -> None:
    rng = np.random.default_rng(0)
    users = 200_000
    lists = [rng.choice(users, size=rng.integers(2, 5), replace=False) for _ in range(300_000)]
    graph, _ = AttributionGraph.from_lists(lists, n_users=users).bound_contributions(2, rng)
    scheme = MultiAttribution.from_rate(
        STEPS, 1024 / len(graph), min_sep=8, max_user_examples=2, graph=graph
    )
    total = benchmark.pedantic(consume, args=(scheme, graph), rounds=1, iterations=1)
    assert total > 0
