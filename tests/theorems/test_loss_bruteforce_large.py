"""Longer horizons and larger populations against enumeration (slow: make test-all)."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    MultiAttributionLossModel,
    TruncatedBMinSepLossModel,
)
from tests.theorems import oracles
from tests.theorems.support import TOL, random_outputs

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize(("c", "b", "p"), [((0.6, 0.5, 0.4, 0.3), 4, 0.3), ((0.9, 0.4), 3, 0.6)])
def test_b_min_sep_twelve_steps(c: tuple[float, ...], b: int, p: float, warm: bool) -> None:
    n = 12
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=warm)
    y = random_outputs(4, n, seed=b)
    for sigma in (0.4, 1.0):
        expected = [oracles.b_min_sep_log_ratio(c, row, sigma, p, b, warm) for row in y]
        np.testing.assert_allclose(model.log_ratio_at(y, sigma, np), expected, atol=TOL)


def test_balls_in_bins_twelve_steps() -> None:
    c, n = (0.6, 0.5, 0.4, 0.3, 0.2), 12
    for cycle in (2, 3, 5, 12, 15):
        model = BallsInBinsLossModel(coefficients=c, n_steps=n, cycle_length=cycle)
        y = random_outputs(4, n, seed=cycle)
        expected = [oracles.balls_in_bins_log_ratio(c, row, 0.5, cycle) for row in y]
        np.testing.assert_allclose(model.log_ratio_at(y, 0.5, np), expected, atol=TOL)


def test_multi_attribution_eight_steps() -> None:
    c, n, b, p, k_u = (0.7, 0.5, 0.3), 8, 3, 0.3, 3
    model = MultiAttributionLossModel(
        coefficients=c, n_steps=n, min_sep=b, probability=p, max_user_examples=k_u
    )
    y = random_outputs(3, n, seed=4, scale=2.0)
    expected = [oracles.multi_attribution_log_ratio(c, row, 0.7, p, b, k_u) for row in y]
    np.testing.assert_allclose(model.log_ratio_at(y, 0.7, np), expected, atol=TOL)


@pytest.mark.parametrize("warm", [False, True])
def test_truncated_every_reachable_count_vector_with_three_others(warm: bool) -> None:
    c, n, b, p, size, max_batch = (0.8, 0.5, 0.3), 5, 3, 0.5, 4, 2
    model = TruncatedBMinSepLossModel(
        coefficients=c,
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=max_batch,
    )
    counts = np.asarray(sorted(oracles.other_counts_law(n, p, b, warm, size - 1)))
    y = random_outputs(len(counts), n, seed=9, scale=2.0)
    expected = [
        oracles.truncated_log_ratio(c, row, 0.6, p, b, warm, tuple(r), max_batch)
        for row, r in zip(y, counts, strict=True)
    ]
    np.testing.assert_allclose(model.log_ratio_at(y, counts, 0.6, np), expected, atol=TOL)
