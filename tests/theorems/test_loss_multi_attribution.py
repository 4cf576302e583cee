"""Multi-attribution loss models (docs/math.md §5, paper §6) against enumeration."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import (
    BMinSepLossModel,
    ConjecturedMultiAttributionLossModel,
    MultiAttributionLossModel,
)
from minsep.schemes.multi_attribution.loss import binomial_log_weights
from tests.theorems import oracles
from tests.theorems.support import TOL, backend, random_outputs, source


def _kwargs(c: tuple[float, ...], n: int, b: int, p: float, k_u: int) -> dict[str, Any]:
    return {
        "coefficients": c,
        "n_steps": n,
        "min_sep": b,
        "probability": p,
        "max_user_examples": k_u,
    }


CASES = [
    # (coefficients, n, b, p, k_u)
    ((1.0,), 5, 1, 0.3, 2),
    ((1.0,), 6, 2, 0.4, 3),
    ((0.9, 0.3), 6, 2, 0.25, 2),
    ((0.9, 0.3), 5, 3, 0.5, 3),
    ((0.7, 0.5, 0.3), 6, 3, 0.3, 2),
    ((0.7, 0.5, 0.3), 5, 3, 0.6, 3),
    ((0.6, 0.5, 0.4, 0.3), 6, 4, 0.35, 2),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5, 3),
    ((0.8, 0.6), 5, 2, 1.0, 2),
]


@pytest.mark.parametrize(("c", "n", "b", "p", "k_u"), CASES)
def test_recursion_equals_enumeration(
    c: tuple[float, ...], n: int, b: int, p: float, k_u: int
) -> None:
    model = MultiAttributionLossModel(**_kwargs(c, n, b, p, k_u))
    y = random_outputs(4, n, seed=n + 10 * b + 100 * k_u, scale=2.0)
    for sigma in (0.5, 1.0, 2.0):
        expected = [oracles.multi_attribution_log_ratio(c, row, sigma, p, b, k_u) for row in y]
        np.testing.assert_allclose(model.log_ratio_at(y, sigma, np), expected, rtol=0, atol=TOL)


def test_one_example_per_user_is_cold_b_min_sep() -> None:
    c, n, b, p = (0.7, 0.5, 0.3), 30, 3, 0.2
    multi = MultiAttributionLossModel(**_kwargs(c, n, b, p, 1))
    single = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=False)
    y = random_outputs(6, n, seed=1)
    np.testing.assert_allclose(multi.log_ratio_at(y, 0.6, np), single.log_ratio_at(y, 0.6, np))


def test_binomial_log_weights() -> None:
    weights = np.exp(binomial_log_weights(3, 0.25))
    np.testing.assert_allclose(weights, [27 / 64, 27 / 64, 9 / 64, 1 / 64])
    assert binomial_log_weights(2, 1.0) == [-np.inf, -np.inf, 0.0]


@pytest.mark.parametrize("direction", list(Direction))
def test_transcript_rebuilds_the_outputs(direction: Direction) -> None:
    c, n = (0.7, 0.5, 0.3), 12
    model = MultiAttributionLossModel(**_kwargs(c, n, 3, 0.3, 3))
    transcript = model.draw(30, direction, source(9), backend())
    rng = source(9)
    x = np.zeros((30, n))
    if direction is Direction.REMOVE:
        x = np.asarray(model.participation(30, rng, backend()))
    z = rng.standard_normal((30, n))
    for sigma in (0.4, 1.3):
        y = x @ oracles.strategy_matrix(c, n).T + sigma * z
        np.testing.assert_allclose(
            model.log_ratio(transcript, sigma), model.log_ratio_at(y, sigma, np), atol=1e-9
        )


def test_counts_respect_user_level_min_separation() -> None:
    model = MultiAttributionLossModel(**_kwargs((1.0, 0.5), 50, 4, 0.4, 3))
    x = np.asarray(model.participation(100, source(3), backend()))
    assert set(np.unique(x)) <= {0.0, 1.0, 2.0, 3.0}
    for row in x:
        assert np.all(np.diff(np.flatnonzero(row)) >= 4)


def test_conjectured_model_is_flagged_and_warns() -> None:
    kwargs = _kwargs((0.8, 0.6), 8, 2, 0.3, 2)
    conjectured = ConjecturedMultiAttributionLossModel(**kwargs)
    proven = MultiAttributionLossModel(**kwargs)
    assert ConjecturedMultiAttributionLossModel.conjectured is True
    assert MultiAttributionLossModel.conjectured is False
    assert "conjecture" in (ConjecturedMultiAttributionLossModel.__doc__ or "")
    with pytest.warns(UserWarning, match="conjecture"):
        transcript = conjectured.draw(10, Direction.REMOVE, source(2), backend())
    with pytest.warns(UserWarning, match="conjecture"):
        values = conjectured.log_ratio(transcript, 0.9)
    np.testing.assert_array_equal(values, proven.log_ratio(transcript, 0.9))


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"max_user_examples": 0}, "max_user_examples"),
        ({"max_user_examples": 1.5}, "max_user_examples"),
        ({"min_sep": 1}, "min_sep"),
        ({"probability": 0.0}, "probability"),
        ({"coefficients": ()}, "coefficients"),
        ({"n_steps": -1}, "n_steps"),
    ],
)
@pytest.mark.parametrize("cls", [MultiAttributionLossModel, ConjecturedMultiAttributionLossModel])
def test_invalid_arguments_are_refused(
    cls: type[MultiAttributionLossModel], kwargs: dict[str, Any], parameter: str
) -> None:
    base = _kwargs((0.8, 0.6), 5, 2, 0.5, 2)
    with pytest.raises(ConfigurationError, match=parameter):
        cls(**{**base, **kwargs})
