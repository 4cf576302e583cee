"""Truncated b-min-sep loss model (docs/math.md §6, paper App. D) against enumeration."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BMinSepLossModel, TruncatedBMinSepLossModel, TruncatedTranscript
from tests.theorems import oracles
from tests.theorems.support import TOL, backend, random_outputs, source


def _model(
    c: tuple[float, ...], n: int, b: int, p: float, warm: bool, size: int, max_batch: int
) -> TruncatedBMinSepLossModel:
    return TruncatedBMinSepLossModel(
        coefficients=c,
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=max_batch,
    )


@pytest.mark.parametrize(
    ("counts", "max_batch", "expected"),
    [((1, 0, 0), 1, 0.8407396632949528), ((2, 0, 1), 2, 0.978400107545793)],
)
def test_math_md_oracles(counts: tuple[int, ...], max_batch: int, expected: float) -> None:
    model = _model((1.0, 0.5), 3, 2, 0.5, False, 10, max_batch)
    got = model.log_ratio_at(np.ones((1, 3)), np.asarray([counts]), 1.0, np)
    assert got[0] == pytest.approx(expected, abs=1e-13)


CASES = [
    # (coefficients, n, b, p, B_max)
    ((1.0,), 5, 1, 0.4, 1),
    ((1.0,), 5, 2, 0.5, 2),
    ((0.9, 0.3), 6, 2, 0.35, 1),
    ((0.9, 0.3), 5, 3, 0.6, 2),
    ((0.7, 0.5, 0.3), 6, 3, 0.45, 2),
    ((0.6, 0.5, 0.4, 0.3), 7, 4, 0.5, 3),
    ((0.6, 0.5, 0.4, 0.3), 3, 5, 0.5, 1),
    ((0.8, 0.6), 5, 2, 1.0, 2),
]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize(("c", "n", "b", "p", "max_batch"), CASES)
def test_two_recursions_equal_enumeration(
    c: tuple[float, ...], n: int, b: int, p: float, max_batch: int, warm: bool
) -> None:
    """ln P(y|r)/Q(y|r) for arbitrary counts r (every mix of truncating and free steps)."""
    model = _model(c, n, b, p, warm, 10, max_batch)
    gen = np.random.default_rng(n + 10 * b + 100 * max_batch)
    counts = gen.integers(0, 2 * max_batch + 2, size=(6, n))
    y = random_outputs(6, n, seed=b * 13 + n, scale=2.0)
    for sigma in (0.5, 1.0, 2.0):
        expected = [
            oracles.truncated_log_ratio(c, row, sigma, p, b, warm, tuple(r), max_batch)
            for row, r in zip(y, counts, strict=True)
        ]
        got = model.log_ratio_at(y, counts, sigma, np)
        np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


@pytest.mark.parametrize("warm", [False, True])
def test_equals_enumeration_on_every_reachable_count_vector(warm: bool) -> None:
    """Small |D|: every r the other examples' chains can produce."""
    c, n, b, p, size, max_batch = (0.8, 0.6), 4, 2, 0.5, 3, 1
    model = _model(c, n, b, p, warm, size, max_batch)
    law = oracles.other_counts_law(n, p, b, warm, size - 1)
    counts = np.asarray(sorted(law))
    assert counts.max() == size - 1 and len(counts) > 10
    y = random_outputs(len(counts), n, seed=2, scale=2.0)
    expected = [
        oracles.truncated_log_ratio(c, row, 0.8, p, b, warm, tuple(r), max_batch)
        for row, r in zip(y, counts, strict=True)
    ]
    np.testing.assert_allclose(model.log_ratio_at(y, counts, 0.8, np), expected, atol=TOL)


@pytest.mark.parametrize("warm", [False, True])
def test_without_truncation_it_is_b_min_sep(warm: bool) -> None:
    c, n, b, p = (0.7, 0.5, 0.3), 20, 3, 0.3
    truncated = _model(c, n, b, p, warm, 50, 50)  # r <= 49 < B_max: never truncates
    plain = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)
    y = random_outputs(5, n, seed=6)
    counts = np.full((5, n), 49)
    np.testing.assert_allclose(
        truncated.log_ratio_at(y, counts, 0.7, np), plain.log_ratio_at(y, 0.7, np), atol=1e-12
    )


def test_warm_average_is_taken_before_the_ratio() -> None:
    """App. D's subtlety: averaging ln P/Q over initial states would give another value."""
    c, n, b, p, max_batch = (0.8, 0.6), 5, 3, 0.5, 1
    y = random_outputs(1, n, seed=5, scale=2.0)[0]
    counts = (2, 0, 3, 1, 2)
    exact = oracles.truncated_log_ratio(c, y, 0.7, p, b, True, counts, max_batch)
    model = _model(c, n, b, p, True, 10, max_batch)
    got = model.log_ratio_at(y[None, :], np.asarray([counts]), 0.7, np)[0]
    assert got == pytest.approx(exact, abs=TOL)
    # the wrong order: ln P/Q per initial state of the sensitive example, then averaged
    C = oracles.strategy_matrix(c, n)
    wrong = 0.0
    for state, weight in oracles.initial_law(p, b, True).items():
        sampled_law = {
            x: prob
            for x in oracles.b_min_sep_law(n, p, b, True)
            if (prob := oracles.chain_path_probability(x, p, b, state)) > 0
        }
        p_law, q_law = oracles.truncated_laws_given(sampled_law, counts, max_batch)
        ratio = oracles.log_mixture_ratio(p_law, C, y, 0.7) - oracles.log_mixture_ratio(
            q_law, C, y, 0.7
        )
        wrong += weight * np.exp(ratio)
    assert abs(np.log(wrong) - exact) > 1e-3


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("warm", [False, True])
def test_transcript_rebuilds_the_outputs(direction: Direction, warm: bool) -> None:
    c, n = (0.7, 0.5, 0.3), 12
    model = _model(c, n, 3, 0.3, warm, 40, 6)
    transcript = model.draw(50, direction, source(21), backend())
    assert isinstance(transcript, TruncatedTranscript) and transcript.n_samples == 50
    rng = source(21)
    x, counts = model.participation(50, direction, rng, backend())
    x = np.asarray(x)
    np.testing.assert_array_equal(np.asarray(transcript.counts), np.asarray(counts))
    assert set(np.unique(x)) <= ({0.0, 1.0, 2.0} if direction is Direction.REMOVE else {0.0, -1.0})
    assert np.any(np.asarray(counts) >= 6), "the case should exercise truncation"
    z = rng.standard_normal((50, n))
    for sigma in (0.4, 1.3):
        y = x @ oracles.strategy_matrix(c, n).T + sigma * z
        np.testing.assert_allclose(
            model.log_ratio(transcript, sigma),
            model.log_ratio_at(y, np.asarray(counts), sigma, np),
            atol=1e-9,
        )


def test_counts_stay_within_the_other_examples() -> None:
    model = _model((1.0, 0.5), 60, 3, 0.4, True, 25, 8)
    counts = np.asarray(model.counts(200, source(1), backend()))
    assert counts.min() >= 0
    window = np.lib.stride_tricks.sliding_window_view(counts, 3, axis=1).sum(axis=2)
    assert window.max() <= 24, "an example was sampled twice within b steps"


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"dataset_size": 0}, "dataset_size"),
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"max_batch_size": 2.5}, "max_batch_size"),
        ({"min_sep": 1}, "min_sep"),
        ({"warm_start": None}, "warm_start"),
        ({"probability": -0.1}, "probability"),
        ({"coefficients": (0.0,)}, "coefficients"),
    ],
)
def test_invalid_arguments_are_refused(kwargs: dict[str, Any], parameter: str) -> None:
    base: dict[str, Any] = {
        "coefficients": (0.8, 0.6),
        "n_steps": 5,
        "min_sep": 2,
        "probability": 0.5,
        "warm_start": False,
        "dataset_size": 10,
        "max_batch_size": 3,
    }
    with pytest.raises(ConfigurationError, match=parameter):
        TruncatedBMinSepLossModel(**{**base, **kwargs})
