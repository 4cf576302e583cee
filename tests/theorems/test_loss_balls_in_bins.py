"""Balls-in-bins loss model (docs/math.md §4) against enumeration, and against warm b-min-sep."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BallsInBinsLossModel, BinsTranscript, BMinSepLossModel
from tests.theorems import oracles
from tests.theorems.support import TOL, backend, random_outputs, source


def _model(c: tuple[float, ...], n: int, cycle: int) -> BallsInBinsLossModel:
    return BallsInBinsLossModel(coefficients=c, n_steps=n, cycle_length=cycle)


@pytest.mark.parametrize(
    ("c", "y", "expected"),
    [
        ((1.0, 0.0), (1.0, 0.0, 1.0, 0.0), 0.4337808304830272),
        ((1.0, 0.5), (1.0, 0.5, 1.0, 0.5), 0.9052974004451105),
    ],
)
def test_math_md_oracles(c: tuple[float, ...], y: tuple[float, ...], expected: float) -> None:
    got = _model(c, 4, 2).log_ratio_at(np.asarray([y]), 1.0, np)
    assert got[0] == pytest.approx(expected, abs=1e-13)


CASES = [
    # (coefficients, n, T): T < k (overlapping columns), T = k, T > k, T > n, T = 1
    ((1.0,), 6, 3),
    ((0.9, 0.3), 7, 2),
    ((0.7, 0.5, 0.3), 8, 2),
    ((0.6, 0.5, 0.4, 0.3), 9, 3),
    ((0.6, 0.5, 0.4, 0.3), 8, 4),
    ((0.6, 0.5, 0.4, 0.3), 7, 1),
    ((0.7, 0.5, 0.3), 5, 5),
    ((0.7, 0.5, 0.3), 4, 9),
    ((0.5, 0.5, 0.5, 0.5), 3, 2),
]


@pytest.mark.parametrize(("c", "n", "cycle"), CASES)
def test_logsumexp_equals_enumeration(c: tuple[float, ...], n: int, cycle: int) -> None:
    model = _model(c, n, cycle)
    y = random_outputs(5, n, seed=n * 7 + cycle)
    for sigma in (0.5, 1.0, 2.0):
        expected = [oracles.balls_in_bins_log_ratio(c, row, sigma, cycle) for row in y]
        np.testing.assert_allclose(model.log_ratio_at(y, sigma, np), expected, rtol=0, atol=TOL)


@pytest.mark.parametrize(("c", "n", "cycle"), CASES)
def test_gram_is_dense(c: tuple[float, ...], n: int, cycle: int) -> None:
    bins = min(cycle, n)
    X = np.zeros((n, bins))
    for t in range(n):
        X[t, t % cycle] = 1.0
    CX = oracles.strategy_matrix(c, n) @ X
    np.testing.assert_allclose(_model(c, n, cycle).gram(), CX.T @ CX, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    ("c", "n", "b"),
    [((1.0,), 9, 3), ((0.8, 0.6), 10, 2), ((0.7, 0.5, 0.3), 11, 4), ((0.6, 0.5, 0.4), 8, 3)],
)
def test_warm_b_min_sep_with_p_one_is_balls_in_bins(c: tuple[float, ...], n: int, b: int) -> None:
    """Algorithm 2 with p = 1 and b = T forms the T bins up front (docs/math.md §3, paper §4)."""
    bins = _model(c, n, b)
    bms = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=1.0, warm_start=True)
    y = random_outputs(8, n, seed=b)
    for sigma in (0.3, 1.0):
        np.testing.assert_allclose(
            bms.log_ratio_at(y, sigma, np), bins.log_ratio_at(y, sigma, np), rtol=0, atol=TOL
        )


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize(("n", "cycle"), [(10, 3), (5, 8)])
def test_transcript_rebuilds_the_outputs(direction: Direction, n: int, cycle: int) -> None:
    c = (0.7, 0.5, 0.3)
    model = _model(c, n, cycle)
    transcript = model.draw(30, direction, source(4), backend())
    assert isinstance(transcript, BinsTranscript) and transcript.n_samples == 30
    rng = source(4)
    x = np.zeros((30, n))
    if direction is Direction.REMOVE:
        chosen = np.asarray(model.bins(30, rng, backend()))
        for row, s in enumerate(chosen):
            x[row, s::cycle] = 1.0
    z = rng.standard_normal((30, n))
    for sigma in (0.4, 1.3):
        y = x @ oracles.strategy_matrix(c, n).T + sigma * z
        np.testing.assert_allclose(
            model.log_ratio(transcript, sigma), model.log_ratio_at(y, sigma, np), atol=1e-9
        )


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"coefficients": (-1.0,)}, "coefficients"),
        ({"n_steps": 0}, "n_steps"),
        ({"cycle_length": 0}, "cycle_length"),
        ({"cycle_length": 2.0}, "cycle_length"),
    ],
)
def test_invalid_arguments_are_refused(kwargs: dict[str, Any], parameter: str) -> None:
    base: dict[str, Any] = {"coefficients": (1.0,), "n_steps": 4, "cycle_length": 2}
    with pytest.raises(ConfigurationError, match=parameter):
        BallsInBinsLossModel(**{**base, **kwargs})
