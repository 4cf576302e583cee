"""App. B.2: when C^-1 is banded Toeplitz, the column products of C decay geometrically and the
bound ``K^2 rho^d / (1 - rho^2)`` holds for every pair (docs/math.md §2.2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from minsep.framework.errors import ConfigurationError
from minsep.schemes.b_min_sep.columns import cross_term_budgets
from minsep.schemes.b_min_sep.decay import decay_bound, toeplitz_inverse_column
from tests.theorems.nonbanded import inverse_banded_column, toeplitz_from_column

N = 64

#: Banded inverses h with non-negative C: simple roots, a repeated root, roots of both signs.
INVERSES = {
    "one-root-0.5": (1.0, -0.5),
    "one-root-0.9": (1.0, -0.9),
    "two-roots": (1.0, -0.7, 0.1),
    "repeated-root": (1.0, -1.2, 0.36),
    "mixed-signs": (1.0, -0.3, -0.1),
}


@pytest.mark.parametrize("name", sorted(INVERSES))
def test_the_first_column_is_the_inverse_of_the_banded_matrix(name: str) -> None:
    t = toeplitz_inverse_column(INVERSES[name], N)
    np.testing.assert_allclose(t, inverse_banded_column(INVERSES[name], N), rtol=1e-10)
    h = np.zeros(N)
    h[: len(INVERSES[name])] = INVERSES[name]
    product = toeplitz_from_column(h) @ toeplitz_from_column(t)
    np.testing.assert_allclose(product, np.eye(N), atol=1e-10)


@pytest.mark.parametrize("name", sorted(INVERSES))
def test_the_decay_bound_holds_for_every_pair(name: str) -> None:
    t = toeplitz_inverse_column(INVERSES[name], N)
    assert np.all(t >= 0)
    bound = decay_bound(INVERSES[name], N)
    assert 0 < bound.rate < 1
    assert np.all(np.abs(t) <= bound.scale * bound.rate ** np.arange(N))
    C = toeplitz_from_column(t)
    G = C.T @ C
    tight = 0.0
    for lag in range(1, N):
        pairs = np.diagonal(G, offset=lag)
        assert np.all(pairs <= bound.pair_bound(lag)), (lag, float(pairs.max()))
        tight = max(tight, float(pairs.max()) / bound.pair_bound(lag))
    assert tight > 0.01  # not vacuous: met within a factor 100 (repeated root: ~44)


@pytest.mark.parametrize("name", sorted(INVERSES))
@pytest.mark.parametrize("b", [1, 2, 4, 8])
def test_the_budgets_of_the_r_min_sep_bound_decay(name: str, b: int) -> None:
    t = toeplitz_inverse_column(INVERSES[name], N)
    C = toeplitz_from_column(t)
    up, down = cross_term_budgets(C.T @ C, b)
    assert np.all(down == 0)  # C >= 0
    assert np.max(up) <= decay_bound(INVERSES[name], N).budget_bound(b)


def test_budgets_shrink_with_the_min_sep() -> None:
    C = toeplitz_from_column(toeplitz_inverse_column(INVERSES["two-roots"], N))
    tops = [float(np.max(cross_term_budgets(C.T @ C, b)[0])) for b in (1, 2, 4, 8, 16)]
    assert all(later < earlier for earlier, later in itertools.pairwise(tops))


def test_a_diagonal_inverse_has_no_cross_terms() -> None:
    bound = decay_bound((2.0,), N)
    assert bound.rate == 0.0 and bound.pair_bound(1) == 0.0 and bound.budget_bound(3) == 0.0


@pytest.mark.parametrize(
    ("inverse", "n_steps", "parameter"),
    [
        ((1.0, -1.5), N, "inverse_column"),  # root 2/3 inside the unit disc
        ((1.0, -1.0), N, "inverse_column"),  # root on the circle: no decay
        ((0.0, 1.0), N, "inverse_column"),
        ((1.0, float("nan")), N, "inverse_column"),
        ((1.0, -0.5), 0, "n_steps"),
    ],
)
def test_invalid_inverses_are_refused(
    inverse: tuple[float, ...], n_steps: int, parameter: str
) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        decay_bound(inverse, n_steps)
