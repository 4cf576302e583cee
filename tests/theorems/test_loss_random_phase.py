"""Random-phase cyclic Poisson loss model (docs/math.md §4.1) against enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Direction
from minsep.framework.registries import schemes, strategies
from minsep.schemes.losses import BMinSepLossModel, RandomPhaseCyclicLossModel
from tests.theorems import oracles
from tests.theorems.support import TOL, backend, random_outputs, source

Pattern = tuple[int, ...]


def random_phase_law(n: int, groups: int, q: float) -> dict[Pattern, float]:
    """Uniform phase g in [b], then Bernoulli(q) at every step i with i mod b = g."""
    law: dict[Pattern, float] = {}
    for g in range(groups):
        steps = [i for i in range(n) if i % groups == g]
        for coins in itertools.product((0, 1), repeat=len(steps)):
            x = [0] * n
            for step, coin in zip(steps, coins, strict=True):
                x[step] = coin
            k = sum(coins)
            prob = q**k * (1 - q) ** (len(steps) - k) / groups
            law[tuple(x)] = law.get(tuple(x), 0.0) + prob
    return law


def _model(c: tuple[float, ...], n: int, b: int, q: float) -> RandomPhaseCyclicLossModel:
    return RandomPhaseCyclicLossModel(coefficients=c, n_steps=n, groups=b, group_rate=q)


CASES = [
    # (coefficients, n, b, q): k = b, k < b, b > n (empty phases), q = 1, b = 1
    ((0.9, 0.3), 7, 2, 0.4),
    ((0.7, 0.5, 0.3), 8, 3, 0.5),
    ((0.7, 0.5), 8, 4, 0.3),
    ((1.0,), 3, 5, 0.6),
    ((0.6, 0.5, 0.4), 7, 3, 1.0),
    ((1.0,), 6, 1, 0.25),
]


@pytest.mark.parametrize(("c", "n", "b", "q"), CASES)
def test_logsumexp_over_phases_equals_enumeration(
    c: tuple[float, ...], n: int, b: int, q: float
) -> None:
    model = _model(c, n, b, q)
    C = oracles.strategy_matrix(c, n)
    law = random_phase_law(n, b, q)
    y = random_outputs(5, n, seed=n * 11 + b)
    for sigma in (0.5, 1.0, 2.0):
        expected = [oracles.log_mixture_ratio(law, C, row, sigma) for row in y]
        np.testing.assert_allclose(model.log_ratio_at(y, sigma, np), expected, rtol=0, atol=TOL)


def test_one_group_is_poisson() -> None:
    model = _model((1.0,), 6, 1, 0.3)
    poisson = BMinSepLossModel(
        coefficients=(1.0,), n_steps=6, min_sep=1, probability=0.3, warm_start=False
    )
    y = random_outputs(8, 6, seed=3)
    np.testing.assert_allclose(
        model.log_ratio_at(y, 0.8, np), poisson.log_ratio_at(y, 0.8, np), rtol=0, atol=TOL
    )


def test_sampler_draws_the_enumerated_law() -> None:
    n, b, q = 5, 2, 0.5
    model = _model((0.8, 0.6), n, b, q)
    x = model.participation(40_000, source(5), backend())
    law = random_phase_law(n, b, q)
    counts: dict[Pattern, int] = {}
    for row in x.astype(int):
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    assert set(counts) <= set(law)
    for pattern, prob in law.items():
        got = counts.get(pattern, 0) / 40_000
        assert abs(got - prob) < 5 * math.sqrt(prob * (1 - prob) / 40_000) + 1e-12


def test_transcript_rebuilds_the_outputs() -> None:
    model = _model((0.7, 0.5, 0.3), 9, 3, 0.4)
    rng = np.random.default_rng(0)
    for direction in Direction:
        transcript = model.draw(16, direction, source(9), backend())
        # replay the same stream: the pattern (REMOVE only) then the normals
        replay = source(9)
        x = np.zeros((16, 9))
        if direction is Direction.REMOVE:
            x = model.participation(16, replay, backend()).astype(float)
        z = replay.standard_normal((16, 9))
        C = oracles.strategy_matrix((0.7, 0.5, 0.3), 9)
        sigma = float(rng.uniform(0.5, 2.0))
        y = x @ C.T + sigma * z
        np.testing.assert_allclose(
            model.log_ratio(transcript, sigma), model.log_ratio_at(y, sigma, np), atol=1e-9
        )


def test_change_of_measure_identity() -> None:
    """E_P[e^{-L}] = 1 with the model's own sampler (docs/math.md §1)."""
    model = _model((0.8, 0.6), 16, 4, 0.5)
    transcript = model.draw(50_000, Direction.REMOVE, source(1), backend())
    mean = float(np.mean(np.exp(-model.log_ratio(transcript, 1.0))))
    assert mean == pytest.approx(1.0, abs=0.02)


def test_scheme_hook_only_for_independent_groups() -> None:
    strategy = strategies.get("banded_toeplitz").for_steps(32, bands=4)
    random = schemes.get("cyclic_poisson").from_rate(32, 1 / 8, min_sep=4, partition="random")
    model = random.loss_model(strategy)
    assert isinstance(model, RandomPhaseCyclicLossModel)
    assert (model.groups, model.group_rate) == (4, 0.5)
    equal = schemes.get("cyclic_poisson").from_rate(32, 1 / 8, min_sep=4)
    with pytest.raises(NotAccountableError, match="partition = 'random'"):
        equal.loss_model(strategy)
    too_many_bands = strategies.get("banded_toeplitz").for_steps(32, bands=8)
    with pytest.raises(NotAccountableError, match="bands"):
        random.loss_model(too_many_bands)


def test_bands_must_fit_the_groups() -> None:
    with pytest.raises(ConfigurationError, match="min_sep"):
        _model((0.5, 0.5, 0.5), 8, 2, 0.5)
    with pytest.raises(ConfigurationError, match="group_rate"):
        _model((1.0,), 8, 2, 1.5)
