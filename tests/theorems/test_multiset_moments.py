"""The multiset forward pass and escort draws of b-min-sep (docs/rdp-escort.md §3.1, §6).

Layers: the colex ranking is a bijection (enumeration and unranking invert it); the initial
multiset message is the joint array's initial law lumped over orderings; ``ln Z`` equals the
enumeration of every lam-tuple of patterns on tiny n, and the joint ``(b + 1)^lam`` array pass
to 1e-12 on random configurations (cold and warm start, p = 1, b = k and b > k, n shorter than
the bands, long rescaled runs); the sampler's count law equals the enumerated escort law by
chi-square (fixed seeds), its draws do not depend on the checkpoint spacing and a batch draws
what single calls draw.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from minsep.accountants import multiset_escort, multiset_kernels, multiset_moments
from minsep.accountants import rdp_moments as moments
from minsep.accountants.multiset_escort import (
    forward_log_moment,
    sample_multiset_escort_batch,
    sample_multiset_escort_counts,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from tests.theorems.support import law_fit_pvalue
from tests.theorems.test_escort_sampling import count_law
from tests.theorems.test_rdp_bruteforce import (
    COEFFICIENTS,
    enumerated_log_moment,
    enumerated_log_moment_fast,
    unit,
)


@pytest.mark.parametrize(("b", "order"), [(2, 2), (3, 4), (5, 3), (7, 5), (1, 3)])
def test_colex_rank_is_a_bijection(b: int, order: int) -> None:
    count = multiset_moments.state_count(b, order)
    rows = multiset_kernels.enumerate_multisets(b, order, count)
    assert len({tuple(r) for r in rows}) == count  # distinct sorted tuples, all of them
    assert np.all(np.diff(rows, axis=1) >= 0) and rows.min() >= 0 and rows.max() <= b - 1
    binom = multiset_kernels.binomials(b + order, order)
    ranks = sum(binom[rows[:, i] + i, i + 1] for i in range(order))
    np.testing.assert_array_equal(ranks, np.arange(count))
    back = np.empty_like(rows)
    multiset_kernels.unrank(np.arange(count, dtype=np.int64), order, binom, back)
    np.testing.assert_array_equal(back, rows)


@pytest.mark.parametrize(("b", "order", "warm"), [(3, 2, True), (4, 3, True), (3, 4, False)])
def test_initial_message_is_the_lumped_joint_law(b: int, order: int, warm: bool) -> None:
    chain = ParticipationChain(n_steps=5, min_sep=b, probability=0.3, warm_start=warm)
    joint = moments.initial_state(chain, order)  # (b + 1)^lam, slot b empty
    table = multiset_moments.tables(b, order)
    lumped = np.zeros(table.states)
    binom = table.binom
    for index in np.ndindex(joint.shape):
        if joint[index] > 0:
            s = sorted(index)
            lumped[sum(binom[s[i] + i, i + 1] for i in range(order))] += joint[index]
    got = multiset_moments.initial_message(chain, table)
    np.testing.assert_allclose(got, lumped, rtol=1e-14, atol=0)


CASES = [
    (k, b, warm, n)
    for k in (1, 2, 3)
    for b in (max(k, 2), k + 1)
    for warm in (False, True)
    for n in sorted({1, 2, k + 1, 7})
]


@pytest.mark.parametrize(("bands", "min_sep", "warm", "n"), CASES)
def test_multiset_pass_matches_enumeration(bands: int, min_sep: int, warm: bool, n: int) -> None:
    c = unit(COEFFICIENTS[bands])
    p = 0.35
    chain = ParticipationChain(n_steps=n, min_sep=min_sep, probability=p, warm_start=warm)
    for sigma in (0.6, 1.7):
        for order in (2, 3):
            if order == 3 and n > 6:
                continue
            expected = enumerated_log_moment_fast(c, n, p, min_sep, warm, sigma, order)
            got = multiset_moments.log_moment(chain, c, sigma, order)
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-13)


def test_order_four_and_p_one_match_enumeration() -> None:
    c = unit(COEFFICIENTS[2])
    for p in (0.25, 1.0):
        for warm in (False, True):
            chain = ParticipationChain(n_steps=5, min_sep=2, probability=p, warm_start=warm)
            expected = enumerated_log_moment(c, 5, p, 2, warm, 1.3, 4)
            got = multiset_moments.log_moment(chain, c, 1.3, 4)
            assert got == pytest.approx(expected, rel=1e-10)


def test_multiset_pass_equals_the_joint_array_pass() -> None:
    rng = np.random.default_rng(20261202)
    seen = set()
    for _ in range(60):
        b = int(rng.integers(2, 8))
        k = int(rng.integers(1, b + 1))
        order = int(rng.integers(2, 6 if b <= 4 else 5))
        n = int(rng.integers(1, 3 * b + 4))
        p = 1.0 if rng.random() < 0.2 else float(rng.uniform(0.01, 0.7))
        warm = bool(rng.integers(2))
        c = rng.normal(size=k)
        c /= np.linalg.norm(c)
        sigma = float(rng.uniform(0.6, 2.0))
        chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
        joint = moments.log_moment(chain, c, sigma, order)
        got = multiset_moments.log_moment(chain, c, sigma, order)
        assert got == pytest.approx(joint, rel=1e-12, abs=1e-300), (b, k, order, n, p, warm)
        seen.add((b == k, p == 1.0, warm, n < k))
    assert len(seen) >= 10  # the draws cover b = k, p = 1, warm, n < k in many combinations


def test_long_runs_rescale_like_the_joint_pass() -> None:
    c = unit((1.0, 0.7, 0.4))
    for b, order, sigma, n in ((3, 3, 0.35, 1500), (5, 4, 0.6, 800)):
        chain = ParticipationChain(n_steps=n, min_sep=b, probability=0.3, warm_start=True)
        joint = moments.log_moment(chain, c, sigma, order)
        assert joint > 300.0  # rescaled several times
        assert multiset_moments.log_moment(chain, c, sigma, order) == pytest.approx(
            joint, rel=1e-12
        )


ESCORT_CASES = [
    # (n, b, warm, order, p, coefficients)
    (5, 3, True, 2, 0.4, (1.0, 0.6, 0.3)),
    (6, 3, False, 3, 0.5, (1.0, 0.6, 0.3)),
    (4, 4, True, 3, 0.3, (1.0, 0.6, 0.3)),
    (5, 2, True, 3, 1.0, (1.0, 0.5)),
    (6, 4, True, 2, 0.45, (1.0, 0.5)),
    (3, 2, False, 4, 0.5, (1.0, 0.5)),
]


@pytest.mark.parametrize(("n", "b", "warm", "order", "p", "coefficients"), ESCORT_CASES)
def test_multiset_counts_follow_the_escort_law(
    n: int, b: int, warm: bool, order: int, p: float, coefficients: tuple[float, ...]
) -> None:
    c, sigma, draws = unit(coefficients), 0.9, 40_000
    chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
    law = count_law(c, n, p, b, warm, sigma, order)
    rng = np.random.default_rng(11)
    draw = sample_multiset_escort_counts(chain, c, sigma, order, draws, rng, block=2)
    assert law_fit_pvalue(draw.counts, law) > 1e-4
    assert draw.log_z == pytest.approx(moments.log_moment(chain, c, sigma, order), rel=1e-12)


def test_multiset_draws_do_not_depend_on_the_checkpoint_spacing() -> None:
    c = unit((1.0, 0.6, 0.3))
    chain = ParticipationChain(n_steps=23, min_sep=3, probability=0.2, warm_start=True)
    runs = [
        sample_multiset_escort_counts(chain, c, 0.8, 3, 500, np.random.default_rng(5), block=k)
        for k in (None, 1, 4, 23, 100)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.counts, runs[0].counts)
        assert other.log_z == runs[0].log_z
    assert runs[0].counts.sum() > 0


def test_a_multiset_batch_draws_what_each_call_draws() -> None:
    chain = ParticipationChain(n_steps=45, min_sep=4, probability=0.2, warm_start=True)
    c = unit((1.0, 0.7, 0.5, 0.2))
    sizes = [70, 1, 33]
    alone = []
    for k, size in enumerate(sizes):
        rng = np.random.default_rng([3, k])
        draw = sample_multiset_escort_counts(chain, c, 0.8, 3, size, rng)
        alone.append((draw.counts, rng.random()))  # the generator is left where it was
    rngs = [np.random.default_rng([3, k]) for k in range(len(sizes))]
    batch = sample_multiset_escort_batch(chain, c, 0.8, 3, sizes, rngs)
    for (counts, after), got, rng in zip(alone, batch, rngs, strict=True):
        assert np.array_equal(counts, got.counts) and rng.random() == after
    assert sum(int(x.counts.sum()) for x in batch) > 0


def test_forward_log_moment_is_the_multiset_pass_and_the_memo_its_own() -> None:
    chain = ParticipationChain(n_steps=41, min_sep=4, probability=0.15, warm_start=False)
    c, other = unit((1.0, 0.6, 0.3, 0.1)), unit((1.0, 0.5))
    exact = multiset_moments.log_moment(chain, c, 0.8, 3)
    multiset_escort._FORWARD.clear()
    assert forward_log_moment(chain, c, 0.8, 3) == exact  # fresh pass
    assert forward_log_moment(chain, c, 0.8, 3) == exact  # memoised pass
    first = sample_multiset_escort_counts(chain, c, 0.8, 3, 200, np.random.default_rng(9))
    for coefficients, sigma, order in ((other, 0.8, 3), (c, 0.9, 3), (c, 0.8, 2)):
        moved = sample_multiset_escort_counts(
            chain, coefficients, sigma, order, 200, np.random.default_rng(9)
        )
        assert moved.log_z == multiset_moments.log_moment(chain, coefficients, sigma, order)
        assert moved.log_z != first.log_z
    again = sample_multiset_escort_counts(chain, c, 0.8, 3, 200, np.random.default_rng(9))
    assert np.array_equal(again.counts, first.counts) and again.log_z == first.log_z


def test_refusals_name_the_parameter() -> None:
    chain = ParticipationChain(n_steps=5, min_sep=8, probability=0.3)
    with pytest.raises(ConfigurationError, match=r"order = 3 .*C\(10, 3\) = 120.*max_states = 119"):
        multiset_moments.log_moment(chain, np.ones(1), 1.0, 3, max_states=119)
    assert math.isfinite(multiset_moments.log_moment(chain, np.ones(1), 1.0, 3, max_states=120))
    with pytest.raises(ConfigurationError, match=r"min_sep = 2 .* must be >= bands = 3"):
        short = ParticipationChain(n_steps=5, min_sep=2, probability=0.3)
        multiset_moments.log_moment(short, np.ones(3) / math.sqrt(3), 1.0, 2)
    with pytest.raises(ConfigurationError, match=r"sigma = 0\.01"):
        multiset_moments.log_moment(chain, np.ones(1), 0.01, 2)
    for kwargs, name in (({"n_samples": 0}, "n_samples"), ({"block": 0}, "block")):
        arguments: dict[str, object] = {"n_samples": 10, **kwargs}
        with pytest.raises(ConfigurationError, match=name):
            sample_multiset_escort_counts(
                chain,
                np.ones(1),
                1.0,
                2,
                rng=np.random.default_rng(0),
                **arguments,  # type: ignore[arg-type]
            )


def test_memoryless_b_one_is_the_closed_form() -> None:
    chain = ParticipationChain(n_steps=30, min_sep=1, probability=0.2)
    c = np.ones(1)
    assert multiset_moments.log_moment(chain, c, 0.9, 4) == moments.log_moment(chain, c, 0.9, 4)
    draw = sample_multiset_escort_counts(chain, c, 0.9, 3, 50, np.random.default_rng(1))
    assert draw.counts.shape == (50, 30) and draw.log_z == moments.log_moment(chain, c, 0.9, 3)
