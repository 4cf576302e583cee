"""Drawn participation patterns follow the enumerated laws (chi-square, fixed seeds).

Each test also checks the power of the same test: the sample is refused against a wrong law.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
from scipy import stats

from minsep.framework.interfaces import Direction
from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    MultiAttributionLossModel,
    TruncatedBMinSepLossModel,
)
from tests.theorems import oracles
from tests.theorems.support import backend, source

SAMPLES = 20_000
ACCEPT = 1e-3  # fixed seeds: a correct sampler passes deterministically
REJECT = 1e-8


def chi_square_pvalue(
    rows: Sequence[tuple[int, ...]], law: Mapping[tuple[int, ...], float]
) -> float:
    """Pearson's test of the drawn keys against ``law``; cells expecting < 5 are pooled.

    A key outside the support of ``law`` fails at once (p = 0).
    """
    law = {key: prob for key, prob in law.items() if prob > 0}
    observed = Counter(rows)
    if not set(observed) <= set(law):
        return 0.0
    m = len(rows)
    big = [key for key in sorted(law) if law[key] * m >= 5]
    small = [key for key in law if law[key] * m < 5]
    obs = [observed.get(key, 0) for key in big]
    exp = [law[key] * m for key in big]
    if small:
        obs.append(sum(observed.get(key, 0) for key in small))
        exp.append(sum(law[key] for key in small) * m)
    exp_arr = np.asarray(exp)
    exp_arr *= sum(obs) / exp_arr.sum()  # remove float round-off in the total
    return float(stats.chisquare(obs, exp_arr).pvalue)


def _keys(array: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in row) for row in np.asarray(array)]


@pytest.mark.parametrize(
    ("n", "b", "p", "warm"),
    [
        (5, 2, 0.4, False),
        (5, 3, 0.5, True),
        (4, 1, 0.3, False),
        (5, 2, 0.35, True),
        (6, 3, 1.0, True),
    ],
)
def test_b_min_sep_patterns(n: int, b: int, p: float, warm: bool) -> None:
    model = BMinSepLossModel(
        coefficients=(1.0,), n_steps=n, min_sep=b, probability=p, warm_start=warm
    )
    rows = _keys(model.participation(SAMPLES, source(n + b), backend()))
    assert chi_square_pvalue(rows, oracles.b_min_sep_law(n, p, b, warm)) > ACCEPT
    if b > 1:  # the other start is distinguishable
        assert chi_square_pvalue(rows, oracles.b_min_sep_law(n, p, b, not warm)) < REJECT


@pytest.mark.parametrize(("n", "b", "p", "k_u"), [(4, 2, 0.3, 2), (4, 3, 0.25, 3), (5, 1, 0.2, 2)])
def test_multi_attribution_counts(n: int, b: int, p: float, k_u: int) -> None:
    model = MultiAttributionLossModel(
        coefficients=(1.0,), n_steps=n, min_sep=b, probability=p, max_user_examples=k_u
    )
    rows = _keys(model.participation(SAMPLES, source(k_u), backend()))
    assert chi_square_pvalue(rows, oracles.multi_attribution_law(n, p, b, k_u)) > ACCEPT
    assert chi_square_pvalue(rows, oracles.multi_attribution_law(n, 1.2 * p, b, k_u)) < REJECT


def test_balls_in_bins_bins_are_uniform() -> None:
    model = BallsInBinsLossModel(coefficients=(1.0,), n_steps=4, cycle_length=7)
    chosen = np.asarray(model.bins(SAMPLES, source(3), backend()))
    rows = [(int(s),) for s in chosen]
    assert chi_square_pvalue(rows, {(s,): 1 / 7 for s in range(7)}) > ACCEPT
    skewed: dict[tuple[int, ...], float] = {(s,): (1.2 if s == 0 else 1.0) / 7.2 for s in range(7)}
    assert chi_square_pvalue(rows, skewed) < REJECT


@pytest.mark.parametrize("warm", [False, True])
def test_truncation_counts_follow_the_other_examples_chains(warm: bool) -> None:
    n, b, p, size = 4, 2, 0.5, 4
    model = TruncatedBMinSepLossModel(
        coefficients=(1.0,),
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=2,
    )
    rows = _keys(model.counts(SAMPLES, source(8), backend()))
    assert chi_square_pvalue(rows, oracles.other_counts_law(n, p, b, warm, size - 1)) > ACCEPT
    assert chi_square_pvalue(rows, oracles.other_counts_law(n, p, b, not warm, size - 1)) < REJECT


@pytest.mark.parametrize("direction", list(Direction))
@pytest.mark.parametrize("warm", [False, True])
def test_truncated_joint_law_of_pattern_and_counts(direction: Direction, warm: bool) -> None:
    """(x, r) under P (REMOVE) and (x', r) under Q (ADD): Pr[r] Pr[x | r] (docs/math.md §6)."""
    n, b, p, size, max_batch = 3, 2, 0.5, 3, 1
    model = TruncatedBMinSepLossModel(
        coefficients=(1.0,),
        n_steps=n,
        min_sep=b,
        probability=p,
        warm_start=warm,
        dataset_size=size,
        max_batch_size=max_batch,
    )
    x, counts = model.participation(SAMPLES, direction, source(12), backend())
    rows = [(*xr, *rr) for xr, rr in zip(_keys(x), _keys(counts), strict=True)]
    law: dict[tuple[int, ...], float] = {}
    for r, pr in oracles.other_counts_law(n, p, b, warm, size - 1).items():
        p_law, q_law = oracles.truncated_laws(n, p, b, warm, r, max_batch)
        for pattern, px in (p_law if direction is Direction.REMOVE else q_law).items():
            law[(*pattern, *r)] = law.get((*pattern, *r), 0.0) + pr * px
    assert chi_square_pvalue(rows, law) > ACCEPT
    # power: the law with B_max = 0 (every sampled step truncated and dropped) is refused
    wrong: dict[tuple[int, ...], float] = {}
    for r, pr in oracles.other_counts_law(n, p, b, warm, size - 1).items():
        p_law, q_law = oracles.truncated_laws(n, p, b, warm, r, 0)
        for pattern, px in (p_law if direction is Direction.REMOVE else q_law).items():
            wrong[(*pattern, *r)] = wrong.get((*pattern, *r), 0.0) + pr * px
    assert chi_square_pvalue(rows, wrong) < REJECT
