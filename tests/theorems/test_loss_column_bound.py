"""App. B.1: the r-min-sep bounds of ln P/Q for C that is not banded (docs/math.md §2.1).

Every check compares with brute force: all participation patterns with their b-min-sep
probabilities (``oracles.b_min_sep_law``) and the Gaussian density ratio of the dense C.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.schemes.b_min_sep.column_bound import ColumnBoundLossModel
from minsep.schemes.b_min_sep.columns import (
    DenseColumns,
    ToeplitzColumns,
    cross_term_budgets,
    strategy_columns,
)
from minsep.schemes.b_min_sep.scheme import BMinSep
from minsep.schemes.losses import BMinSepLossModel
from minsep.testing import LossModelContract
from tests.theorems import oracles
from tests.theorems.nonbanded import (
    DenseTestStrategy,
    geometric_column,
    inverse_banded_column,
    random_lower_triangular,
    toeplitz_from_column,
)
from tests.theorems.support import TOL, backend, random_outputs, source

N = 7


def _matrices() -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """name -> (C, its Toeplitz column or None)."""
    geometric = geometric_column(N, 0.6)
    inverse = inverse_banded_column((1.0, -0.7, 0.1), N)  # (1 - 0.5 z)(1 - 0.2 z): C >= 0
    return {
        "dense": (random_lower_triangular(N, seed=3), None),
        "geometric": (toeplitz_from_column(geometric), geometric),
        "banded-inverse": (toeplitz_from_column(inverse), inverse),
    }


MATRICES = _matrices()


def _model(name: str, b: int, p: float, warm: bool, toeplitz: bool = True) -> ColumnBoundLossModel:
    C, column = MATRICES[name]
    columns: Any = ToeplitzColumns(column) if column is not None and toeplitz else DenseColumns(C)
    return ColumnBoundLossModel(columns=columns, min_sep=b, probability=p, warm_start=warm)


def _exact(C: np.ndarray, y: np.ndarray, sigma: float, p: float, b: int, warm: bool) -> np.ndarray:
    law = oracles.b_min_sep_law(C.shape[0], p, b, warm)
    return np.array([oracles.log_mixture_ratio(law, C, row, sigma) for row in y])


CASES = [
    (name, b, p, warm, sigma)
    for name in MATRICES
    for b, p in ((1, 0.3), (2, 0.45), (3, 1 / 3))
    for warm in (False, True)
    for sigma in (0.6, 1.5)
]


@pytest.mark.parametrize(("name", "b", "p", "warm", "sigma"), CASES)
def test_the_bounds_bracket_the_exact_ratio(
    name: str, b: int, p: float, warm: bool, sigma: float
) -> None:
    """upper (REMOVE) >= ln P/Q >= lower (ADD) at every y, and strictly for some y."""
    C = MATRICES[name][0]
    y = random_outputs(40, N, seed=b + 10 * int(warm))
    exact = _exact(C, y, sigma, p, b, warm)
    model = _model(name, b, p, warm)
    upper = np.asarray(model.bound_at(y, sigma, Direction.REMOVE, np))
    lower = np.asarray(model.bound_at(y, sigma, Direction.ADD, np))
    assert np.all(upper >= exact - TOL), float(np.min(upper - exact))
    assert np.all(lower <= exact + TOL), float(np.max(lower - exact))
    assert np.max(upper - exact) > 1e-6 and np.max(exact - lower) > 1e-6  # C is not banded


@pytest.mark.parametrize("name", ["geometric", "banded-inverse"])
def test_toeplitz_and_dense_columns_agree(name: str) -> None:
    y = random_outputs(20, N, seed=5)
    for direction in Direction:
        fast = _model(name, 2, 0.4, True).bound_at(y, 0.9, direction, np)
        dense = _model(name, 2, 0.4, True, toeplitz=False).bound_at(y, 0.9, direction, np)
        np.testing.assert_allclose(fast, dense, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize(
    ("coefficients", "b"), [((1.0, 0.5), 2), ((0.8, 0.5, 0.3), 3), ((1.0,), 1)]
)
def test_banded_c_with_min_sep_at_least_bands_is_exact(
    coefficients: tuple[float, ...], b: int, warm: bool
) -> None:
    """Both budgets vanish: both bounds equal brute force and Theorem 5.1's model."""
    C = oracles.strategy_matrix(coefficients, N)
    column = np.zeros(N)
    column[: len(coefficients)] = coefficients
    model = ColumnBoundLossModel(
        columns=ToeplitzColumns(column), min_sep=b, probability=0.4, warm_start=warm
    )
    assert model.is_exact()
    y = random_outputs(30, N, seed=7)
    exact = _exact(C, y, 1.1, 0.4, b, warm)
    banded = BMinSepLossModel(
        coefficients=coefficients, n_steps=N, min_sep=b, probability=0.4, warm_start=warm
    ).log_ratio_at(y, 1.1, np, kernels="array")
    for direction in Direction:
        value = np.asarray(model.bound_at(y, 1.1, direction, np))
        np.testing.assert_allclose(value, exact, atol=TOL)
        np.testing.assert_allclose(value, banded, atol=TOL)


def test_banded_c_with_min_sep_below_bands_is_bounded_not_exact() -> None:
    """bands 3 > b = 2: Theorem 5.1 does not apply, the bounds still bracket P/Q."""
    coefficients = (0.8, 0.5, 0.3)
    C = oracles.strategy_matrix(coefficients, N)
    model = ColumnBoundLossModel(
        columns=DenseColumns(C), min_sep=2, probability=0.4, warm_start=True
    )
    assert not model.is_exact()
    y = random_outputs(30, N, seed=8)
    exact = _exact(C, y, 1.0, 0.4, 2, True)
    assert np.all(np.asarray(model.bound_at(y, 1.0, Direction.REMOVE, np)) >= exact - TOL)
    assert np.all(np.asarray(model.bound_at(y, 1.0, Direction.ADD, np)) <= exact + TOL)


def _brute_budgets(G: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    n = G.shape[0]
    up, down = np.zeros(n), np.zeros(n)
    for j in range(n):
        earlier = range(max(j - b + 1, 0))
        for size in range(1, len(earlier) + 1):
            for subset in itertools.combinations(earlier, size):
                if any(s2 - s1 < b for s1, s2 in itertools.pairwise(subset)):
                    continue
                up[j] = max(up[j], sum(max(G[i, j], 0.0) for i in subset))
                down[j] = max(down[j], sum(max(-G[i, j], 0.0) for i in subset))
    return up, down


@pytest.mark.parametrize("b", [1, 2, 3])
def test_cross_term_budgets_equal_the_brute_force_maxima(b: int) -> None:
    gen = np.random.default_rng(b)
    G = gen.normal(size=(8, 8))
    G = G + G.T  # signed entries: both budgets are exercised
    up, down = cross_term_budgets(G, b)
    brute_up, brute_down = _brute_budgets(G, b)
    np.testing.assert_allclose(up, brute_up, atol=1e-12)
    np.testing.assert_allclose(down, brute_down, atol=1e-12)
    assert np.any(up > 0) and np.any(down > 0)


def test_the_transcript_evaluates_the_bound_at_the_drawn_outputs() -> None:
    """REMOVE: ``log_ratio`` equals ``bound_at`` at y = Cx + sigma z (y recovered from C^T y)."""
    C = MATRICES["dense"][0]
    model = _model("dense", 2, 0.45, True)
    for direction in Direction:
        transcript: Any = model.draw(25, direction, source(11), backend())
        dots = transcript.noise * 0.8
        if transcript.stored_signal is not None:
            dots = dots + transcript.stored_signal
        y = np.linalg.solve(C.T, dots.T).T
        np.testing.assert_allclose(
            model.log_ratio(transcript, 0.8), model.bound_at(y, 0.8, direction, np), atol=1e-9
        )
        if direction is Direction.ADD:
            assert transcript.stored_signal is None


def test_the_scheme_hook_routes_non_banded_strategies_to_the_bound() -> None:
    C, column = MATRICES["geometric"]
    scheme = BMinSep(n_steps=N, rate=0.1, min_sep=3)
    model = scheme.loss_model(DenseTestStrategy.toeplitz(column))  # type: ignore[arg-type]
    assert isinstance(model, ColumnBoundLossModel)
    assert isinstance(model.columns, ToeplitzColumns)
    assert (model.min_sep, model.probability, model.warm_start) == (3, scheme.probability, True)
    dense = scheme.loss_model(DenseTestStrategy(C))
    assert isinstance(dense, ColumnBoundLossModel) and isinstance(dense.columns, DenseColumns)
    assert isinstance(strategy_columns(DenseTestStrategy(C), N), DenseColumns)


def test_banded_strategies_keep_theorem_5_1() -> None:
    from minsep.strategies import BandedToeplitz

    model = BMinSep(n_steps=N, rate=0.1, min_sep=3).loss_model(BandedToeplitz((1.0, 0.5)))
    assert isinstance(model, BMinSepLossModel)


@pytest.mark.parametrize(
    ("build", "parameter"),
    [
        (lambda: ToeplitzColumns(np.array([1.0, -0.5, 0.1])), "column"),
        (lambda: ToeplitzColumns(np.array([1.0, np.nan])), "column"),
        (lambda: ToeplitzColumns(np.zeros(3)), "column"),
        (lambda: DenseColumns(np.ones((2, 3))), "matrix"),
        (lambda: DenseColumns(-np.eye(3)), "matrix"),
        (
            lambda: ColumnBoundLossModel(
                columns=DenseColumns(np.eye(3)), min_sep=0, probability=0.5, warm_start=True
            ),
            "min_sep",
        ),
        (
            lambda: ColumnBoundLossModel(
                columns=DenseColumns(np.eye(3)), min_sep=1, probability=1.5, warm_start=True
            ),
            "probability",
        ),
        (
            lambda: ColumnBoundLossModel(
                columns=np.eye(3), min_sep=1, probability=0.5, warm_start=True
            ),
            "columns",
        ),
    ],
)
def test_invalid_arguments_are_refused(build: Any, parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        build()


def test_rounding_negatives_are_accepted_and_bounded() -> None:
    """Entries of -1e-13 (numerical rounding of a non-negative strategy) are taken, and the
    upper bound then carries the (tiny) negative cross terms through the ``down`` budget."""
    C = np.eye(N)
    C[5, 0], C[5, 2] = -1e-13, 0.5  # G[0, 2] = -5e-14 < 0, columns 0 and 2 are 2 apart
    model = ColumnBoundLossModel(
        columns=DenseColumns(C), min_sep=2, probability=0.4, warm_start=False
    )
    _up, down = model.budgets
    assert np.any(down > 0) and np.all(down < 1e-11)
    y = random_outputs(10, N, seed=9)
    exact = _exact(C, y, 1.0, 0.4, 2, False)
    assert np.all(np.asarray(model.bound_at(y, 1.0, Direction.REMOVE, np)) >= exact - TOL)


class TestColumnBoundContract(LossModelContract):
    """The loss-model contract, on a dense C and on a Toeplitz one."""

    @pytest.fixture(params=["dense", "geometric"])
    def loss_model(self, request: pytest.FixtureRequest) -> PrivacyLossModel:
        return _model(request.param, 2, 0.3, True)
