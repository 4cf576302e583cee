"""The precision-sized ladder and samples of an escort epsilon question (docs/rdp-escort.md §8)."""

from __future__ import annotations

import itertools
import math

import pytest

from minsep.accountants.escort_precision import (
    COARSE_TAIL,
    MARGIN_SHARE,
    precision_ladder,
    precision_samples,
)
from minsep.framework.montecarlo.bounds import base_delta, min_samples


@pytest.mark.parametrize(("delta", "precision"), [(1e-3, 0.01), (1e-6, 0.03), (1e-8, 0.05)])
def test_ladder_spends_the_other_half_of_the_budget(delta: float, precision: float) -> None:
    ladder = precision_ladder(delta, precision, 8)
    assert len(ladder) == 8 and ladder[0] == 1.0
    assert all(a > b > 0.0 for a, b in itertools.pairwise(ladder))
    fine = ladder[: 8 - len(COARSE_TAIL)]
    assert fine[-1] == pytest.approx(delta ** (precision * (1.0 - MARGIN_SHARE)), rel=1e-12)
    logs = [math.log(k) for k in fine]
    steps = [a - b for a, b in itertools.pairwise(logs)]
    assert max(steps) == pytest.approx(min(steps), rel=1e-9)  # evenly spaced in ln kappa
    assert ladder[-1] == pytest.approx(fine[-1] * COARSE_TAIL[-1], rel=1e-12)


def test_short_ladders_are_all_fine() -> None:
    assert precision_ladder(1e-3, 0.01, 1) == (1.0,)
    two = precision_ladder(1e-3, 0.01, 2)
    assert two[0] == 1.0 and two[1] == pytest.approx(1e-3**0.005)


def test_samples_put_the_base_at_half_the_budget() -> None:
    delta, s = 1e-6, 40e-6
    m = precision_samples(delta, math.log(s), 0.03, 8)
    norm = delta / s
    assert m == min_samples(norm * delta ** (0.03 * MARGIN_SHARE), norm, candidates=8)
    # the base delta m draws accept at reaches the planned level, m - 1 do not
    level = norm * delta ** (0.03 * MARGIN_SHARE)
    assert base_delta(m, norm, candidates=8) >= level * (1 - 1e-9)
    assert precision_samples(delta, math.log(delta / 3), 0.03, 8) == 0  # s <= delta: no draws
    assert precision_samples(delta, math.log(400 * delta), 0.03, 8) > m
