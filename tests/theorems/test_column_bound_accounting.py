"""Monte Carlo accounting with the r-min-sep bounds never under-reports (docs/math.md §2.1).

The exact reference is the same Monte Carlo with ``ln P/Q`` by enumeration of every pattern
(n = 6: 2^6 patterns), evaluated at the very outputs y the bounded model drew.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework.interfaces import Direction
from minsep.schemes.b_min_sep.column_bound import ColumnBoundLossModel
from minsep.schemes.b_min_sep.columns import DenseColumns
from minsep.schemes.b_min_sep.scheme import BMinSep
from minsep.testing import change_of_measure_mean
from tests.theorems import oracles
from tests.theorems.nonbanded import DenseTestStrategy, geometric_column, toeplitz_from_column
from tests.theorems.support import backend, source

N = 6
SIGMA = 0.9
C = toeplitz_from_column(geometric_column(N, 0.7))


def _exact_log_ratio(y: np.ndarray, p: float, b: int, warm: bool) -> np.ndarray:
    law = oracles.b_min_sep_law(N, p, b, warm)
    patterns = np.array(list(law), dtype=float)
    log_prob = np.log(np.array(list(law.values())))
    means = patterns @ C.T  # rows C x
    exponents = (y @ means.T - 0.5 * np.sum(means**2, axis=1)) / SIGMA**2
    return np.asarray(logsumexp(exponents + log_prob, axis=1))


def _losses(model: ColumnBoundLossModel, direction: Direction, seed: int) -> tuple[Any, Any]:
    """(bounded loss, exact loss) on the same draws."""
    transcript: Any = model.draw(20_000, direction, source(seed), backend())
    dots = SIGMA * transcript.noise
    if transcript.stored_signal is not None:
        dots = dots + transcript.stored_signal
    y = np.linalg.solve(C.T, dots.T).T
    exact = _exact_log_ratio(y, model.probability, model.min_sep, model.warm_start)
    return np.asarray(model.privacy_loss(transcript, SIGMA)), direction.sign * exact


def _delta(loss: np.ndarray, epsilon: float) -> float:
    return float(np.mean(-np.expm1(np.minimum(epsilon - loss, 0.0))))


def test_delta_with_the_bounds_is_never_below_the_exact_delta_on_the_same_draws() -> None:
    model = ColumnBoundLossModel(
        columns=DenseColumns(C), min_sep=2, probability=0.45, warm_start=True
    )
    gaps = []
    for seed, direction in enumerate(Direction):
        bounded, exact = _losses(model, direction, seed)
        assert np.all(bounded >= exact - 1e-9)
        for epsilon in (0.0, 0.5, 1.0, 2.0, 3.0):
            gaps.append(_delta(bounded, epsilon) - _delta(exact, epsilon))
    assert min(gaps) >= 0.0
    assert max(gaps) > 1e-3  # the geometric C is far from banded: the bound is visibly loose


def test_change_of_measure_is_at_most_one() -> None:
    """E[exp(-L)] <= 1 in both directions (docs/math.md §2.1), and well below one here."""
    model = ColumnBoundLossModel(
        columns=DenseColumns(C), min_sep=2, probability=0.45, warm_start=True
    )
    for direction in Direction:
        mean, stderr = change_of_measure_mean(model, direction, SIGMA, samples=40_000, seed=3)
        assert mean <= 1.0 + 5 * stderr, (direction, mean, stderr)
    assert mean < 1.0 - 5 * stderr  # ADD: the lower bound of P/Q has a visibly smaller mean


def _exact_epsilon(delta: float, b: int, p: float, warm: bool) -> float:
    model = ColumnBoundLossModel(columns=DenseColumns(C), min_sep=b, probability=p, warm_start=warm)
    exact = [_losses(model, direction, 10 + i)[1] for i, direction in enumerate(Direction)]
    low, high = 0.0, 20.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        if max(_delta(loss, mid) for loss in exact) <= delta:
            high = mid
        else:
            low = mid
    return high


def test_the_certified_epsilon_is_at_least_the_exact_one() -> None:
    scheme = BMinSep(n_steps=N, rate=0.3, min_sep=2, warm_start=True)
    strategy = DenseTestStrategy(C)
    accountant = MonteCarloAccountant(
        samples=4000,
        pilot_samples=2000,
        seed=20261201,
        run=RunSettings(chunk_size=4096, progress=False),
    )
    result = accountant.epsilon(scheme, strategy, SIGMA, 1e-2)  # type: ignore[arg-type]
    exact = _exact_epsilon(1e-2, 2, scheme.probability, True)
    assert result.certified_epsilon >= exact, (result.certified_epsilon, exact)
    assert result.epsilon >= exact - 0.05, (result.epsilon, exact)  # the estimate, too
