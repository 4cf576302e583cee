"""BLT, banded-inverse and dense strategies, workloads, and their optimisation (docs/math.md §8).

The registered-strategy contract (tests/contracts/test_registered.py) already checks every
strategy against its dense matrix on small n; these tests pin larger n, the closed forms, the
refusals and the optimiser.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from minsep.framework.backend import numpy_backend
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.registries import schemes
from minsep.framework.workloads import (
    LearningRateDecay,
    Momentum,
    PrefixSums,
    workload_from_spec,
)
from minsep.strategies import (
    BandedInverse,
    BandedToeplitz,
    BufferedLinearToeplitz,
    Dense,
    columns,
    optimize_structured,
    pattern_sensitivity,
)
from minsep.testing.strategy_contract import brute_force_sensitivity

BLT = BufferedLinearToeplitz((0.99, 0.8, 0.3), (0.1, 0.25, 0.2))


def dense_error(C: np.ndarray, A: np.ndarray) -> float:
    X = A @ np.linalg.inv(C)
    return float(np.sum(X * X) / C.shape[0])


# --- workloads ---------------------------------------------------------------------------------


def test_momentum_workload_closed_form() -> None:
    n, beta = 9, 0.6
    t, s = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    expected = np.where(t >= s, (1 - beta ** (t - s + 1.0)) / (1 - beta), 0.0)
    np.testing.assert_allclose(Momentum(beta).matrix(n), expected, rtol=1e-12)
    np.testing.assert_allclose(Momentum(beta).toeplitz_column(n), expected[:, 0], rtol=1e-12)


def test_decay_workload_is_weighted_prefix_sum() -> None:
    n = 8
    w = LearningRateDecay("linear", 0.3)
    eta = w.learning_rates(n)
    assert eta[0] == 1.0 and eta[-1] == pytest.approx(0.3)
    expected = np.tril(np.ones((n, n))) * eta[None, :]
    np.testing.assert_allclose(w.matrix(n), np.tril(np.ones((n, n))) @ np.diag(eta))
    np.testing.assert_allclose(w.matrix(n), expected)
    assert w.toeplitz_column(n) is None
    cosine = LearningRateDecay("cosine", 0.1).learning_rates(5)
    np.testing.assert_allclose(cosine, [1.0, 0.86819805, 0.55, 0.23180195, 0.1], rtol=1e-7)
    exponential = LearningRateDecay("exponential", 0.25).learning_rates(3)
    np.testing.assert_allclose(exponential, [1.0, 0.5, 0.25])


def test_workload_specs_round_trip_and_refuse_garbage() -> None:
    for w in (PrefixSums(), Momentum(0.9), LearningRateDecay("cosine", 0.1, 0.5)):
        assert workload_from_spec(w.spec) == w
    assert workload_from_spec("momentum") == Momentum(0.9)
    assert workload_from_spec("linear:0.2") == LearningRateDecay("linear", 0.2, 0.0)
    for bad in ("momentum:abc", "nope", "prefix:1", 3, "linear:0.1:0.2:0.3"):
        with pytest.raises(ConfigurationError, match="workload"):
            workload_from_spec(bad)
    with pytest.raises(ConfigurationError, match="beta"):
        Momentum(1.0)
    with pytest.raises(ConfigurationError, match="final"):
        LearningRateDecay("linear", 0.0)
    with pytest.raises(ConfigurationError, match="schedule"):
        LearningRateDecay("step", 0.5)


@pytest.mark.parametrize(
    "workload", [PrefixSums(), Momentum(0.9), LearningRateDecay("cosine", 0.1, 0.5)]
)
def test_mse_matches_dense_at_larger_n(workload: object) -> None:
    n = 240
    for strategy in (BLT, BandedInverse((1.0, -0.6, -0.3)), BandedToeplitz((1.0, 0.6, 0.3))):
        expected = dense_error(strategy.matrix(n), workload.matrix(n))  # type: ignore[attr-defined]
        assert strategy.mse(n, workload) == pytest.approx(expected, rel=1e-9)  # type: ignore[arg-type]


def test_workload_error_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(3)
    r = rng.normal(size=25)
    for w in (PrefixSums(), Momentum(0.7), LearningRateDecay("exponential", 0.2, 0.3)):
        _, grad = columns.workload_error_and_gradient(r, w)
        eye = np.eye(r.size) * 1e-6
        fd = [
            (columns.workload_error(r + e, w) - columns.workload_error(r - e, w)) / 2e-6
            for e in eye
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


# --- BLT ---------------------------------------------------------------------------------------


def test_blt_inverse_is_the_rational_recursion() -> None:
    # omega = 1/2, theta = 1: C(z) = (1 + z/2)/(1 - z/2), so C^-1 has column 1, -1, 1/2, -1/4, ...
    blt = BufferedLinearToeplitz((0.5,), (1.0,))
    np.testing.assert_allclose(blt.inverse_column(5), [1.0, -1.0, 0.5, -0.25, 0.125])
    n = 300
    np.testing.assert_allclose(
        BLT.inverse_column(n), np.linalg.inv(BLT.matrix(n))[:, 0], rtol=1e-9, atol=1e-12
    )


def test_blt_closed_form_inner_products_at_larger_n() -> None:
    n = 400
    gram = BLT.matrix(n).T @ BLT.matrix(n)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, n, size=(2, 200))
    np.testing.assert_allclose(BLT.column_inner_products(n, i, j), gram[i, j], rtol=1e-10)
    np.testing.assert_allclose(BLT.column_gram(n), gram, rtol=1e-10, atol=1e-13)


def test_blt_noise_at_larger_n() -> None:
    n, shape = 80, (4,)
    backend = numpy_backend()
    streamed = np.stack(list(BLT.noise(shape, n, backend.rng(np.random.SeedSequence(2)), backend)))
    Z = backend.rng(np.random.SeedSequence(2)).standard_normal((n, *shape))
    np.testing.assert_allclose(streamed, np.linalg.solve(BLT.matrix(n), Z), rtol=1e-9, atol=1e-12)


def test_blt_sensitivity_exact_or_bound() -> None:
    n = 9
    assert BLT.sensitivity_is_exact(1, n)  # sum(theta) <= 1: non-increasing column
    heavy = BufferedLinearToeplitz((0.9, 0.5), (1.3, 0.9))  # c_1 = 2.2 > c_0
    assert not heavy.sensitivity_is_exact(2, n)
    for b, K in ((1, 9), (2, 3), (3, 2)):
        exact = brute_force_sensitivity(heavy.matrix(n), b, K)
        assert heavy.sensitivity(n, b, K) >= exact
        assert BLT.sensitivity(n, b, K) == pytest.approx(
            brute_force_sensitivity(BLT.matrix(n), b, K), rel=1e-12
        )


def test_blt_oracles() -> None:
    blt = BufferedLinearToeplitz((0.9, 0.5), (0.3, 0.2))
    assert blt.prefix_mse(12) == pytest.approx(1.65365, rel=1e-5)
    assert blt.sensitivity(12, 3, 4) == pytest.approx(3.43327, rel=1e-5)


def test_blt_options() -> None:
    fixed = BufferedLinearToeplitz.for_steps(10, decays=(0.5,), weights=(0.2,))
    assert fixed == BufferedLinearToeplitz((0.5,), (0.2,))
    with pytest.raises(ConfigurationError, match="bands"):
        BufferedLinearToeplitz.for_steps(10, bands=3)
    with pytest.raises(ConfigurationError, match="decays"):
        BufferedLinearToeplitz.for_steps(10, decays=(0.5,))
    with pytest.raises(ConfigurationError, match="buffers"):
        BufferedLinearToeplitz.for_steps(10, buffers=0)


# --- banded inverse ----------------------------------------------------------------------------


def test_banded_inverse_oracle_and_column() -> None:
    # A H has column cumsum(h) = (1, 1/2, 1/4, 1/4, ...): ||A H||_F^2 = 12 + 11/4 + 55/16.
    strategy = BandedInverse((1.0, -0.5, -0.25))
    assert strategy.prefix_mse(12) == pytest.approx(97 / 64, rel=1e-12)
    np.testing.assert_allclose(strategy.column(6), [1.0, 0.5, 0.5, 0.375, 0.3125, 0.25])
    n = 200
    H = columns.dense(strategy.inverse_column(n))
    np.testing.assert_allclose(strategy.matrix(n) @ H, np.eye(n), atol=1e-10)


def test_banded_inverse_refuses_negative_or_overflowing_c_for_the_n_used() -> None:
    negative = BandedInverse((1.0, 0.5))  # c = (1, -1/2, 1/4, ...)
    with pytest.raises(ConfigurationError, match=r"coefficients.*n_steps = 5.*negative"):
        negative.matrix(5)
    with pytest.raises(ConfigurationError, match="coefficients"):
        BandedInverse.for_steps(5, coefficients=(1.0, 0.5))
    assert negative.matrix(1)[0, 0] == 1.0  # one step: C = (1) is fine
    growing = BandedInverse((1.0, -2.0))  # c_k = 2^k: non-negative, overflows for large n
    assert growing.column(10)[-1] == 512.0
    with pytest.raises(ConfigurationError, match="overflows"):
        growing.sensitivity(5000, 1, 2)


def test_banded_inverse_guaranteed_family_is_nonnegative() -> None:
    rng = np.random.default_rng(7)
    for _ in range(5):
        g = rng.dirichlet(np.ones(5)) * rng.uniform(0.2, 1.0)
        strategy = BandedInverse((1.0, *(-g)))
        assert np.all(strategy.column(500) >= 0)


# --- dense and general sensitivity -------------------------------------------------------------


def test_dense_refuses_more_steps_than_its_size() -> None:
    strategy = Dense.example()
    with pytest.raises(ConfigurationError, match="n_steps"):
        strategy.matrix(strategy.size + 1)
    with pytest.raises(ConfigurationError, match="band"):
        Dense.for_steps(4, matrix=np.eye(4), bands=2)
    with pytest.raises(ConfigurationError, match="n_steps"):
        Dense.for_steps(5, matrix=np.eye(4))


def test_pattern_count_matches_enumeration() -> None:
    for n, b, K in ((9, 1, 9), (10, 2, 3), (12, 3, 2), (7, 4, 7)):
        listed = list(pattern_sensitivity.patterns(n, b, K))
        assert len(listed) == pattern_sensitivity.pattern_count(n, b, K)
        assert len(set(listed)) == len(listed)
        assert all(
            len(p) <= K and all(q - a >= b for a, q in itertools.pairwise(p)) for p in listed
        )
    assert pattern_sensitivity.pattern_count(10, 1, 10) == 2**10 - 1


def test_row_bound_is_an_upper_bound() -> None:
    rng = np.random.default_rng(11)
    for trial in range(6):
        n = 9
        C = np.tril(rng.uniform(0.0, 1.0, size=(n, n))) + np.eye(n)
        if trial % 2:
            C = C * (rng.uniform(size=(n, n)) < 0.4) + np.eye(n)
        G = C.T @ C
        for b, K in ((1, 9), (2, 3), (3, 9)):
            exact = brute_force_sensitivity(C, b, K)
            bound = math.sqrt(pattern_sensitivity.row_bound_square(G, b, K))
            assert bound >= exact * (1 - 1e-12)
            value, is_exact = pattern_sensitivity.sensitivity(G, b, K)
            assert is_exact and value == pytest.approx(exact, rel=1e-12)
    # identity: the bound is exact (every row sum is its diagonal)
    assert pattern_sensitivity.row_bound_square(np.eye(10), 3, 2) == pytest.approx(2.0)


def test_dense_uses_the_bound_beyond_the_enumeration_limit() -> None:
    strategy = Dense.example()
    n = strategy.size
    assert not strategy.sensitivity_is_exact(1, n, n)
    value = strategy.sensitivity(n, 1, n)
    assert value >= float(np.linalg.norm(strategy.matrix(n).sum(axis=1)))  # all columns


# --- no banded analysis of a non-banded C ------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*conjecture")
@pytest.mark.parametrize("strategy", [BLT, BandedInverse((1.0, -0.5)), Dense.example()])
def test_non_banded_strategies_are_refused_by_banded_analyses(strategy: object) -> None:
    """No scheme treats a non-banded C as banded: either it refuses, or (b-min-sep, App. B.1)
    it answers with a loss model whose log-ratio is declared a bound."""
    bound_models = []
    for name in schemes.names():
        scheme = schemes.get(name).example()
        try:
            model = scheme.loss_model(strategy)  # type: ignore[arg-type]
        except (NotAccountableError, ConfigurationError):
            pass
        else:
            assert model.bounds_ratio, f"{name} gave an exact-ratio model for a non-banded C"
            bound_models.append(name)
        with pytest.raises(NotAccountableError):
            scheme.dp_event(strategy, 1.0)  # type: ignore[arg-type]
    assert "b_min_sep" in bound_models


# --- optimisation ------------------------------------------------------------------------------


def test_blt_objective_gradient_matches_finite_differences() -> None:
    x = np.array([np.log(0.1), np.log(0.5), np.log(0.7), 0.6, 0.3, -0.2])
    for w in (PrefixSums(), LearningRateDecay("cosine", 0.2, 0.5)):
        _, grad = optimize_structured.blt_objective(x, 40, w)
        fd = [
            (
                optimize_structured.blt_objective(x + e, 40, w)[0]
                - optimize_structured.blt_objective(x - e, 40, w)[0]
            )
            / 2e-6
            for e in np.eye(x.size) * 1e-6
        ]
        np.testing.assert_allclose(grad, fd, rtol=1e-5)
    y = np.array([0.7, 0.3, -0.5])
    _, grad = optimize_structured.banded_inverse_objective(y, 40, Momentum(0.5))
    fd = [
        (
            optimize_structured.banded_inverse_objective(y + e, 40, Momentum(0.5))[0]
            - optimize_structured.banded_inverse_objective(y - e, 40, Momentum(0.5))[0]
        )
        / 2e-6
        for e in np.eye(y.size) * 1e-6
    ]
    np.testing.assert_allclose(grad, fd, rtol=1e-5)


def test_optimal_blt_improves_with_buffers_and_beats_bandmf() -> None:
    n, w = 64, PrefixSums()
    values = []
    for B in (1, 2):
        decays, weights = optimize_structured.optimal_blt(n, B, w, cache_results=False)
        strategy = BufferedLinearToeplitz(decays, weights)
        assert sum(weights) <= 1.0 + 1e-12 and strategy.sensitivity_is_exact(1, n)
        values.append(strategy.normalized_mse(n, w))
    assert values[1] <= values[0] * (1 + 1e-9)
    assert values[1] < BandedToeplitz.optimal(n, 4, cache=False).normalized_mse(n)


def test_optimal_banded_inverse_is_nonnegative_and_beats_its_start() -> None:
    n, w = 64, Momentum(0.9)
    h = optimize_structured.optimal_banded_inverse(n, 4, w, cache_results=False)
    strategy = BandedInverse(h)
    assert h[0] == 1.0 and all(v <= 0 for v in h[1:])
    assert np.all(strategy.column(n) >= 0)
    start = BandedInverse(optimize_structured.inverse_h(optimize_structured._sqrt_start(4)))
    assert strategy.normalized_mse(n, w) < start.normalized_mse(n, w)


def test_optimised_strategies_are_cached_on_disk(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINSEP_CACHE_DIR", str(tmp_path))
    optimize_structured.clear_memory_cache()
    first = BufferedLinearToeplitz.for_steps(32, buffers=1, workload="momentum:0.5")
    inverse = BandedInverse.for_steps(32, bands=3, workload="prefix")
    files = sorted((tmp_path / "strategies").glob("*.json"))  # type: ignore[operator]
    assert len(files) == 2
    assert {json.loads(f.read_text())["key"]["strategy"] for f in files} == {
        "blt",
        "banded_inverse",
    }
    optimize_structured.clear_memory_cache()
    assert BufferedLinearToeplitz.for_steps(32, buffers=1, workload="momentum:0.5") == first
    assert BandedInverse.for_steps(32, bands=3) == inverse
    optimize_structured.clear_memory_cache()
