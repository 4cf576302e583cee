"""b-min-sep loss model (docs/math.md §3, Theorem 5.1) against brute-force enumeration."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, Transcript
from minsep.schemes.losses import BlockTranscript, BMinSepLossModel
from minsep.testing import assert_loss_model_matches_bruteforce
from tests.theorems import oracles
from tests.theorems.support import TOL, backend, random_outputs, source

SIGMAS = (0.5, 1.0, 2.0)


def _model(c: tuple[float, ...], n: int, b: int, p: float, warm: bool) -> BMinSepLossModel:
    return BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)


@pytest.mark.parametrize(
    ("c", "warm", "expected"),
    [
        ((1.0,), False, 0.6070560625306676),
        ((1.0, 0.5), False, 0.9239798890121712),
        ((1.0, 0.5), True, 0.8329398380809252),
    ],
)
def test_math_md_oracles(c: tuple[float, ...], warm: bool, expected: float) -> None:
    model = _model(c, 3, 2, 0.5, warm)
    got = model.log_ratio_at(np.ones((1, 3)), 1.0, np)
    assert got[0] == pytest.approx(expected, abs=1e-13)


def test_math_md_pattern_laws() -> None:
    """The enumerated law itself matches the exact table of docs/math.md §3."""
    patterns = [(1, 0, 1), (1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)]
    cold = oracles.b_min_sep_law(3, 0.5, 2, warm=False)
    warm = oracles.b_min_sep_law(3, 0.5, 2, warm=True)
    assert [cold[x] for x in patterns] == pytest.approx([1 / 4, 1 / 4, 1 / 4, 1 / 8, 1 / 8])
    assert [warm[x] for x in patterns] == pytest.approx([1 / 6, 1 / 6, 1 / 3, 1 / 6, 1 / 6])
    assert set(cold) == set(warm) == set(patterns)


CASES = [
    # (coefficients, n, b, p)
    ((1.0,), 6, 1, 0.3),
    ((1.0,), 7, 2, 0.5),
    ((0.9, 0.3), 8, 2, 0.4),
    ((0.9, 0.3), 6, 3, 0.7),
    ((0.7, 0.5, 0.3), 8, 3, 0.35),
    ((0.7, 0.5, 0.3), 9, 4, 0.6),
    ((0.6, 0.5, 0.4, 0.3), 9, 4, 0.45),
    ((0.6, 0.5, 0.4, 0.3), 10, 5, 0.25),
    ((0.6, 0.5, 0.4, 0.3), 3, 4, 0.5),  # n < k: every block is cut
    ((1.0, 0.2), 4, 7, 0.3),  # b > n
    ((0.8, 0.6), 6, 2, 1.0),  # p = 1
]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize(("c", "n", "b", "p"), CASES)
def test_recursion_equals_enumeration(
    c: tuple[float, ...], n: int, b: int, p: float, warm: bool
) -> None:
    model = _model(c, n, b, p, warm)
    y = random_outputs(5, n, seed=n * 31 + b)
    assert_loss_model_matches_bruteforce(
        lambda outputs, sigma: model.log_ratio_at(outputs, sigma, np),
        lambda row, sigma: oracles.b_min_sep_log_ratio(c, row, sigma, p, b, warm),
        y,
        SIGMAS,
        atol=TOL,
    )


def test_poisson_is_the_product_formula() -> None:
    """b = 1, C = I: P/Q = prod_i (1 - p + p r_i) (docs/math.md §4)."""
    n, p, sigma = 60, 0.15, 0.8
    y = random_outputs(6, n, seed=3)
    model = _model((1.0,), n, 1, p, False)
    expected = np.sum(np.log1p(p * np.expm1((y - 0.5) / sigma**2)), axis=1)
    np.testing.assert_allclose(model.log_ratio_at(y, sigma, np), expected, rtol=1e-12)
    warm = _model((1.0,), n, 1, p, True)  # b = 1: warm and cold coincide
    np.testing.assert_allclose(warm.log_ratio_at(y, sigma, np), expected, rtol=1e-12)


def _reconstruct(
    model: Any, direction: Direction, n_samples: int, seed: int, sigma: float
) -> np.ndarray:
    """Replay the draw's random stream and build y = C x + sigma z densely."""
    rng = source(seed)
    C = oracles.strategy_matrix(model.coefficients, model.n_steps)
    x = np.zeros((n_samples, model.n_steps))
    if direction is Direction.REMOVE:
        x = np.asarray(model.participation(n_samples, rng, backend()), dtype=float)
    z = rng.standard_normal((n_samples, model.n_steps))
    return np.asarray(x @ C.T + sigma * z)


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("warm", [False, True])
def test_transcript_rebuilds_the_outputs(direction: Direction, warm: bool) -> None:
    model = _model((0.7, 0.5, 0.3), 12, 3, 0.4, warm)
    transcript = model.draw(40, direction, source(11), backend())
    assert isinstance(transcript, BlockTranscript) and isinstance(transcript, Transcript)
    assert transcript.n_samples == 40 and transcript.direction is direction
    assert (transcript.signal is None) == (direction is Direction.ADD)
    for sigma in (0.3, 1.7):
        y = _reconstruct(model, direction, 40, 11, sigma)
        np.testing.assert_allclose(
            model.log_ratio(transcript, sigma), model.log_ratio_at(y, sigma, np), atol=1e-9
        )
        loss = model.privacy_loss(transcript, sigma)
        np.testing.assert_allclose(loss, direction.sign * model.log_ratio(transcript, sigma))


def test_draws_are_reproducible() -> None:
    model = _model((0.8, 0.6), 10, 2, 0.3, True)
    a = model.draw(7, Direction.REMOVE, source(5), backend())
    b = model.draw(7, Direction.REMOVE, source(5), backend())
    np.testing.assert_array_equal(a.noise, b.noise)
    np.testing.assert_array_equal(a.signal, b.signal)


def test_patterns_respect_the_min_separation() -> None:
    model = _model((1.0, 0.5, 0.2), 40, 5, 0.6, True)
    x = np.asarray(model.participation(200, source(2), backend()))
    for row in x:
        steps = np.flatnonzero(row)
        assert np.all(np.diff(steps) >= 5)


def test_p_equal_one_raises_no_warning() -> None:
    model = _model((0.8, 0.6), 10, 2, 1.0, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        transcript = model.draw(5, Direction.REMOVE, source(1), backend())
        assert np.all(np.isfinite(model.log_ratio(transcript, 0.5)))


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"coefficients": ()}, "coefficients"),
        ({"coefficients": (1.0, -0.1)}, "coefficients"),
        ({"coefficients": (1.0, float("nan"))}, "coefficients"),
        ({"coefficients": (0.0, 0.0)}, "coefficients"),
        ({"coefficients": "1.0"}, "coefficients"),
        ({"coefficients": (True,)}, "coefficients"),
        ({"n_steps": 0}, "n_steps"),
        ({"n_steps": 2.5}, "n_steps"),
        ({"min_sep": 0}, "min_sep"),
        ({"min_sep": 1}, "min_sep"),  # fewer than the 2 bands
        ({"probability": 0.0}, "probability"),
        ({"probability": 1.5}, "probability"),
        ({"probability": float("inf")}, "probability"),
        ({"warm_start": 1}, "warm_start"),
        ({"warm_start": "yes"}, "warm_start"),
    ],
)
def test_invalid_arguments_are_refused(kwargs: dict[str, Any], parameter: str) -> None:
    base: dict[str, Any] = {
        "coefficients": (0.8, 0.6),
        "n_steps": 5,
        "min_sep": 2,
        "probability": 0.5,
        "warm_start": False,
    }
    with pytest.raises(ConfigurationError, match=parameter):
        BMinSepLossModel(**{**base, **kwargs})


def test_coefficients_are_converted_to_a_tuple() -> None:
    model = BMinSepLossModel(
        coefficients=np.array([0.8, 0.6]), n_steps=4, min_sep=2, probability=0.5, warm_start=False
    )
    assert model.coefficients == (0.8, 0.6)
    assert hash(model) == hash(_model((0.8, 0.6), 4, 2, 0.5, False))
