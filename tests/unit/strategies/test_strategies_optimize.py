"""The MSE-optimal banded Toeplitz optimiser: objective, gradient, optimum, cache."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize

from minsep.framework.errors import ConfigurationError
from minsep.strategies import (
    BandedToeplitz,
    clear_memory_cache,
    objective_and_gradient,
    optimal_coefficients,
)
from minsep.strategies import cache as strategy_cache
from minsep.strategies.optimize import cache_key
from minsep.strategies.toeplitz import central_binomial_start


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(root))
    clear_memory_cache()
    return root


def _dense_objective(c: np.ndarray, n: int, objective: str) -> float:
    k = c.size
    C = np.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - k + 1), i + 1):
            C[i, j] = c[i - j]
    B = np.tril(np.ones((n, n))) @ np.linalg.inv(C)
    rows = np.sum(B * B, axis=1)
    error = rows.mean() if objective == "mean" else rows.max()
    return float(error * (c @ c))


@pytest.mark.parametrize("objective", ["mean", "max"])
@pytest.mark.parametrize(("n", "k"), [(1, 1), (5, 5), (12, 3), (30, 7)])
def test_objective_matches_dense(objective: str, n: int, k: int) -> None:
    rng = np.random.default_rng(n * 100 + k)
    for c in (central_binomial_start(k), np.sort(rng.uniform(0.1, 1.0, k))[::-1]):
        value, _ = objective_and_gradient(c, n, objective)
        assert value == pytest.approx(_dense_objective(c, n, objective), rel=1e-10)


@pytest.mark.parametrize("objective", ["mean", "max"])
@pytest.mark.parametrize(("n", "k"), [(6, 6), (40, 5), (200, 9)])
def test_gradient_matches_finite_differences(objective: str, n: int, k: int) -> None:
    rng = np.random.default_rng(7 * n + k)
    c = np.concatenate(([1.0], rng.uniform(0.0, 0.6, k - 1)))
    _, gradient = objective_and_gradient(c, n, objective)
    step = 1e-6
    numeric = np.array(
        [
            (
                objective_and_gradient(c + step * e, n, objective)[0]
                - objective_and_gradient(c - step * e, n, objective)[0]
            )
            / (2 * step)
            for e in np.eye(k)
        ]
    )
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def test_objective_reports_overflow_as_infinite() -> None:
    value, gradient = objective_and_gradient(np.array([0.05, 1.0]), 2000, "mean")
    assert value == np.inf
    assert np.all(gradient == 0)


def _reference_optimum(n: int, k: int, objective: str) -> float:
    """Long reference runs, independent of the default settings: L-BFGS-B to machine
    precision and gradient-free Powell (which does not use the adjoint gradient)."""
    start = central_binomial_start(k)[1:]
    bounds = [(0.0, None)] * (k - 1)

    def with_gradient(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = objective_and_gradient(np.concatenate(([1.0], x)), n, objective)
        return value, gradient[1:]

    def value_only(x: np.ndarray) -> float:
        return objective_and_gradient(np.concatenate(([1.0], np.abs(x))), n, objective)[0]

    long_run = minimize(
        with_gradient,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 100_000, "maxfun": 100_000, "ftol": 0.0, "gtol": 0.0, "maxcor": 50},
    )
    powell = minimize(
        value_only,
        start,
        method="Powell",
        options={"xtol": 1e-12, "ftol": 1e-15, "maxiter": 100_000, "maxfev": 100_000},
    )
    return float(min(long_run.fun, powell.fun))


@pytest.mark.parametrize("objective", ["mean", "max"])
def test_optimum_within_a_tenth_of_a_percent_of_a_long_reference_run(objective: str) -> None:
    n, k = 1024, 8
    strategy = BandedToeplitz.optimal(n, k, objective, cache=False)
    found = objective_and_gradient(strategy.coefficients, n, objective)[0]
    reference = _reference_optimum(n, k, objective)
    assert found <= reference * (1 + 1e-3)
    assert found >= reference * (1 - 1e-6), "the reference run is not an optimum"
    if objective == "mean":  # pinned figure (unit-norm coefficients: prefix_mse is the MSE)
        assert strategy.prefix_mse(n) == pytest.approx(71.30621655, rel=1e-6)


@pytest.mark.parametrize("objective", ["mean", "max"])
@pytest.mark.parametrize(("n", "k"), [(2, 2), (10, 3), (64, 8), (500, 32), (2000, 64)])
def test_optimum_beats_start_and_is_nonnegative_nonincreasing(
    objective: str, n: int, k: int
) -> None:
    c = np.array(optimal_coefficients(n, k, objective, cache_results=False))
    found = objective_and_gradient(c, n, objective)[0]
    initial = objective_and_gradient(central_binomial_start(k), n, objective)[0]
    # For n = k = 2 the start (1, 1/2) is already optimal for "max": f = (1 + (1-x)^2)(1 + x^2).
    assert found < initial or (n == 2 and found == pytest.approx(initial, rel=1e-12))
    assert np.linalg.norm(c) == pytest.approx(1.0, rel=1e-14)
    assert np.all(c > 0)
    # Non-increasing: what makes the b-min-sep sensitivity exact (strategies.sensitivity).
    assert np.all(np.diff(c) <= 0)


def test_more_bands_never_hurt_and_objectives_differ() -> None:
    n = 256
    mses = [BandedToeplitz.optimal(n, k).prefix_mse(n) for k in (1, 2, 4, 8, 16, 64, 256)]
    assert mses[0] == pytest.approx((n + 1) / 2)
    assert all(b <= a * (1 + 1e-9) for a, b in itertools.pairwise(mses))
    mean_opt = BandedToeplitz.optimal(n, 8, "mean").coefficients
    max_opt = BandedToeplitz.optimal(n, 8, "max").coefficients
    for objective, own, other in (("mean", mean_opt, max_opt), ("max", max_opt, mean_opt)):
        assert (
            objective_and_gradient(own, n, objective)[0]
            < objective_and_gradient(other, n, objective)[0]
        )


def test_one_band_is_the_identity() -> None:
    assert optimal_coefficients(50, 1) == (1.0,)
    assert optimal_coefficients(1, 1, "max") == (1.0,)


@pytest.mark.parametrize(
    ("args", "parameter"),
    [
        ((0, 1, "mean"), "n_steps"),
        ((10, 0, "mean"), "bands"),
        ((10, 11, "mean"), "bands"),
        ((10, 2.0, "mean"), "bands"),
        ((10, 2, "median"), "objective"),
    ],
)
def test_invalid_arguments(args: tuple[Any, ...], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        BandedToeplitz.optimal(*args)


def test_cache_hit_returns_identical_coefficients(cache_root: Path) -> None:
    first = BandedToeplitz.optimal(300, 6)
    path = strategy_cache.entry_path(cache_key(300, 6, "mean"))
    assert path.is_relative_to(cache_root) and path.exists()
    stored = json.loads(path.read_text())
    assert stored["key"] == cache_key(300, 6, "mean")
    assert tuple(stored["coefficients"]) == optimal_coefficients(300, 6, cache_results=False)
    # In-memory hit, then a disk hit after forgetting the memory cache.
    assert BandedToeplitz.optimal(300, 6) == first
    clear_memory_cache()
    # Planted values prove the disk entry (not a recomputation) is what comes back.
    planted = [0.8, 0.4, 0.3, 0.2, 0.2, 0.1]
    path.write_text(json.dumps({**stored, "coefficients": planted}))
    assert optimal_coefficients(300, 6) == tuple(planted)


@pytest.mark.parametrize(
    "content",
    [
        "not json {",
        "",
        json.dumps([1, 2, 3]),
        json.dumps({"key": {"n_steps": 300}, "coefficients": [1, 0, 0, 0, 0, 0]}),
        None,  # right key, wrong length
        json.dumps({"key": cache_key(300, 6, "mean"), "coefficients": [1, -1, 0, 0, 0, 0]}),
        json.dumps({"key": cache_key(300, 6, "mean"), "coefficients": ["a"] * 6}),
    ],
)
def test_corrupt_cache_file_is_ignored_and_rewritten(content: str | None) -> None:
    expected = optimal_coefficients(300, 6, cache_results=False)
    path = strategy_cache.entry_path(cache_key(300, 6, "mean"))
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        content = json.dumps({"key": cache_key(300, 6, "mean"), "coefficients": [1.0, 0.5]})
    path.write_text(content)
    assert optimal_coefficients(300, 6) == expected
    assert tuple(json.loads(path.read_text())["coefficients"]) == expected


def test_unwritable_cache_warns_and_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(blocker / "below"))
    with pytest.warns(UserWarning, match="strategy cache"):
        coefficients = optimal_coefficients(100, 3)
    assert coefficients == optimal_coefficients(100, 3, cache_results=False)


def test_cache_keys_separate_inputs() -> None:
    keys = {
        strategy_cache.entry_path(cache_key(n, k, o))
        for n in (10, 100)
        for k in (2, 3)
        for o in ("mean", "max")
    }
    assert len(keys) == 8
