"""The Monte Carlo accountant's rare-truncation route (docs/math.md §6.2)."""

from __future__ import annotations

import math

import pytest

from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.accountants.truncation_route import EPSILON_SHARE
from minsep.framework.montecarlo import trust
from minsep.schemes import BMinSep
from minsep.schemes.truncated import Truncated
from minsep.strategies import BandedToeplitz

BASE = BMinSep(n_steps=64, rate=1 / 16, min_sep=2)
STRATEGY = BandedToeplitz([1.0, 0.5])
#: |D| = 4,800, mean batch 300: B_max = 400 is 6 standard deviations out (rare).
RARE = Truncated(base=BASE, max_batch_size=400, dataset_size=4800)
#: B_max = 310: truncation at a third of the steps (frequent).
FREQUENT = Truncated(base=BASE, max_batch_size=310, dataset_size=4800)


def _accountant(proposal: str = "auto", samples: int = 4000) -> MonteCarloAccountant:
    return MonteCarloAccountant(samples=samples, pilot_samples=1000, seed=3, proposal=proposal)


def _reduced(result: object) -> bool:
    proposal = result.monte_carlo.proposal  # type: ignore[attr-defined]
    return proposal is not None and proposal.get("method") == "truncation_reduction"


def test_epsilon_is_the_untruncated_answer_at_the_reduced_delta() -> None:
    delta = 1e-3
    overheads = RARE.reduction(STRATEGY).overheads
    budget = overheads.epsilon_budget(delta, EPSILON_SHARE)
    assert budget == pytest.approx(EPSILON_SHARE * delta)
    got = _accountant().epsilon(RARE, STRATEGY, 1.0, delta)
    base = _accountant().epsilon(BASE, STRATEGY, 1.0, delta - budget)
    assert _reduced(got) and got.scheme == RARE.public_parameters()
    assert got.delta == delta
    assert got.certified_epsilon == max(
        base.certified_epsilon,
        0.0 if overheads.covers(base.certified_epsilon, budget) else overheads.epsilon_floor,
    )
    assert any("truncation reduction" in note for note in got.notes)
    # the reduced answer is never served from the answer cache (no re-derivable evidence)
    assert any(field == "proposal" for field, _ in trust.evidence_problems(got))


def test_plain_proposal_and_frequent_truncation_take_the_direct_route() -> None:
    plain = _accountant("plain", 40_000).epsilon(RARE, STRATEGY, 1.0, 1e-3)
    assert not _reduced(plain)
    reduced = _accountant().epsilon(RARE, STRATEGY, 1.0, 1e-3)
    assert reduced.certified_epsilon >= 0.97 * plain.epsilon  # the App. D pair's own estimate
    frequent = FREQUENT.reduction(STRATEGY).overheads
    assert frequent.expected_truncations > 10
    direct = _accountant(samples=40_000).epsilon(FREQUENT, STRATEGY, 1.0, 1e-3)
    assert not _reduced(direct)


def test_delta_adds_the_overhead_at_epsilon() -> None:
    epsilon = 1.0
    overheads = RARE.reduction(STRATEGY).overheads
    got = _accountant().delta(RARE, STRATEGY, 1.0, epsilon)
    base = _accountant().delta(BASE, STRATEGY, 1.0, epsilon)
    assert _reduced(got)
    assert got.certified_delta == pytest.approx(base.certified_delta + overheads.at(epsilon))
    assert got.certified_delta >= base.certified_delta + overheads.at(epsilon)


def test_calibrate_certifies_the_untruncated_pair_at_delta_minus_the_overhead() -> None:
    epsilon, delta = 2.0, 1e-3
    overheads = RARE.reduction(STRATEGY).overheads
    got = _accountant().calibrate(RARE, STRATEGY, epsilon, delta)
    base = _accountant().calibrate(BASE, STRATEGY, epsilon, delta - overheads.at(epsilon))
    assert _reduced(got) and got.delta == delta
    assert got.sigma == base.sigma


def test_overheads_grow_with_epsilon_below_the_floor_only() -> None:
    o = RARE.reduction(STRATEGY).overheads
    below = o.epsilon_floor / 2
    assert o.at(below) == pytest.approx((1 + math.exp(below)) * o.participation)
    assert o.at(o.epsilon_floor + 1) == pytest.approx((3 + math.sqrt(5)) / 2 * o.participation)
