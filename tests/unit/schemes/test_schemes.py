"""Construction, feasibility, from_rate and the samplers' mechanics of the built-in schemes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError, InfeasibleError
from minsep.framework.registries import schemes
from minsep.schemes import (
    BallsInBins,
    BMinSep,
    CyclicPoisson,
    MultiAttribution,
    MultiAttributionParticipation,
    Poisson,
    Truncated,
)
from minsep.schemes._sampling import AvailabilityPool, uniform_positions
from minsep.schemes.b_min_sep.scheme import probability_for_rate, stationary_law
from minsep.schemes.base import as_batch, dataset_size

EXPECTED_NAMES = {
    "poisson": Poisson,
    "cyclic_poisson": CyclicPoisson,
    "balls_in_bins": BallsInBins,
    "b_min_sep": BMinSep,
    "multi_attribution": MultiAttribution,
    "multi_attribution_participation": MultiAttributionParticipation,
    "truncated": Truncated,
}


def test_registered_names() -> None:
    for name, cls in EXPECTED_NAMES.items():
        assert schemes.get(name) is cls
        assert cls.registry_name == name


# -- feasibility at construction -------------------------------------------------------------


def test_b_min_sep_rejects_rate_above_one_over_b_naming_range() -> None:
    with pytest.raises(InfeasibleError, match=r"rate = 0\.3.*min_sep = 4.*<= 1/min_sep = 0\.25"):
        BMinSep(n_steps=10, rate=0.3, min_sep=4)
    BMinSep(n_steps=10, rate=0.25, min_sep=4)  # the boundary is feasible (p = 1)
    BMinSep(n_steps=10, rate=1 / 3, min_sep=3)


def test_cyclic_poisson_rejects_group_rate_above_one() -> None:
    with pytest.raises(InfeasibleError, match="min_sep"):
        CyclicPoisson(n_steps=10, rate=0.2, min_sep=6)
    assert CyclicPoisson(n_steps=10, rate=0.2, min_sep=5).group_rate == 1.0


def test_balls_in_bins_from_rate_needs_integral_cycle() -> None:
    assert BallsInBins.from_rate(10, 0.25).cycle_length == 4  # type: ignore[attr-defined]
    assert BallsInBins.from_rate(10, 1 / 3).cycle_length == 3  # type: ignore[attr-defined]
    assert BallsInBins.from_rate(10, 1 / (7 + 1e-12)).cycle_length == 7  # type: ignore[attr-defined]
    with pytest.raises(InfeasibleError, match=r"rate = 0\.3.*integral cycle length"):
        BallsInBins.from_rate(10, 0.3)
    with pytest.raises(InfeasibleError):
        BallsInBins.from_rate(10, 1 / (7 + 1e-6))
    with pytest.raises(ConfigurationError, match="rate"):
        BallsInBins.from_rate(10, 0.0)


def test_from_rate_refuses_unknown_options() -> None:
    with pytest.raises(ConfigurationError, match=r"'bands'.*must be among \['min_sep'"):
        BMinSep.from_rate(10, 0.1, min_sep=2, bands=3)
    with pytest.raises(ConfigurationError, match="min_sep"):
        Poisson.from_rate(10, 0.1, min_sep=2)
    with pytest.raises(ConfigurationError, match="min_sep"):
        BallsInBins.from_rate(10, 0.5, min_sep=2)


def test_from_rate_builds_at_equal_rate() -> None:
    built = [
        Poisson.from_rate(20, 0.125),
        CyclicPoisson.from_rate(20, 0.125, min_sep=4, partition="random"),
        BallsInBins.from_rate(20, 0.125),
        BMinSep.from_rate(20, 0.125, min_sep=4, warm_start=False),
        Truncated.from_rate(20, 0.125, min_sep=4, max_batch_size=30, dataset_size=100),
    ]
    for scheme in built:
        assert scheme.rate == pytest.approx(0.125)
        assert scheme.n_steps == 20


def test_probability_formula_and_stationary_law() -> None:
    scheme = BMinSep(n_steps=5, rate=0.1, min_sep=4)
    assert scheme.probability == pytest.approx(0.1 / (1 - 0.3))
    assert BMinSep(n_steps=5, rate=0.2, min_sep=1).probability == 0.2
    assert probability_for_rate(0.25, 4) == 1.0
    law = stationary_law(0.5, 3)
    np.testing.assert_allclose(law, [0.5, 0.25, 0.25])
    assert scheme.stationary_law().sum() == pytest.approx(1.0)


def test_participation_probabilities_warm_constant_cold_matches_brute_force() -> None:
    warm = BMinSep(n_steps=6, rate=0.2, min_sep=3)
    np.testing.assert_allclose(warm.participation_probabilities(), 0.2, rtol=1e-12)
    cold = BMinSep(n_steps=4, rate=1 / 3, min_sep=2, warm_start=False)  # p = 1/2
    # Step 1: 1/2; step 2: available iff not joined at 1 -> 1/4; step 3: 1/2·1/2 + 1/4 = 3/8.
    np.testing.assert_allclose(cold.participation_probabilities()[:3], [0.5, 0.25, 0.375])
    np.testing.assert_allclose(cold.expected_batch_sizes(8)[:2], [4.0, 2.0])


def test_min_separation_and_max_participations() -> None:
    assert Poisson(n_steps=7, rate=0.1).max_participations == 7
    assert BMinSep(n_steps=10, rate=0.1, min_sep=4).max_participations == 3
    assert CyclicPoisson(n_steps=10, rate=0.1, min_sep=3).min_separation == 3
    assert BallsInBins(n_steps=10, cycle_length=5).max_participations == 2


def test_public_parameters_are_plain() -> None:
    params = BMinSep(n_steps=10, rate=0.1, min_sep=4).public_parameters()
    assert params == {
        "scheme": "b_min_sep",
        "n_steps": 10,
        "rate": 0.1,
        "min_sep": 4,
        "warm_start": True,
    }


# -- call arguments ------------------------------------------------------------------------


def test_population_and_rng_are_checked_eagerly() -> None:
    scheme = BMinSep(n_steps=3, rate=0.1, min_sep=2)
    with pytest.raises(ConfigurationError, match="population"):
        scheme.batches(0, np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="population"):
        scheme.batches(True, np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="rng"):
        scheme.batches(10, 3)  # type: ignore[arg-type]
    assert dataset_size(np.int64(5), "x") == 5
    assert dataset_size(list(range(7)), "x") == 7


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_seeds_reproduce_and_differ(name: str) -> None:
    scheme = schemes.get(name).example()
    population = scheme.example_population()

    def run(seed: int) -> list[np.ndarray]:
        return list(scheme.batches(population, np.random.default_rng(seed)))

    first, again, other = run(11), run(11), run(12)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize(
    "scheme",
    [
        Poisson(n_steps=6, rate=0.3),
        CyclicPoisson(n_steps=6, rate=0.2, min_sep=3),
        BallsInBins(n_steps=6, cycle_length=3),
        BMinSep(n_steps=6, rate=0.2, min_sep=3),
    ],
)
def test_batches_are_sorted_distinct_int64(scheme: BMinSep) -> None:
    for batch in scheme.batches(5000, np.random.default_rng(1)):
        assert batch.dtype == np.int64
        assert np.all(np.diff(batch) > 0)
        assert batch.size == 0 or (batch[0] >= 0 and batch[-1] < 5000)


def test_cyclic_partitions() -> None:
    rng = np.random.default_rng(0)
    equal = CyclicPoisson(n_steps=3, rate=0.1, min_sep=3).groups(10, rng)
    assert sorted(g.size for g in equal) == [3, 3, 4]
    assert np.array_equal(np.sort(np.concatenate(equal)), np.arange(10))
    rand = CyclicPoisson(n_steps=3, rate=0.1, min_sep=3, partition="random").groups(3000, rng)
    assert np.array_equal(np.sort(np.concatenate(rand)), np.arange(3000))
    assert len({g.size for g in rand}) > 1  # independent labels: unequal sizes


def test_cyclic_poisson_samples_only_the_active_group() -> None:
    scheme = CyclicPoisson(n_steps=9, rate=1 / 3, min_sep=3)  # q = 1: whole group each step
    batches = list(scheme.batches(30, np.random.default_rng(2)))
    for step in range(3, 9):
        np.testing.assert_array_equal(batches[step], batches[step - 3])
    assert np.array_equal(np.sort(np.concatenate(batches[:3])), np.arange(30))


def test_balls_in_bins_cycles_through_a_fixed_partition() -> None:
    batches = list(BallsInBins(n_steps=8, cycle_length=3).batches(50, np.random.default_rng(4)))
    assert np.array_equal(np.sort(np.concatenate(batches[:3])), np.arange(50))
    for step in range(3, 8):
        np.testing.assert_array_equal(batches[step], batches[step - 3])


# -- sampling primitives ---------------------------------------------------------------------


def test_uniform_positions_edge_cases() -> None:
    rng = np.random.default_rng(0)
    assert uniform_positions(rng, 5, 0).size == 0
    np.testing.assert_array_equal(uniform_positions(rng, 4, 4), np.arange(4))
    pos = uniform_positions(rng, 100, 30)
    assert np.unique(pos).size == 30 and pos.min() >= 0 and pos.max() < 100


def test_availability_pool_keeps_a_partition_of_the_examples() -> None:
    rng = np.random.default_rng(5)
    n = 500
    pool = AvailabilityPool(np.arange(n, dtype=np.int64), n)
    barred: list[np.ndarray] = []
    for step in range(200):
        taken = pool.take(rng, 0.3 if step % 7 else 1.0)
        available = pool.pool[: pool.size]
        assert np.intersect1d(taken, available).size == 0
        barred.append(taken)
        if len(barred) > 2:
            pool.release(barred.pop(0))
        everyone = np.concatenate([pool.pool[: pool.size], *barred])
        np.testing.assert_array_equal(np.sort(everyone), np.arange(n))


def test_as_batch_sorts_with_either_method() -> None:
    x = np.array([9, 3, 7, 1], dtype=np.int64)
    np.testing.assert_array_equal(as_batch(x), [1, 3, 7, 9])
    np.testing.assert_array_equal(as_batch(x, 10), [1, 3, 7, 9])  # mask path
    np.testing.assert_array_equal(as_batch(x, 10**6), [1, 3, 7, 9])  # sort path


def test_b_min_sep_p_one_warm_start_fills_every_bin() -> None:
    scheme = BMinSep(n_steps=8, rate=0.25, min_sep=4)
    assert math.isclose(scheme.probability, 1.0)
    batches = list(scheme.batches(40, np.random.default_rng(0)))
    assert np.array_equal(np.sort(np.concatenate(batches[:4])), np.arange(40))
    for step in range(4, 8):
        np.testing.assert_array_equal(batches[step], batches[step - 4])


def test_cold_start_first_batch_uses_probability_p() -> None:
    scheme = BMinSep(n_steps=1, rate=0.2, min_sep=3, warm_start=False)  # p = 1/3
    sizes = [next(iter(scheme.batches(3000, np.random.default_rng(s)))).size for s in range(20)]
    # Mean 1000, sd of the mean sqrt(3000·(1/3)(2/3)/20) ≈ 5.8; 5 sd ≈ 29.
    assert abs(np.mean(sizes) - 1000) < 29
