"""Statistical laws of the samplers (docs/math.md §3, §4, §9), fixed seeds, bounds of 5 sd.

Examples are independent under b-min-sep, Poisson, cyclic Poisson and balls-in-bins, so batch
sizes and participation counts are sums of independent per-example variables whose exact laws
come from :mod:`tests.statistical.chain`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.schemes import BallsInBins, BMinSep, CyclicPoisson, Poisson, Truncated
from minsep.schemes.base import Keep, SchemeBase
from tests.statistical.chain import (
    count_distribution,
    min_gap,
    moments,
    participation_matrix,
    pattern_law,
)

Z = 5.0  # bound, in standard deviations


def run(scheme: Any, population: Any, seed: int) -> list[np.ndarray]:
    return list(scheme.batches(population, np.random.default_rng(seed)))


# -- the b-min-sep property ------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheme",
    [
        BMinSep(n_steps=60, rate=0.1, min_sep=5),
        BMinSep(n_steps=60, rate=0.1, min_sep=5, warm_start=False),
        BMinSep(n_steps=60, rate=0.5, min_sep=2),  # p = 1
        BMinSep(n_steps=60, rate=1 / 7, min_sep=7, warm_start=False),
        CyclicPoisson(n_steps=60, rate=0.2, min_sep=4, partition="random"),
        BallsInBins(n_steps=60, cycle_length=6),
        Truncated(
            base=BMinSep(n_steps=60, rate=0.2, min_sep=3), max_batch_size=50, dataset_size=1000
        ),
    ],
    ids=lambda s: repr(s)[:60],
)
def test_min_separation_holds_in_every_run(scheme: Any) -> None:
    for seed in range(10):
        assert min_gap(run(scheme, 1000, seed)) >= scheme.min_separation


# -- expected batch size: warm start keeps N·p0, cold start does not ----------------------------

N, STEPS, RUNS = 20_000, 25, 30


def batch_size_table(scheme: Any) -> np.ndarray:
    """(runs x steps) batch sizes."""
    return np.array([[b.size for b in run(scheme, N, seed)] for seed in range(RUNS)])


def test_warm_start_keeps_expected_batch_size_at_every_step() -> None:
    p0 = 0.1
    sizes = batch_size_table(BMinSep(n_steps=STEPS, rate=p0, min_sep=4))
    # Each example is in a given batch with probability p0, independently: |B_t| ~ Bin(N, p0).
    sd = math.sqrt(N * p0 * (1 - p0) / RUNS)
    np.testing.assert_array_less(np.abs(sizes.mean(axis=0) - N * p0), Z * sd)
    # The variance too: Var(|B_t|) = N p0 (1 - p0) (pooled over steps; sd of a sample variance
    # of normal data is var·sqrt(2/(k-1))).
    pooled = sizes.var(axis=0, ddof=1).mean()
    var = N * p0 * (1 - p0)
    assert abs(pooled - var) < Z * var * math.sqrt(2 / (RUNS - 1) / STEPS)


def test_cold_start_follows_its_own_expectation_not_n_p0() -> None:
    p0 = 0.1
    scheme = BMinSep(n_steps=STEPS, rate=p0, min_sep=4, warm_start=False)
    sizes = batch_size_table(scheme)
    q = scheme.participation_probabilities()
    sd = np.sqrt(N * q * (1 - q) / RUNS)
    np.testing.assert_array_less(np.abs(sizes.mean(axis=0) - N * q), Z * sd)
    # Step 1 samples everyone at p = p0 / (1 - 3 p0) ≈ 0.143, far above p0.
    assert sizes[:, 0].mean() - N * p0 > 40 * sd[0]


def test_truncation_keeps_the_pre_truncation_chain() -> None:
    # Dropped examples stay barred, so the pre-truncation samples keep mean N·p0 even when
    # most of every sample is dropped; freeing them would inflate the samples.

    @attrs.frozen
    class Spy(SchemeBase):
        inner: BMinSep
        sizes: list[int] = attrs.field(factory=list, eq=False)

        @property
        def n_steps(self) -> int:
            return self.inner.n_steps

        @property
        def rate(self) -> float:
            return self.inner.rate

        def generate_batches(
            self, prepared: Any, rng: np.random.Generator, keep: Keep | None
        ) -> Iterator[np.ndarray]:
            def spy(sample: np.ndarray) -> np.ndarray:
                self.sizes.append(sample.size)
                assert keep is not None
                return keep(sample)

            return self.inner.generate_batches(prepared, rng, spy)

    p0, size = 0.2, 5000
    spy = Spy(inner=BMinSep(n_steps=40, rate=p0, min_sep=4))
    for seed in range(5):
        run(Truncated(base=spy, max_batch_size=100, dataset_size=size), size, seed)
    sd = math.sqrt(size * p0 * (1 - p0) / len(spy.sizes))
    assert abs(np.mean(spy.sizes) - size * p0) < Z * sd


# -- marginal participation rate and participation counts (§9) --------------------------------


@pytest.mark.parametrize(
    ("b", "p0", "warm"), [(4, 0.05, True), (3, 0.2, True), (1, 0.3, True), (5, 0.1, False)]
)
def test_participation_counts_match_the_chain(b: int, p0: float, warm: bool) -> None:
    n, size = 120, 20_000
    scheme = BMinSep(n_steps=n, rate=p0, min_sep=b, warm_start=warm)
    counts = participation_matrix(run(scheme, size, 7), size).sum(axis=1)
    mean, var, fourth = moments(count_distribution(n, b, scheme.probability, warm))
    if warm:
        assert mean == pytest.approx(n * p0, rel=1e-9)  # the marginal rate is p0
    assert abs(counts.mean() - mean) < Z * math.sqrt(var / size)
    sd_var = math.sqrt((fourth - var**2) / size)
    assert abs(counts.var(ddof=1) - var) < Z * sd_var


def test_count_variance_is_the_renewal_formula() -> None:
    # Var_bMS = n p0 (1 - b p0)(1 - p0 (b-1)) + O(1): in stationarity the exact variance is
    # the renewal slope times n plus a constant (here about 0.023).
    b, p0 = 4, 0.05
    p = BMinSep(n_steps=1, rate=p0, min_sep=b).probability
    slope = p0 * (1 - b * p0) * (1 - p0 * (b - 1))
    gaps = []
    for n in (100, 400, 1600):
        _, var, _ = moments(count_distribution(n, b, p, warm=True))
        gaps.append(abs(var - n * slope))
    assert max(gaps) < 0.1
    assert np.ptp(gaps) < 1e-6


def test_b_min_sep_counts_vary_less_than_cyclic_poisson() -> None:
    b, p0, n, size = 4, 0.1, 80, 20_000
    cyclic = CyclicPoisson(n_steps=n, rate=p0, min_sep=b)
    counts = participation_matrix(run(cyclic, size, 3), size).sum(axis=1)
    # Each example: Binomial(n/b, b p0), so Var = n p0 (1 - b p0) (docs/math.md §9).
    var_cyclic = n * p0 * (1 - b * p0)
    q, k = b * p0, n // b
    fourth = k * q * (1 - q) * (1 + 3 * (k - 2) * q * (1 - q))
    assert abs(counts.mean() - n * p0) < Z * math.sqrt(var_cyclic / size)
    assert abs(counts.var(ddof=1) - var_cyclic) < Z * math.sqrt((fourth - var_cyclic**2) / size)
    bms = BMinSep(n_steps=n, rate=p0, min_sep=b)
    _, var_bms, _ = moments(count_distribution(n, b, bms.probability, warm=True))
    assert var_bms < var_cyclic * (1 - p0 * (b - 1)) + 1.0


# -- limits: b = 1 is Poisson, p = 1 warm start is balls-in-bins --------------------------------


def pattern_frequencies(scheme: Any, size: int, seed: int) -> Counter[tuple[int, ...]]:
    x = participation_matrix(run(scheme, size, seed), size)
    return Counter(map(tuple, x.astype(int).tolist()))


def assert_law(freq: Counter[tuple[int, ...]], law: dict[tuple[int, ...], float]) -> None:
    total = sum(freq.values())
    assert set(freq) <= set(law), f"impossible patterns {set(freq) - set(law)}"
    for pattern, prob in law.items():
        sd = math.sqrt(prob * (1 - prob) / total)
        assert abs(freq[pattern] / total - prob) < Z * sd, (pattern, freq[pattern] / total, prob)


def test_b_equals_one_is_poisson() -> None:
    p0, size = 0.3, 30_000
    freq = pattern_frequencies(BMinSep(n_steps=3, rate=p0, min_sep=1), size, 1)
    bernoulli = {
        x: math.prod(p0 if xi else 1 - p0 for xi in x)
        for x in [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    }
    assert_law(freq, bernoulli)
    assert_law(pattern_frequencies(Poisson(n_steps=3, rate=p0), size, 1), bernoulli)
    # Batch sizes i.i.d. Binomial(N, p0) across steps (independence across examples).
    steps, small = 400, 1000
    sizes = np.array([b.size for b in run(BMinSep(n_steps=steps, rate=p0, min_sep=1), small, 2)])
    var = small * p0 * (1 - p0)
    assert abs(sizes.mean() - small * p0) < Z * math.sqrt(var / steps)
    assert abs(sizes.var(ddof=1) - var) < Z * var * math.sqrt(2 / (steps - 1))


@pytest.mark.parametrize(
    "scheme", [BMinSep(n_steps=10, rate=0.2, min_sep=5), BallsInBins(n_steps=10, cycle_length=5)]
)
def test_warm_start_with_p_one_is_balls_in_bins(scheme: Any) -> None:
    size, b = 10_000, 5
    x = participation_matrix(run(scheme, size, 4), size)
    phase = np.argmax(x, axis=1)
    assert np.all(x.sum(axis=1) == 2)  # exactly once per cycle
    np.testing.assert_array_equal(x[np.arange(size), phase + b], True)
    bins = np.bincount(phase, minlength=b)
    sd = math.sqrt(size * (1 / b) * (1 - 1 / b))
    np.testing.assert_array_less(np.abs(bins - size / b), Z * sd)


# -- the participation-pattern law of docs/math.md §3 ----------------------------------------------

MATH_LAW = {
    False: {
        (1, 0, 1): 1 / 4,
        (1, 0, 0): 1 / 4,
        (0, 1, 0): 1 / 4,
        (0, 0, 1): 1 / 8,
        (0, 0, 0): 1 / 8,
    },
    True: {
        (1, 0, 1): 1 / 6,
        (1, 0, 0): 1 / 6,
        (0, 1, 0): 1 / 3,
        (0, 0, 1): 1 / 6,
        (0, 0, 0): 1 / 6,
    },
}


@pytest.mark.parametrize("warm", [False, True])
def test_pattern_law_n3_b2_p_half(warm: bool) -> None:
    scheme = BMinSep(n_steps=3, rate=1 / 3, min_sep=2, warm_start=warm)  # p = 1/2
    assert scheme.probability == pytest.approx(0.5)
    law = pattern_law(3, 2, 0.5, warm)
    assert law == pytest.approx(MATH_LAW[warm])  # the oracle agrees with docs/math.md
    assert_law(pattern_frequencies(scheme, 40_000, 9), MATH_LAW[warm])


@pytest.mark.slow
@pytest.mark.parametrize("warm", [False, True])
def test_pattern_law_longer_runs(warm: bool) -> None:
    scheme = BMinSep(n_steps=6, rate=0.15, min_sep=3, warm_start=warm)
    law = pattern_law(6, 3, scheme.probability, warm)
    assert_law(pattern_frequencies(scheme, 400_000, 13), law)
