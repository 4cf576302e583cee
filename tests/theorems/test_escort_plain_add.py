"""The escort's add direction by plain draws where they are cheap (docs/rdp-escort.md §8).

An epsilon question tries plain add draws before the sampled block bound of docs/math.md §10.1
when they cost little (``plain_add_first``); the certified epsilon must still bound the exact
one of both directions, computed here by Gauss-Hermite quadrature on a 3-step chain.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from minsep.accountants.escort_add import PLAIN_ADD_FIRST, plain_add_first
from minsep.accountants.escort_engine import EscortProposal
from minsep.framework.montecarlo import EngineConfig, certify_epsilon
from minsep.framework.montecarlo.proposals import EpsilonQuestion
from minsep.schemes.b_min_sep import BMinSep
from minsep.strategies import BandedToeplitz
from tests.theorems import oracles

C, N, B, RATE, SIGMA = (0.8, 0.6), 3, 2, 0.4, 2.0
QUIET = EngineConfig(progress=False)


def scheme(warm: bool) -> BMinSep:
    return BMinSep(n_steps=N, rate=RATE, min_sep=B, warm_start=warm)


def exact_epsilon(warm: bool, delta: float) -> float:
    """The smallest epsilon with both directions' delta <= ``delta`` (quadrature, bisection)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=N)))
    ys, w = SIGMA * nodes[grid], np.prod(weights[grid], axis=1)
    matrix = oracles.strategy_matrix(C, N)
    u = np.zeros(len(ys))
    for x, prob in oracles.b_min_sep_law(N, scheme(warm).probability, B, warm).items():
        mean = matrix @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / SIGMA**2)

    def worst(eps: float) -> float:
        e = math.exp(eps)
        return max(float(w @ np.maximum(u - e, 0.0)), float(w @ np.maximum(1.0 - e * u, 0.0)))

    low, high = 0.0, 20.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if worst(mid) > delta else (low, mid)
    return high


@pytest.mark.parametrize("warm", [True, False])
def test_plain_add_route_is_sound(warm: bool) -> None:
    delta = 1e-3
    model = scheme(warm).loss_model(BandedToeplitz(coefficients=C))
    exact = exact_epsilon(warm, delta)
    for seed in range(3):
        cert = certify_epsilon(
            model,
            SIGMA,
            delta,
            samples=20_000,
            pilot_samples=2_000,
            seed=seed,
            config=QUIET,
            proposal=EscortProposal(),
        )
        assert cert.proposal is not None and cert.proposal.add == "plain"
        assert exact <= cert.certified <= exact + 0.3


def test_plain_add_first_needs_feasible_and_cheap_draws() -> None:
    model = scheme(True).loss_model(BandedToeplitz(coefficients=C))

    def question(samples: int, delta: float) -> EpsilonQuestion:
        fractions = (1.0, 0.9, 0.8, 0.5, 0.25, 0.125, 0.0625, 1.0 / 32)
        return EpsilonQuestion(SIGMA, delta, fractions, samples, 1_000, 0, QUIET)

    assert plain_add_first(model, question(20_000, 1e-3))
    assert not plain_add_first(model, question(2_000, 1e-6))  # cannot verify 1e-6 at all
    too_many = PLAIN_ADD_FIRST // N  # the draws would cost more than the budget
    assert not plain_add_first(model, question(too_many, 1e-3))


def test_the_route_takes_cheap_plain_add_draws_before_the_block_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``epsilon_add`` (the route's view): the sampled block bound is not even asked for where
    plain add draws on the escort's samples are cheap; where they cannot verify delta it is."""
    from minsep.accountants import route_add

    model = scheme(True).loss_model(BandedToeplitz(coefficients=C))
    asked: list[float] = []

    def block(*args: object, **kwargs: object) -> object:
        asked.append(1.0)
        raise AssertionError("block bound asked for")

    monkeypatch.setattr(route_add, "chosen_add_bound", block)
    label = route_add.epsilon_add(model, (1.2, SIGMA, 1e-3), 0.05, 0, (20_000, 2_000, 8))
    assert label is not None and "plain draws" in label and not asked
    with pytest.raises(AssertionError, match="block bound"):
        route_add.epsilon_add(model, (1.2, SIGMA, 1e-6), 0.05, 0, (2_000, 500, 8))
