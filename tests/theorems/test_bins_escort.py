"""The balls-in-bins escort (docs/rdp-escort.md §10.8): exact ln Z_lam, exact draws, the engine.

ln Z against enumeration of every lam-tuple of bins from ``bin_gram`` (the seam, k = T, k = 1,
n = T, T > n, T not dividing n) and against the random-phase pass at q = 1; the drawn
occupations against the enumerated tuple law (chi-square, with a power check); end to end, the
escort's certified epsilon on a small model never below the exact one from Gauss-Hermite
quadrature over the T bin projections, and its importance mean within 4 standard errors of the
exact delta; bad input refused by name, and `auto` falls back to plain with the reason.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chi2

from minsep.accountants import bins_moments, phase_moments
from minsep.accountants.bins_escort import BinsEscortLaw, sample_bins_escort_counts
from minsep.accountants.escort_engine import EscortProposal
from minsep.accountants.routes import auto_proposal
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import EngineConfig, certify_delta, certify_epsilon
from minsep.framework.phase_mixture import PhaseMixture
from minsep.schemes.balls_in_bins.loss import BallsInBinsLossModel, bin_gram

QUIET = EngineConfig(progress=False)


def coefficients(k: int, seed: int) -> tuple[float, ...]:
    c = np.random.default_rng(seed).random(k) + 0.1
    return tuple(float(v) for v in c / np.linalg.norm(c))


def law_of(c: tuple[float, ...], n: int, t: int) -> BinsEscortLaw:
    return BinsEscortLaw(n, t, c, bin_gram(c, n, t))


def moment(c: tuple[float, ...], n: int, t: int, sigma: float, lam: int, **kw: int) -> float:
    return bins_moments.log_moment(bin_gram(c, n, t), n, t, len(c), sigma, lam, **kw)


def padded_gram(c: tuple[float, ...], n: int, t: int) -> np.ndarray:
    gram = np.zeros((t, t))
    inner = bin_gram(c, n, t)
    gram[: inner.shape[0], : inner.shape[0]] = inner
    return gram


def tuple_law(c: tuple[float, ...], n: int, t: int, sigma: float, lam: int) -> dict[str, Any]:
    """``{occupation of the first min(n, T) bins: probability}`` and ``ln Z``, by enumerating
    every tuple g in [T]^lam with weight ``T^-lam exp(sum_{j<l} G[g_j, g_l] / sigma^2)``."""
    gram = padded_gram(c, n, t) / sigma**2
    logs: dict[tuple[int, ...], list[float]] = collections.defaultdict(list)
    for g in itertools.product(range(t), repeat=lam):
        pairs = sum(gram[g[j], g[m]] for j in range(lam) for m in range(j + 1, lam))
        logs[tuple(np.bincount(g, minlength=t)[: min(n, t)])].append(pairs)
    merged = {key: float(logsumexp(v)) for key, v in logs.items()}
    total = float(logsumexp(list(merged.values())))
    law = {key: math.exp(v - total) for key, v in merged.items()}
    return {"law": law, "log_z": total - lam * math.log(t)}


# (n, T, bands, lam, sigma): the seam (n > T), T not dividing n, k = T, k = 1, n = T, T > n
CASES = [(8, 4, 2, 3, 0.9), (10, 4, 3, 3, 1.1), (7, 3, 3, 3, 0.8), (9, 4, 1, 4, 0.6),
         (9, 4, 4, 3, 1.2), (6, 6, 3, 3, 1.0), (5, 8, 2, 3, 0.7), (3, 5, 3, 3, 0.9),
         (11, 5, 3, 4, 1.3), (12, 4, 2, 5, 1.5)]  # fmt: skip


@pytest.mark.parametrize(("n", "t", "k", "lam", "sigma"), CASES)
def test_log_moment_matches_enumeration(n: int, t: int, k: int, lam: int, sigma: float) -> None:
    c = coefficients(k, n + t + k)
    exact = tuple_law(c, n, t, sigma, lam)["log_z"]
    assert moment(c, n, t, sigma, lam) == pytest.approx(exact, rel=1e-12)
    # chunks of one boundary each give the same float sum
    small = moment(c, n, t, sigma, lam, max_entries=bins_moments.lattice_states(lam, max(k - 1, 1)))
    assert small == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize(("n", "t", "k"), [(10, 4, 3), (16, 8, 4), (7, 3, 3), (5, 8, 2)])
def test_log_moment_matches_the_phase_pass_at_q_one(n: int, t: int, k: int) -> None:
    c = coefficients(k, 7)
    mixture = PhaseMixture(n_steps=n, phases=t, probability=1.0)
    for lam in (2, 3, 4):
        phase = phase_moments.log_moment(mixture, np.asarray(c), 0.9, lam)
        assert moment(c, n, t, 0.9, lam) == pytest.approx(phase, rel=1e-10)


def chi_square_p(counts: np.ndarray, law: dict[Any, float]) -> float:
    """p-value of the drawn occupations (rows) against ``law`` (cells of expected count < 5
    pooled)."""
    seen = collections.Counter(map(tuple, counts.astype(int)))
    assert set(seen) <= set(law)  # never an occupation outside the support
    total = counts.shape[0]
    stat, pooled_obs, pooled_exp, cells = 0.0, 0.0, 0.0, 0
    for key, p in law.items():
        if total * p < 5:
            pooled_obs, pooled_exp = pooled_obs + seen.get(key, 0), pooled_exp + total * p
            continue
        stat += (seen.get(key, 0) - total * p) ** 2 / (total * p)
        cells += 1
    if pooled_exp > 0:
        stat += (pooled_obs - pooled_exp) ** 2 / pooled_exp
        cells += 1
    return float(chi2.sf(stat, cells - 1))


DRAW_CASES = [(8, 4, 2, 3, 0.9), (10, 4, 3, 3, 1.1), (9, 4, 4, 3, 1.2), (9, 4, 1, 2, 0.8),
              (5, 8, 2, 3, 0.7), (7, 3, 3, 2, 0.8)]  # fmt: skip


@pytest.mark.parametrize(("n", "t", "k", "lam", "sigma"), DRAW_CASES)
def test_draws_follow_the_tuple_law(n: int, t: int, k: int, lam: int, sigma: float) -> None:
    """40,000 draws; chi-square p > 1e-4 (each case fails by chance with probability 1e-4).
    ``max_entries`` small enough that boundaries are replayed in several groups."""
    c = coefficients(k, n + t + k)
    exact = tuple_law(c, n, t, sigma, lam)
    rng = np.random.default_rng(n * 100 + t)
    w = max(min(k, n) - 1, 1)
    budget = 2 * (t + 1) * bins_moments.lattice_states(lam, w)
    draw = law_of(c, n, t).sample(sigma, lam, 40_000, rng, budget)
    assert draw.counts.shape == (40_000, n) and draw.counts.dtype == np.int8
    assert draw.order == lam and draw.log_z == pytest.approx(exact["log_z"], rel=1e-12)
    assert np.array_equal(draw.counts, draw.counts[:, np.arange(n) % t])  # n_{t mod T}
    assert np.all(draw.counts[:, : min(n, t)].sum(axis=1) <= lam)
    if n >= t:
        assert np.all(draw.counts[:, :t].sum(axis=1) == lam)
    assert chi_square_p(draw.counts[:, : min(n, t)], exact["law"]) > 1e-4


def test_the_draw_check_has_power() -> None:
    """Draws at sigma 0.9 against the law at sigma 1.5 are rejected."""
    c = coefficients(2, 14)
    draw = law_of(c, 8, 4).sample(0.9, 3, 40_000, np.random.default_rng(0), 2**24)
    assert chi_square_p(draw.counts[:, :4], tuple_law(c, 8, 4, 1.5, 3)["law"]) < 1e-10


# -- the engine: n = 6, T = 3 (the seam), 2 bands -------------------------------------------

N, T = 6, 3
C = coefficients(2, 3)


def model_of(coefficients: tuple[float, ...] = C, n: int = N, t: int = T) -> BallsInBinsLossModel:
    return BallsInBinsLossModel(coefficients=coefficients, n_steps=n, cycle_length=t)


@functools.cache
def quadrature(sigma: float, n: int = N, t: int = T) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite weights and u(y) at the nodes: under Q the bins' projections
    ``<C x_g, y>`` are N(0, sigma^2 G), and u depends on y only through them."""
    gram = bin_gram(C, n, t)
    bins = gram.shape[0]
    root = np.linalg.cholesky(gram + 1e-300 * np.eye(bins))
    nodes, weights = np.polynomial.hermite_e.hermegauss(90)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=bins)))
    dots = sigma * nodes[grid] @ root.T
    w = np.prod(weights[grid], axis=1)
    logits = (dots - 0.5 * np.diag(gram)) / sigma**2
    u = (np.exp(logits).sum(axis=1) + (t - bins)) / t
    return w, u


def exact_deltas(sigma: float, epsilon: float, n: int = N, t: int = T) -> tuple[float, float]:
    w, u = quadrature(sigma, n, t)
    e = math.exp(epsilon)
    return float(w @ np.maximum(u - e, 0.0)), float(w @ np.maximum(1.0 - e * u, 0.0))


def exact_epsilon(sigma: float, delta: float, n: int = N, t: int = T) -> float:
    low, high = 0.0, 20.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        worse = max(exact_deltas(sigma, mid, n, t)) > delta
        low, high = (mid, high) if worse else (low, mid)
    return high


def test_the_loss_model_serves_the_escort() -> None:
    law = model_of().escort_law()
    assert isinstance(law, BinsEscortLaw) and law.n_steps == N and law.cycle_length == T
    assert law.log_no_participation() == -math.inf  # every bin holds a step
    assert model_of(n=3, t=4).escort_law().log_no_participation() == pytest.approx(math.log(1 / 4))
    assert law.sampled_add_bound(1.0, 1e-6, 0) is None
    assert law.log_moment(1.0, 3, 2**24) == pytest.approx(moment(C, N, T, 1.0, 3))


@pytest.mark.parametrize(
    ("sigma", "delta", "route"),
    [(0.8, 1e-6, "exact zero"), (1.5, 1e-6, "exact zero"), (1.5, 1e-3, "deterministic")],
)
def test_certified_epsilon_is_never_below_the_exact_one(
    sigma: float, delta: float, route: str
) -> None:
    """n = 3, T = 5: two empty bins, so the add direction is exactly 0 at and above
    ln(1 / pi(empty)) = ln 2.5, and below it (delta 1e-3) bounded by §10.4 at q = 1 (with every
    bin occupied that bound does not reach delta 1e-6 and the add direction needs plain
    draws)."""
    n, t = 3, 5
    exact = exact_epsilon(sigma, delta, n, t)
    for seed in range(5):
        cert = certify_epsilon(
            model_of(n=n, t=t), sigma, delta, samples=2_000, pilot_samples=500, seed=seed,
            config=QUIET, proposal=EscortProposal(),
        )  # fmt: skip
        assert cert.proposal is not None and cert.proposal.method == "escort"
        assert cert.proposal.add == route
        assert cert.certified >= exact
        assert max(exact_deltas(sigma, cert.certified, n, t)) <= delta
        assert cert.certified <= exact + 0.3  # and a useful certificate


def test_importance_mean_matches_the_exact_delta() -> None:
    """The seam model (n = 6, T = 3): the escort's remove mean within 4 standard errors of
    quadrature; the add direction by whatever route the engine takes."""
    sigma, epsilon = 1.2, 2.0
    remove, add = exact_deltas(sigma, epsilon)
    cert = certify_delta(
        model_of(), sigma, epsilon, samples=20_000, pilot_samples=2_000, seed=4, config=QUIET,
        proposal=EscortProposal(),
    )  # fmt: skip
    assert cert.proposal is not None and cert.proposal.method == "escort"
    assert abs(cert.estimate - remove) <= 4 * cert.std_error
    assert cert.certified >= max(remove, add)


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "name"),
    [({"order": 1}, "order"), ({"sigma": 0.0}, "sigma"), ({"sigma": -1.0}, "sigma"),
     ({"coefficients": (0.5,) * 5}, "bands"), ({"max_entries": 5}, "order")],
)  # fmt: skip
def test_bad_input_names_the_parameter(changes: dict[str, Any], name: str) -> None:
    values = {"coefficients": C, "n_steps": 8, "cycle_length": 4, "sigma": 1.0, "order": 3}
    values.update(changes)
    budget = values.pop("max_entries", bins_moments.DEFAULT_MAX_ENTRIES)
    c = values.pop("coefficients")
    values["gram"] = bin_gram(c, 8, 4)
    values["bands"] = len(c)
    with pytest.raises(ConfigurationError, match=rf"\.{name} = "):
        bins_moments.log_moment(**values, max_entries=budget)
    with pytest.raises(ConfigurationError, match=rf"\.{name} = "):
        sample_bins_escort_counts(
            **values, n_samples=10, rng=np.random.default_rng(0), max_entries=budget
        )


def test_more_bands_than_bins_is_refused_and_auto_falls_back() -> None:
    wide = model_of(coefficients=coefficients(4, 1), n=8, t=3)
    with pytest.raises(ConfigurationError, match=r"bands = 4 .*T = 3"):
        wide.escort_law()
    with pytest.raises(ConfigurationError, match=r"bands = 4 .*T = 3"):
        law_of(coefficients(4, 1), 8, 3)
    reason = EscortProposal().unavailable(wide)
    assert reason is not None and "bands = 4" in reason
    takes, note = auto_proposal(wide, 1000, 1.0, 1e-6, 1.0)
    assert not takes and note is not None and "plain (auto)" in note and "bands = 4" in note


def test_affordable_orders_follow_the_budget() -> None:
    law = law_of(coefficients(8, 0), 1024, 256)
    assert [lam for lam in range(2, 9) if law.affordable(lam, 2**24)] == [2, 3, 4, 5, 6]
    law4 = law_of(coefficients(4, 0), 1024, 256)
    assert all(law4.affordable(lam, 2**24) for lam in range(2, 9))
    assert not law4.affordable(8, bins_moments.lattice_states(8, 3) - 1)
    assert "T = 256" in law.budget_note


class _DeflatedLaw(BinsEscortLaw):
    """The true law with ``ln Z`` reported 100x too small: weights and bound shrink alike."""

    def log_moment(self, sigma: float, order: int, max_states: int) -> float:
        return super().log_moment(sigma, order, max_states) - math.log(100.0)


class _DeflatedModel(BallsInBinsLossModel):
    def escort_law(self) -> BinsEscortLaw:
        return _DeflatedLaw(self.n_steps, self.cycle_length, self.coefficients, self.gram())


def test_the_check_catches_a_normaliser_that_is_too_small() -> None:
    """Power of the end-to-end test: a law under-reporting Z by 100x certifies below exact."""
    sigma, delta, n, t = 1.5, 1e-6, 3, 5
    wrong = _DeflatedModel(coefficients=C, n_steps=n, cycle_length=t)
    exact = exact_epsilon(sigma, delta, n, t)
    values = [
        certify_epsilon(
            wrong, sigma, delta, samples=2_000, pilot_samples=500, seed=seed, config=QUIET,
            proposal=EscortProposal(),
        ).certified
        for seed in range(3)
    ]  # fmt: skip
    assert max(values) < exact


def test_a_sigma_that_could_overflow_is_refused_by_name() -> None:
    gram = bin_gram(C, 8, 4)
    with pytest.raises(ConfigurationError, match=r"\.sigma = 0\.05 is invalid for order 6"):
        bins_moments.log_moment(gram, 8, 4, 2, 0.05, 6)
    assert math.isfinite(bins_moments.log_moment(gram, 8, 4, 2, 0.3, 6))


@pytest.mark.parametrize(
    ("n", "b", "k", "lam"),
    [(7, 3, 2, 3), (5, 7, 3, 2), (12, 4, 4, 4), (9, 2, 1, 3), (10, 5, 3, 3)],
)
def test_warm_chain_at_p_one_is_balls_in_bins(n: int, b: int, k: int, lam: int) -> None:
    """docs/rdp-escort.md §10.9: p = 1 with the warm start is a uniform phase, i.e. balls-in-bins
    with T = b; the b-min-sep model hands out the bins law, whose Z equals the chain pass."""
    from minsep.accountants import rdp_moments
    from minsep.accountants.escort_law import ChainEscortLaw
    from minsep.schemes.b_min_sep.loss import BMinSepLossModel

    rng = np.random.default_rng(n * 100 + b * 10 + k)
    c = tuple(float(x) for x in rng.uniform(0.2, 1.0, size=k))
    warm = BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=1.0, warm_start=True)
    law = warm.escort_law()
    assert isinstance(law, BinsEscortLaw) and law.cycle_length == b
    chain = warm.participation_chain()
    assert law.log_no_participation() == pytest.approx(chain.log_no_participation())
    for sigma in (0.7, 1.3):
        expected = rdp_moments.log_moment(chain, np.asarray(c), sigma, lam)
        assert law.log_moment(sigma, lam, 2**24) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    for other in (
        BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=1.0, warm_start=False),
        BMinSepLossModel(coefficients=c, n_steps=n, min_sep=b, probability=0.5, warm_start=True),
    ):
        assert isinstance(other.escort_law(), ChainEscortLaw)
