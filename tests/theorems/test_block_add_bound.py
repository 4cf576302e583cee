"""The sampled block bound on the add direction (docs/math.md §10.1) against exact answers.

Four layers: the block product never exceeds the enumerated mixture ratio U (pointwise, for
random outputs, cold and warm chains, several block lengths; equal to U with one block); each
block's certified moment is above its Gauss-Hermite value and close to it; the certified
``ln E_Q[U^-kappa]`` is above the quadrature of the enumerated mixture over repeated seeds; and
for Poisson (b = 1, one band: the block product is U itself) the bound's epsilon is never below
dp_accounting's add-direction epsilon at delta in {1e-6, 1e-8, 1e-10}, over seeds. The
entry-min variant (§10.1.1) is pinned the same way: ``G_1 prod M_B <= U`` pointwise, its block
moments above quadrature, its certified moment and add delta above the exact ones at tiny n.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special

import minsep.accountants.block_add_bound as block
from minsep.accountants.add_bound import banded_operator_norm_upper, chain_add_bound
from minsep.accountants.block_add_bound import (
    ENTRY_MIN,
    ZONE,
    BlockAddBound,
    BlockKind,
    block_factors,
    block_kinds,
    certify_block_bound,
    empirical_bernstein_upper,
)
from minsep.accountants.block_laws import entry_min_kinds, entry_values
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from tests.theorems import oracles


@pytest.fixture(autouse=True)
def small_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer block draws than a run's (the bounds stay valid, only looser)."""
    monkeypatch.setattr(block, "PILOT_WORK", 2**16)
    monkeypatch.setattr(block, "VERIFY_WORK", 2**20)
    block._certify.cache_clear()


def log_u(
    law: dict[tuple[int, ...], float], C: np.ndarray, y: np.ndarray, sigma: float
) -> np.ndarray:
    """ln U(y) of the enumerated mixture for outputs y (rows)."""
    out = np.full(y.shape[0], -np.inf)
    for x, prob in law.items():
        mean = C @ np.asarray(x, dtype=float)
        out = np.logaddexp(out, math.log(prob) + (y @ mean - 0.5 * mean @ mean) / sigma**2)
    return out


def log_product(
    kinds: list[BlockKind], c: np.ndarray, sigma: float, p: float, y: np.ndarray
) -> np.ndarray:
    """ln prod_B G_B(y_B), the blocks laid out in order."""
    total, start = np.zeros(y.shape[0]), 0
    for kind in kinds:
        for _ in range(kind.count):
            z = y[:, start : start + kind.length] / sigma
            total += block_factors(kind, c, sigma, p, z)
            start += kind.length
    assert start == y.shape[1]
    return total


POINTWISE = [
    # (coefficients, n, p, b, warm, sigma, L)
    ((0.8, 0.6), 10, 0.3, 3, False, 0.8, 3),
    ((1.0,), 12, 0.25, 3, True, 1.0, 4),
    ((0.7, 0.5, 0.5), 11, 0.2, 4, False, 0.6, 4),
    ((0.6, 0.8), 9, 0.4, 2, True, 1.3, 9),
    ((1.0,), 8, 0.3, 1, False, 0.9, 2),
    ((0.9, 0.4), 12, 0.35, 2, True, 0.7, 5),
]


@pytest.mark.parametrize(("c", "n", "p", "b", "warm", "sigma", "length"), POINTWISE)
def test_block_product_never_exceeds_the_mixture_ratio(
    c: tuple[float, ...], n: int, p: float, b: int, warm: bool, sigma: float, length: int
) -> None:
    chain = ParticipationChain(n, b, p, warm)
    law = oracles.b_min_sep_law(n, p, b, warm)
    C = oracles.strategy_matrix(np.asarray(c), n)
    y = np.random.default_rng(7).standard_normal((400, n)) * sigma * 1.5
    kinds = block_kinds(chain, length)
    ours = log_product(kinds, np.asarray(c), sigma, p, y)
    truth = log_u(law, C, y, sigma)
    assert np.all(ours <= truth + 1e-12)
    if (len(kinds) == 1 and kinds[0].count == 1) or (b == 1 and len(c) == 1):  # nothing dropped
        np.testing.assert_allclose(ours, truth, rtol=0, atol=1e-10)
    else:
        assert np.mean(truth - ours) > 1e-3  # patterns were dropped: the test can fail


def test_one_block_and_poisson_blocks_are_the_mixture_itself() -> None:
    """b = 1 with one band: every step is in its block's zone, so the product is U."""
    n, p, sigma = 8, 0.3, 0.9
    chain = ParticipationChain(n, 1, p)
    law = oracles.b_min_sep_law(n, p, 1, False)
    y = np.random.default_rng(3).standard_normal((300, n)) * sigma
    ours = log_product(block_kinds(chain, 2), np.ones(1), sigma, p, y)
    np.testing.assert_allclose(ours, log_u(law, np.eye(n), y, sigma), atol=1e-10)


def gauss_hermite_block(
    kind: BlockKind, c: np.ndarray, sigma: float, p: float, kappa: float
) -> float:
    """``E[G_B^-kappa]`` by tensor Gauss-Hermite quadrature over the block's normals."""
    t, w = special.roots_hermitenorm(20)
    w = w / w.sum()
    grid = np.array(list(itertools.product(t, repeat=kind.length)))
    weights = np.prod(np.array(list(itertools.product(w, repeat=kind.length))), axis=1)
    return float(np.sum(weights * np.exp(-kappa * block_factors(kind, c, sigma, p, grid))))


@pytest.mark.parametrize("kappa", [0.5, 2.0, 6.0])
def test_block_moment_is_certified_above_quadrature_and_close(kappa: float) -> None:
    c, sigma, p = np.array([0.8, 0.6]), 0.9, 0.3
    kind = BlockKind(length=4, zone=3, initial=(1.0, 0.0), count=1)
    truth = gauss_hermite_block(kind, c, sigma, p, kappa)
    for seed in range(3):
        draws = block._draw_log_factors(kind, c, sigma, p, 200_000, seed, (1, 2))
        upper = block._upper_log_moment(draws, kappa, kind.log_empty(p), math.log(2e6))
        assert upper >= math.log(truth)
        assert upper <= math.log(truth) + 0.05 * kappa  # close: the test can fail both ways


CHAINS = [
    # (coefficients, n, p, b, warm, sigma)
    ((0.8, 0.6), 4, 0.3, 2, False, 0.9),
    ((0.8, 0.6), 4, 0.25, 2, True, 1.1),
    ((1.0,), 4, 0.3, 1, False, 0.8),
    ((0.7, 0.5, 0.5), 4, 0.2, 3, False, 1.2),
]


@pytest.mark.parametrize("variant", [ZONE, ENTRY_MIN])
@pytest.mark.parametrize(("c", "n", "p", "b", "warm", "sigma"), CHAINS)
def test_certified_moment_bounds_the_mixture_over_seeds(
    monkeypatch: pytest.MonkeyPatch,
    variant: str,
    c: tuple[float, ...],
    n: int,
    p: float,
    b: int,
    warm: bool,
    sigma: float,
) -> None:
    """Blocks of length b (the smallest: most patterns dropped) and the whole horizon; each
    variant verified alone."""
    monkeypatch.setattr(block, "VARIANTS", (variant,))
    law = oracles.b_min_sep_law(n, p, b, warm)
    C = oracles.strategy_matrix(np.asarray(c), n)
    t, w = special.roots_hermitenorm(20)
    w = w / w.sum()
    grid = np.array(list(itertools.product(t, repeat=n))) * sigma
    weights = np.prod(np.array(list(itertools.product(w, repeat=n))), axis=1)
    lu = log_u(law, C, grid, sigma)
    chain = ParticipationChain(n, b, p, warm)
    for factors in ((1,), (4,)):
        monkeypatch.setattr(block, "LENGTH_FACTORS", factors)
        monkeypatch.setattr(block, "ENTRY_LENGTH_FACTORS", factors)
        for seed in range(3):
            block._certify.cache_clear()
            bound = certify_block_bound(chain, c, sigma, 1e-3, seed)
            assert bound.variant == variant
            truth = float(np.sum(weights * np.exp(-bound.kappa * lu)))
            assert bound.log_moment >= math.log(truth)


@pytest.mark.parametrize(("n", "q", "sigma"), [(1000, 0.01, 1.0), (200, 0.05, 0.8)])
def test_poisson_block_epsilon_never_below_dp_accounting(n: int, q: float, sigma: float) -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld

    # pessimistic (connect-the-dots): at or above the exact epsilon, so the check is stronger
    exact = pld.from_gaussian_mechanism(
        sigma, sampling_prob=q, value_discretization_interval=1e-4
    ).self_compose(n)
    chain = ParticipationChain(n, 1, q)
    for delta in (1e-6, 1e-8, 1e-10):
        truth = exact._pmf_add.get_epsilon_for_delta(delta)
        for seed in range(3):
            bound = certify_block_bound(chain, (1.0,), sigma, delta, seed)
            ours = bound.epsilon(delta)
            assert ours >= truth
            assert ours <= truth * 1.15 + 0.05  # the Chernoff conversion and sampling slack
            assert bound.delta(ours) <= delta * (1 + 1e-9)


def test_overlapping_columns_beat_the_operator_norm_reduction() -> None:
    """Eight MSE-like bands at b = 8: the block bound's epsilon is far below §10's."""
    c = np.array([0.499, 0.387, 0.356, 0.338, 0.324, 0.310, 0.294, 0.270])
    c = c / np.linalg.norm(c)
    chain = ParticipationChain(512, 8, 1 / 128)
    deterministic = chain_add_bound(chain, banded_operator_norm_upper(c, 512), 1.0)
    sampled = certify_block_bound(chain, c, 1.0, 1e-6, 0)
    assert sampled.epsilon(1e-6) < 0.75 * deterministic.epsilon(1e-6)


def test_the_bound_is_a_function_of_its_seed() -> None:
    chain = ParticipationChain(64, 2, 0.05)
    one = certify_block_bound(chain, (0.8, 0.6), 1.0, 1e-6, 5)
    block._certify.cache_clear()
    assert certify_block_bound(chain, (0.8, 0.6), 1.0, 1e-6, 5) == one
    assert certify_block_bound(chain, (0.8, 0.6), 1.0, 1e-6, 6).log_moment != one.log_moment


def test_delta_and_epsilon_are_consistent_and_fold_the_failure() -> None:
    bound = BlockAddBound(
        kappa=4.0, log_moment=2.0, failure=1e-9, log_no_participation=-3.0, block_length=8,
        samples=100,
    )  # fmt: skip
    eps = bound.epsilon(1e-6)
    assert bound.delta(eps) == pytest.approx(1e-6, rel=1e-9)
    assert bound.delta(2.9) >= bound.failure  # below ln(1/pi(empty)) the failure is folded in
    assert bound.delta(3.0 + 1e-9) == 0.0  # beyond ln(1/pi(empty)): exactly 0
    assert bound.epsilon(1e-10) == pytest.approx(math.log1p(-1e-10) + 3.0)  # delta <= beta: cap


def test_empirical_bernstein_is_an_upper_confidence_bound() -> None:
    rng = np.random.default_rng(0)
    misses = 0
    for _ in range(2000):
        x = rng.beta(0.5, 4.0, size=50)
        upper = empirical_bernstein_upper(
            float(x.mean()), float(x.var(ddof=1)), 50, math.log(1 / 0.05)
        )
        misses += upper < 0.5 / 4.5
    assert misses <= 2000 * 0.05  # at most beta = 0.05 of the time (far fewer in practice)


@pytest.mark.parametrize(
    ("call", "word"),
    [
        (
            lambda: certify_block_bound(ParticipationChain(16, 2, 0.1), (0.6, 0.6, 0.5), 1.0, 1e-6),
            "bands",
        ),
        (
            lambda: certify_block_bound(ParticipationChain(16, 2, 1.0), (1.0,), 1.0, 1e-6),
            "probability",
        ),
        (lambda: certify_block_bound(ParticipationChain(16, 2, 0.1), (1.0,), 0.0, 1e-6), "sigma"),
        (lambda: certify_block_bound(ParticipationChain(16, 2, 0.1), (1.0,), 1.0, 1.5), "delta"),
        (lambda: block_kinds(ParticipationChain(16, 4, 0.1), 3), "length"),
    ],
)
def test_bad_input_is_refused_by_name(call: object, word: str) -> None:
    with pytest.raises(ConfigurationError, match=word):
        call()  # type: ignore[operator]


def test_escort_epsilon_takes_the_block_route_below_the_deterministic_bound() -> None:
    """n = 256, 4 bands, b = 4, p = 1/64, sigma = 1, delta = 1e-3: the remove direction's
    epsilon (about 1.82) is below the §10 bound's add epsilon (2.06) and above the block
    bound's (1.59), so the run certifies the add direction by §10.1 without add draws and
    releases below what §10 alone would allow, over seeds; the add delta stays below delta."""
    from minsep.accountants.escort_engine import EscortProposal
    from minsep.framework import setup
    from minsep.framework.montecarlo import EngineConfig, certify_epsilon
    from minsep.schemes.b_min_sep.loss import BMinSepLossModel

    n, k, b, p, sigma, delta = 256, 4, 4, 1 / 64, 1.0, 1e-3
    c = tuple(setup.build_strategy(n, k).coefficients)
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=False)
    deterministic = chain_add_bound(
        ParticipationChain(n, b, p), banded_operator_norm_upper(np.asarray(c), n), sigma
    ).epsilon(delta)
    for seed in range(2):
        cert = certify_epsilon(
            model,
            sigma,
            delta,
            samples=10**9,
            pilot_samples=1_000,
            seed=seed,
            config=EngineConfig(progress=False),
            proposal=EscortProposal(precision=0.05),
        )
        assert cert.proposal is not None and cert.proposal.add == "block bound"
        assert cert.proposal.add_delta is not None and cert.proposal.add_delta <= delta
        assert cert.estimate <= cert.certified < deterministic


def test_escort_delta_takes_the_block_route_where_it_is_smaller() -> None:
    """The same 4-band question asked for delta at epsilon 1.9: the add direction's ceiling is
    the block bound (aimed at that epsilon), below the remove direction's release, so no add
    draws; the released delta is the larger of the two and at least the estimate."""
    from minsep.accountants.escort_engine import EscortProposal
    from minsep.framework import setup
    from minsep.framework.montecarlo import EngineConfig, certify_delta
    from minsep.schemes.b_min_sep.loss import BMinSepLossModel

    n, k, b, p, sigma, epsilon = 256, 4, 4, 1 / 64, 1.0, 1.9
    c = tuple(setup.build_strategy(n, k).coefficients)
    model = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=p, warm_start=False)
    deterministic = chain_add_bound(
        ParticipationChain(n, b, p), banded_operator_norm_upper(np.asarray(c), n), sigma
    ).delta(epsilon)
    cert = certify_delta(
        model,
        sigma,
        epsilon,
        samples=5_000,
        pilot_samples=1_000,
        seed=0,
        config=EngineConfig(progress=False),
        proposal=EscortProposal(),
    )
    assert cert.proposal is not None and cert.proposal.add == "block bound"
    assert cert.proposal.add_delta is not None
    assert cert.proposal.add_delta <= cert.certified < deterministic
    assert cert.certified >= cert.estimate


@pytest.mark.parametrize("variant", [ZONE, ENTRY_MIN])
@pytest.mark.parametrize("seed", range(6))
def test_random_chains_block_delta_is_above_the_exact_add_delta(
    monkeypatch: pytest.MonkeyPatch, seed: int, variant: str
) -> None:
    """Property: on random small chains (n = 4, cold or warm, 1-3 bands <= b, random p and
    sigma) the block bound's add delta is at least the exact one (Gauss-Hermite quadrature of
    the enumerated mixture) at several epsilons, with blocks of length b and of n."""
    rng = np.random.default_rng(1000 + seed)
    b = int(rng.integers(1, 4))
    k = int(rng.integers(1, b + 1))
    n, p = 4, float(rng.uniform(0.1, 0.5))
    warm, sigma = bool(rng.integers(0, 2)), float(rng.uniform(0.5, 1.5))
    c = rng.uniform(0.3, 1.0, size=k)
    c = c / np.linalg.norm(c)
    law = oracles.b_min_sep_law(n, p, b, warm)
    C = oracles.strategy_matrix(c, n)
    t, w = special.roots_hermitenorm(24)
    w = w / w.sum()
    grid = np.array(list(itertools.product(t, repeat=n))) * sigma
    weights = np.prod(np.array(list(itertools.product(w, repeat=n))), axis=1)
    u = np.exp(log_u(law, C, grid, sigma))
    chain = ParticipationChain(n, b, p, warm)
    monkeypatch.setattr(block, "VARIANTS", (variant,))
    for factors in ((1,), (4,)):
        monkeypatch.setattr(block, "LENGTH_FACTORS", factors)
        monkeypatch.setattr(block, "ENTRY_LENGTH_FACTORS", factors)
        block._certify.cache_clear()
        bound = certify_block_bound(chain, c, sigma, 1e-2, seed)
        for eps in (0.1, 0.5, 1.0, 2.0):
            exact = float(np.sum(weights * np.maximum(1.0 - math.exp(eps) * u, 0.0)))
            assert bound.delta(eps) >= exact


def test_a_horizon_shorter_than_min_sep_is_one_exact_block() -> None:
    """n < b: at most one participation; the one block is the whole mixture."""
    n, p, b, sigma, c = 3, 0.3, 5, 0.8, np.array([0.8, 0.6])
    chain = ParticipationChain(n, b, p)
    kinds = block_kinds(chain, n)
    assert [(k.length, k.zone, k.count) for k in kinds] == [(3, 3, 1)]
    y = np.random.default_rng(2).standard_normal((200, n)) * sigma
    law = oracles.b_min_sep_law(n, p, b, False)
    ours = log_product(kinds, c, sigma, p, y)
    np.testing.assert_allclose(
        ours, log_u(law, oracles.strategy_matrix(c, n), y, sigma), atol=1e-10
    )
    assert certify_block_bound(chain, c, sigma, 1e-6, 0).block_length == n


ENTRY_POINTWISE = [
    # (coefficients, n, p, b, warm, sigma, L): k < b and k = b, cold and warm
    ((0.8, 0.6), 10, 0.3, 3, False, 0.8, 3),
    ((0.8, 0.6), 11, 0.3, 3, True, 0.8, 3),
    ((1.0,), 12, 0.25, 3, True, 1.0, 4),
    ((1.0,), 12, 0.35, 4, False, 0.7, 4),
    ((0.7, 0.5, 0.5), 11, 0.2, 3, True, 0.6, 3),
    ((0.7, 0.5, 0.5), 12, 0.25, 4, True, 0.9, 4),
    ((0.6, 0.8), 9, 0.4, 2, True, 1.3, 2),
    ((0.6, 0.8), 12, 0.3, 2, False, 1.3, 5),
    ((0.9, 0.4), 12, 0.35, 5, True, 0.7, 6),
]


@pytest.mark.parametrize(("c", "n", "p", "b", "warm", "sigma", "length"), ENTRY_POINTWISE)
def test_entry_min_product_never_exceeds_the_mixture_ratio(
    c: tuple[float, ...], n: int, p: float, b: int, warm: bool, sigma: float, length: int
) -> None:
    """``G_1 prod_B M_B <= U`` (§10.1.1) for many outputs, some far in the tails. Equality only
    with one block; with k = b the only entry state is 0 and the laws are the zone variant's."""
    chain = ParticipationChain(n, b, p, warm)
    law = oracles.b_min_sep_law(n, p, b, warm)
    C = oracles.strategy_matrix(np.asarray(c), n)
    rng = np.random.default_rng(11)
    y = rng.standard_normal((1500, n)) * sigma * rng.choice([0.5, 1.0, 2.5], size=(1500, 1))
    kinds = entry_min_kinds(chain, length, len(c))
    ours = log_product(kinds, np.asarray(c), sigma, p, y)
    truth = log_u(law, C, y, sigma)
    assert np.all(ours <= truth + 1e-12)
    assert np.mean(truth - ours) > 1e-3  # patterns dropped and minima taken: the test can fail
    if len(c) == b:
        assert kinds == block_kinds(chain, length)
    else:
        assert any(kind.entries == b - len(c) + 1 for kind in kinds)


def test_entry_min_with_one_block_is_the_mixture_itself() -> None:
    n, p, b, sigma, c = 7, 0.3, 3, 0.8, np.array([0.8, 0.6])
    chain = ParticipationChain(n, b, p, True)
    kinds = entry_min_kinds(chain, 4, 2)  # n < 2L: one block, every pattern kept
    assert kinds == block_kinds(chain, 4) and len(kinds) == 1
    y = np.random.default_rng(5).standard_normal((300, n)) * sigma
    law = oracles.b_min_sep_law(n, p, b, True)
    np.testing.assert_allclose(
        log_product(kinds, c, sigma, p, y),
        log_u(law, oracles.strategy_matrix(c, n), y, sigma),
        atol=1e-10,
    )


def test_backward_pass_is_the_forward_pass_from_each_entry_state() -> None:
    """``G_{B,s}`` of the backward pass against the forward pass from the point mass at s."""
    c, sigma, p, b = np.array([0.7, 0.5, 0.5]), 0.8, 0.3, 4
    z = np.random.default_rng(9).standard_normal((500, 9))
    kind = BlockKind(length=9, zone=7, initial=(1.0, 0.0, 0.0, 0.0), count=1, entries=4)
    values = entry_values(kind, c, sigma, p, z)
    for s in range(b):
        point = tuple(float(a == s) for a in range(b))
        forward = block_factors(BlockKind(9, 7, point, 1), c, sigma, p, z)
        np.testing.assert_allclose(np.log(values[:, s]), forward, rtol=1e-12, atol=1e-12)
    assert np.all(np.log(values.min(axis=1)) >= kind.log_empty(p) * (1 + 1e-12))


@pytest.mark.parametrize("kappa", [0.5, 2.0, 6.0])
def test_entry_min_block_moment_is_certified_above_quadrature_and_close(kappa: float) -> None:
    c, sigma, p = np.array([0.8, 0.6]), 0.9, 0.3
    kind = BlockKind(length=4, zone=3, initial=(1.0, 0.0, 0.0), count=1, entries=2)
    truth = gauss_hermite_block(kind, c, sigma, p, kappa)
    plain = gauss_hermite_block(BlockKind(4, 3, (1.0, 0.0, 0.0), 1), c, sigma, p, kappa)
    assert truth > plain  # the minimum over entry states is smaller: its moment is larger
    for seed in range(3):
        draws = block._draw_log_factors(kind, c, sigma, p, 200_000, seed, (1, 2))
        upper = block._upper_log_moment(draws, kappa, kind.log_empty(p), math.log(2e6))
        assert upper >= math.log(truth)
        assert upper <= math.log(truth) + 0.05 * kappa


def test_the_pilot_picks_entry_min_where_it_is_better_and_zone_stays_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """b = 32, 4 MSE-optimal bands, p = 1/225 (warm), sigma = 0.9: dropping the last 3 steps
    of each block instead of 31 wins; with the zone variant alone the plan is the old one, and
    with k = b the minimum over entry states cannot help (the zone variant is chosen)."""
    from minsep.framework import setup

    n, b, p, sigma = 1024, 32, 1 / 225, 0.9
    c = np.asarray(setup.build_strategy(n, 4).coefficients)
    chain = ParticipationChain(n, b, p, True)
    monkeypatch.setattr(block, "LENGTH_FACTORS", (4,))
    both = certify_block_bound(chain, c, sigma, 1e-6, 0)
    assert both.variant == ENTRY_MIN and "entry-min" in both.note()
    monkeypatch.setattr(block, "VARIANTS", (ZONE,))
    block._certify.cache_clear()
    zone = certify_block_bound(chain, c, sigma, 1e-6, 0)
    assert zone.variant == ZONE and "§10.1)" in zone.note()
    assert both.epsilon(1e-6) < zone.epsilon(1e-6) - 0.25
    monkeypatch.setattr(block, "VARIANTS", (ZONE, ENTRY_MIN))
    block._certify.cache_clear()
    four = ParticipationChain(n, 4, 1 / 64, True)
    assert certify_block_bound(four, c, sigma, 1e-6, 0).variant == ZONE
