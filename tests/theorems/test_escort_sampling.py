"""Exact escort draws (forward filtering, backward sampling) and the importance weight W.

docs/rdp-escort.md §6: the count law against enumeration of every lam-tuple, independence of the
checkpoint spacing, ``0 <= W <= s_lam(eps)`` and ``E_R[W] = delta_remove(eps)`` against
quadrature (b-min-sep) and dp_accounting's PLD (Poisson).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import pld_privacy_accountant

from minsep.accountants.escort import (
    escort_outputs,
    log_escort_weight,
    log_support_bound,
    sample_escort_counts,
)
from minsep.accountants.rdp_moments import log_moment
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.poisson import Poisson
from minsep.strategies import BandedToeplitz, Identity
from tests.theorems import oracles
from tests.theorems.support import law_fit_pvalue


def unit(values: tuple[float, ...]) -> np.ndarray:
    c = np.asarray(values, dtype=float)
    return c / np.linalg.norm(c)


def count_law(
    c: np.ndarray, n: int, p: float, b: int, warm: bool, sigma: float, order: int
) -> dict[tuple[int, ...], float]:
    """Escort law of ``sum_j x_j`` by enumerating every lam-tuple of patterns."""
    law = oracles.b_min_sep_law(n, p, b, warm)
    patterns = list(law)
    weights = np.array([law[x] for x in patterns])
    X = np.array(patterns, dtype=float)
    C = oracles.strategy_matrix(c, n)
    gram = X @ C.T @ C @ X.T / sigma**2
    out: dict[tuple[int, ...], float] = {}
    for combo in itertools.product(range(len(patterns)), repeat=order):
        exponent = sum(gram[combo[j], combo[m]] for j in range(order) for m in range(j))
        key = tuple(int(v) for v in X[list(combo)].sum(axis=0))
        out[key] = out.get(key, 0.0) + float(np.prod(weights[list(combo)])) * math.exp(exponent)
    total = sum(out.values())
    return {key: value / total for key, value in out.items()}


CASES = [
    # (n, b, warm, order, p, coefficients)
    (5, 3, True, 2, 0.4, (1.0, 0.6, 0.3)),
    (6, 3, False, 2, 0.5, (1.0, 0.6, 0.3)),
    (4, 4, True, 3, 0.3, (1.0, 0.6, 0.3)),
    (5, 2, True, 2, 1.0, (1.0, 0.5)),
    (4, 1, False, 3, 0.3, (1.0,)),
]


@pytest.mark.parametrize(("n", "b", "warm", "order", "p", "coefficients"), CASES)
def test_counts_follow_the_escort_law(
    n: int, b: int, warm: bool, order: int, p: float, coefficients: tuple[float, ...]
) -> None:
    c, sigma, draws = unit(coefficients), 0.9, 40_000
    chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
    law = count_law(c, n, p, b, warm, sigma, order)
    draw = sample_escort_counts(chain, c, sigma, order, draws, np.random.default_rng(11))
    assert law_fit_pvalue(draw.counts, law) > 1e-4
    assert draw.log_z == pytest.approx(log_moment(chain, c, sigma, order), rel=1e-12)


def test_draws_do_not_depend_on_the_checkpoint_spacing() -> None:
    c = unit((1.0, 0.6, 0.3))
    chain = ParticipationChain(n_steps=23, min_sep=3, probability=0.2, warm_start=True)
    runs = [
        sample_escort_counts(chain, c, 0.8, 2, 500, np.random.default_rng(5), block=block)
        for block in (None, 1, 4, 23, 100)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.counts, runs[0].counts)
        assert other.log_z == runs[0].log_z


def exact_remove_delta(
    c: np.ndarray, n: int, p: float, b: int, warm: bool, sigma: float, epsilon: float
) -> float:
    """``E_Q[(u - e^eps)_+]`` by Gauss-Hermite quadrature (n <= 3)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(50)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=n)))
    ys = sigma * nodes[grid]
    w = np.prod(weights[grid], axis=1)
    C = oracles.strategy_matrix(c, n)
    u = np.zeros(len(ys))
    for x, prob in oracles.b_min_sep_law(n, p, b, warm).items():
        mean = C @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / sigma**2)
    return float(w @ np.maximum(u - math.exp(epsilon), 0.0))


def importance_estimate(
    scheme: BMinSep | Poisson,
    c: np.ndarray,
    sigma: float,
    order: int,
    epsilon: float,
    draws: int,
    seed: int,
) -> tuple[float, float, float, float]:
    """(mean W, standard error, max W, s_lam(eps)) from ``draws`` escort samples."""
    chain = scheme.participation_chain()
    assert chain is not None
    rng = np.random.default_rng(seed)
    draw = sample_escort_counts(chain, c, sigma, order, draws, rng)
    y = escort_outputs(draw.counts, c, sigma, rng)
    strategy = BandedToeplitz(coefficients=tuple(c)) if c.size > 1 else Identity()
    log_u = scheme.loss_model(strategy).log_ratio_at(y, sigma, np)  # type: ignore[attr-defined]
    weights = np.exp(log_escort_weight(log_u, draw.log_z, order, epsilon))
    bound = math.exp(log_support_bound(draw.log_z, order, epsilon))
    return (
        float(weights.mean()),
        float(weights.std(ddof=1) / math.sqrt(draws)),
        float(weights.max()),
        bound,
    )


@pytest.mark.parametrize(("warm", "epsilon", "order"), [(True, 1.0, 2), (False, 2.0, 3)])
def test_importance_weights_are_bounded_and_unbiased_b_min_sep(
    warm: bool, epsilon: float, order: int
) -> None:
    c, n, b, sigma = unit((1.0, 0.5)), 3, 2, 0.7
    scheme = BMinSep(n_steps=n, rate=0.25, min_sep=b, warm_start=warm)
    mean, se, largest, bound = importance_estimate(scheme, c, sigma, order, epsilon, 40_000, 3)
    exact = exact_remove_delta(c, n, scheme.probability, b, warm, sigma, epsilon)
    assert 0.0 <= largest <= bound * (1 + 1e-12)
    assert abs(mean - exact) <= 4 * se
    assert se > 0


def test_importance_weights_are_unbiased_for_dp_sgd() -> None:
    scheme, sigma, epsilon = Poisson(n_steps=60, rate=0.05), 0.9, 1.5
    mean, se, largest, bound = importance_estimate(scheme, np.ones(1), sigma, 2, epsilon, 20_000, 8)
    pld = pld_privacy_accountant.PLDAccountant(
        NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=1e-3
    )
    pld.compose(scheme.dp_event(Identity(), sigma))
    # The PLD delta is the max over both directions (remove dominates here) and pessimistic.
    exact = float(pld.get_delta(epsilon))
    assert largest <= bound * (1 + 1e-12)
    assert abs(mean - exact) <= 4 * se + 1e-2 * exact  # PLD grid: ~1e-4 relative here


def test_support_bound_is_the_maximum_of_the_weight() -> None:
    log_z, order, epsilon = 0.7, 3, 0.4
    log_u = np.linspace(epsilon - 1, epsilon + 6, 200_001)
    largest = float(np.max(log_escort_weight(log_u, log_z, order, epsilon)))
    assert largest == pytest.approx(log_support_bound(log_z, order, epsilon), abs=1e-9)
    at_peak = math.log(order / (order - 1)) + epsilon  # u* = lam e^eps / (lam - 1)
    assert float(log_escort_weight(np.array([at_peak]), log_z, order, epsilon)[0]) == (
        pytest.approx(log_support_bound(log_z, order, epsilon), abs=1e-12)
    )
    assert log_escort_weight(np.array([epsilon]), log_z, order, epsilon)[0] == -math.inf


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"n_samples": 0}, "n_samples"), ({"block": 0}, "block"), ({"order": 2.5}, "order")],
)
def test_sampler_refuses_bad_input(kwargs: dict[str, object], name: str) -> None:
    chain = ParticipationChain(n_steps=5, min_sep=2, probability=0.3)
    arguments: dict[str, object] = {"order": 2, "n_samples": 10}
    arguments.update(kwargs)
    with pytest.raises(ConfigurationError, match=name):
        sample_escort_counts(
            chain,
            np.ones(1),
            1.0,
            rng=np.random.default_rng(0),
            **arguments,  # type: ignore[arg-type]
        )
