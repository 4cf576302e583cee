"""Soundness of escort importance sampling in the Monte Carlo engine (docs/rdp-escort.md §8).

DP-SGD (b = 1, identity) against dp_accounting's exact PLD at delta in {1e-6, 1e-8, 1e-10}:
the certified epsilon is never below the exact one over many seeded repetitions with small
samples, and the importance-sampling mean is within 4 standard errors of the exact delta.
b-min-sep BandMF with n = 3 against Gauss-Hermite quadrature, both directions. A deliberately
wrong support bound is refused, never clipped.
"""

from __future__ import annotations

import functools
import itertools
import math

import attrs
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution

from minsep.accountants.escort import escort_outputs, sample_escort_counts
from minsep.accountants.escort_engine import (
    EscortChunkTask,
    EscortProposal,
    add_threshold,
    escort_sample,
    escort_setups,
)
from minsep.accountants.escort_kernels import NUMBA_AVAILABLE
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo import (
    EngineConfig,
    ProcessExecutor,
    calibrate_sweep,
    certify_delta,
    certify_epsilon,
    sample,
)
from minsep.framework.montecarlo.proposals import SupportBoundError
from minsep.framework.participation import ParticipationChain
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.b_min_sep.loss import BMinSepLossModel
from minsep.strategies import BandedToeplitz
from tests.theorems import oracles

# DP-SGD where an order helps (s_lam / delta ~ 10-15 at the exact epsilon, lam = 3).
N, P, SIGMA = 50, 0.05, 0.7
QUIET = EngineConfig(progress=False)


def dp_sgd() -> BMinSepLossModel:
    return BMinSepLossModel(
        coefficients=(1.0,), n_steps=N, min_sep=1, probability=P, warm_start=False
    )


def exact_pld() -> privacy_loss_distribution.PrivacyLossDistribution:
    # pessimistic: its epsilon and delta are upper bounds of the true ones
    return privacy_loss_distribution.from_gaussian_mechanism(
        SIGMA, sampling_prob=P, value_discretization_interval=1e-4
    ).self_compose(N)


def certified_epsilons(delta: float, repetitions: int) -> list[float]:
    model, proposal = dp_sgd(), EscortProposal()
    return [
        certify_epsilon(
            model,
            SIGMA,
            delta,
            samples=2_000,
            pilot_samples=500,
            seed=seed,
            config=QUIET,
            proposal=proposal,
        ).certified
        for seed in range(repetitions)
    ]


@pytest.mark.parametrize("delta", [1e-8])
def test_certified_epsilon_is_never_below_the_exact_one_micro(delta: float) -> None:
    exact = exact_pld().get_epsilon_for_delta(delta)
    values = certified_epsilons(delta, 5)
    assert all(math.isfinite(v) for v in values)  # small samples suffice: the order helps
    assert min(values) >= exact
    assert max(values) <= exact + 1.0  # and it is a useful certificate


@pytest.mark.slow
@pytest.mark.parametrize("delta", [1e-6, 1e-8, 1e-10])
def test_certified_epsilon_is_never_below_the_exact_one(delta: float) -> None:
    exact = exact_pld().get_epsilon_for_delta(delta)
    values = certified_epsilons(delta, 200)
    assert min(values) >= exact
    assert sum(math.isfinite(v) for v in values) >= 190


@pytest.mark.parametrize("delta", [1e-6, 1e-8, 1e-10])
def test_importance_mean_matches_the_exact_delta(delta: float) -> None:
    pld = exact_pld()
    epsilon = pld.get_epsilon_for_delta(delta)
    exact = pld.get_delta_for_epsilon(epsilon)
    cert = certify_delta(
        dp_sgd(),
        SIGMA,
        epsilon,
        samples=20_000,
        pilot_samples=2_000,
        seed=11,
        config=QUIET,
        proposal=EscortProposal(),
    )
    assert cert.proposal is not None and cert.proposal.add == "exact zero"
    assert cert.proposal.support is not None and cert.proposal.support < 20 * delta
    assert abs(cert.estimate - exact) <= 4 * cert.std_error + 1e-3 * exact
    assert cert.certified >= exact * (1 - 1e-3)
    assert cert.certified <= 3 * exact


def test_order_is_chosen_per_question() -> None:
    model = dp_sgd()
    orders = {
        delta: certify_epsilon(
            model,
            SIGMA if delta > 1e-7 else 0.5,
            delta,
            samples=500,
            pilot_samples=300,
            seed=1,
            config=QUIET,
            proposal=EscortProposal(),
        ).proposal
        for delta in (1e-6, 1e-8)
    }
    assert {info.order for info in orders.values() if info is not None} == {2, 3}


# -- b-min-sep BandMF, n = 3, against quadrature ------------------------------------------

C, BANDS_N, B, SIGMA_B = (0.8, 0.6), 3, 2, 0.7


@functools.cache
def quadrature_ratio(warm: bool) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes' weights and ``u(y)`` at them (y ~ Q)."""
    scheme = BMinSep(n_steps=BANDS_N, rate=0.25, min_sep=B, warm_start=warm)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=BANDS_N)))
    ys = SIGMA_B * nodes[grid]
    w = np.prod(weights[grid], axis=1)
    matrix = oracles.strategy_matrix(C, BANDS_N)
    u = np.zeros(len(ys))
    for x, prob in oracles.b_min_sep_law(BANDS_N, scheme.probability, B, warm).items():
        mean = matrix @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / SIGMA_B**2)
    return w, u


def quadrature_deltas(warm: bool, epsilon: float) -> tuple[float, float]:
    """``(H(P||Q), H(Q||P))`` at ``e^eps`` by Gauss-Hermite quadrature."""
    w, u = quadrature_ratio(warm)
    e = math.exp(epsilon)
    return float(w @ np.maximum(u - e, 0.0)), float(w @ np.maximum(1.0 - e * u, 0.0))


def band_model(warm: bool) -> BMinSepLossModel:
    scheme = BMinSep(n_steps=BANDS_N, rate=0.25, min_sep=B, warm_start=warm)
    model = scheme.loss_model(BandedToeplitz(coefficients=C))
    assert isinstance(model, BMinSepLossModel)
    return model


@pytest.mark.parametrize(("warm", "epsilon"), [(True, 1.2), (False, 0.3)])
def test_certified_delta_bounds_the_exact_one_b_min_sep(warm: bool, epsilon: float) -> None:
    model = band_model(warm)
    remove, add = quadrature_deltas(warm, epsilon)
    cert = certify_delta(
        model,
        SIGMA_B,
        epsilon,
        samples=20_000,
        pilot_samples=2_000,
        seed=5,
        config=QUIET,
        proposal=EscortProposal(),
    )
    assert cert.proposal is not None
    exact_zero = epsilon >= add_threshold(model)
    expected = ("exact zero",) if exact_zero else ("plain", "block bound")  # §10.1 may serve
    assert cert.proposal.add in expected
    if exact_zero:
        assert add == pytest.approx(0.0, abs=1e-12)
    assert cert.certified >= max(remove, add)
    assert abs(cert.estimate - remove) <= 4 * cert.std_error


def test_certified_epsilon_bounds_the_exact_one_b_min_sep() -> None:
    delta, model = 1e-3, band_model(True)
    cert = certify_epsilon(
        model,
        SIGMA_B,
        delta,
        samples=20_000,
        pilot_samples=2_000,
        seed=2,
        config=QUIET,
        proposal=EscortProposal(),
    )
    assert cert.verified
    remove, add = quadrature_deltas(True, cert.certified)
    assert max(remove, add) <= delta
    low, high = 0.0, cert.certified  # the exact epsilon, by bisection
    for _ in range(40):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if max(quadrature_deltas(True, mid)) > delta else (low, mid)
    assert cert.certified >= high


@pytest.mark.parametrize("start", [0, 3, 5])
def test_escort_calibration_is_sound(start: int) -> None:
    """From the top, and from inside the sweep (two walks: a start that passes, 0.74, and one
    that fails, 0.70, so the second walk from the top releases)."""
    epsilon, delta = 9.5, 1e-8  # sigma = 0.7 gives epsilon 9.53 exactly
    pld = privacy_loss_distribution
    sweep = (0.84, 0.8, 0.77, 0.74, 0.72, 0.70, 0.68)
    result = calibrate_sweep(
        dp_sgd(),
        sweep,
        epsilon,
        delta,
        samples=20_000,
        seed=3,
        config=QUIET,
        proposal=EscortProposal(),
        start=start,
    )
    assert (result.start, result.index >= start) == (start, start != 5)
    assert result.proposal is not None and result.proposal.method == "escort"
    exact = (
        pld.from_gaussian_mechanism(
            result.sigma, sampling_prob=P, value_discretization_interval=1e-4
        )
        .self_compose(N)
        .get_delta_for_epsilon(epsilon)
    )
    assert exact <= delta
    assert 0 < result.index < len(sweep) - 1  # it walked, and it stopped


def test_escort_calibration_stops_where_the_escort_cannot_run() -> None:
    """Issue 30, friction 1: a sweep reaching a sigma too small for every affordable order
    (the forward pass overflows: 0.05 and below here) used to raise from inside the sweep.
    Those entries now count as failing: the walk stops before them and still certifies."""
    model = BMinSepLossModel(
        coefficients=tuple(BandedToeplitz.for_steps(20, bands=4).coefficients),
        n_steps=20,
        min_sep=4,
        probability=BMinSep(n_steps=20, rate=1 / 16, min_sep=4).probability,
        warm_start=True,
    )
    with pytest.raises(ConfigurationError, match="no order fits"):
        escort_setups(model, 0.05)
    sweep = (8.0, 6.0, 4.0, 0.05, 0.02)
    result = calibrate_sweep(
        model, sweep, 4.0, 1e-5, samples=2_000, seed=0, config=QUIET, proposal=EscortProposal()
    )
    assert result.index <= 2 and result.sigma >= 4.0
    assert all(math.isnan(d) for d in result.deltas[3:])


def test_escort_calibration_fails_entries_no_add_route_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Below ln(1/pi(empty)), with too few samples for plain add draws (a route sized them for
    the escort), the sweep entries neither the §10 bound nor the block bound of §10.1 settles
    count as failing: the walk stops before them (unchecked, the add direction would be
    released unverified); with §10 vacuous there, the block bound settles them."""
    from minsep.accountants import escort_add, escort_sweep
    from minsep.accountants.escort_law import ChainEscortLaw

    sweep, epsilon, delta = (3.0, 2.2, 1.8, 1.6, 1.5), 2.0, 1e-8  # eps < ln(1/pi(empty)) ~ 2.56
    real = escort_sweep.add_bound

    class Stub:  # the true bound above sigma 1.8, vacuous below
        def __init__(self, model: BMinSepLossModel, sigma: float) -> None:
            self.bound, self.sigma = real(model, sigma), sigma

        def delta(self, eps: float) -> float:
            return self.bound.delta(eps) if self.sigma >= 1.8 else 1.0

        def epsilon(self, target: float) -> float:
            return self.bound.epsilon(target) if self.sigma >= 1.8 else math.inf

        failure = 0.0  # deterministic, as the §10 bound

    def run() -> object:
        return calibrate_sweep(
            dp_sgd(),
            sweep,
            epsilon,
            delta,
            samples=20_000,
            seed=0,
            config=QUIET,
            proposal=EscortProposal(precision=0.05),
        )

    free = run()
    assert free.index == 4 and free.proposal.add == "deterministic"  # the bound settles all
    monkeypatch.setattr(escort_sweep, "add_bound", Stub)
    monkeypatch.setattr(escort_add, "add_bound", Stub)
    monkeypatch.setattr(escort_add, "_CHOSEN", {})
    blocked = run()  # §10 vacuous below 1.8: the block bound of §10.1 settles those entries
    assert blocked.index == 4 and blocked.proposal.add == "block bound"
    monkeypatch.setattr(ChainEscortLaw, "sampled_add_bound", lambda *args, **kwargs: None)
    monkeypatch.setattr(escort_add, "_CHOSEN", {})  # the memo holds the unpatched bounds
    stopped = run()
    assert stopped.index == 2 and stopped.sigma == 1.8
    assert stopped.deltas[3] == 1.0 and math.isnan(stopped.deltas[4])


# -- a wrong support bound is caught -----------------------------------------------------


def test_a_wrong_support_bound_is_refused() -> None:
    model = dp_sgd()
    setup = escort_setups(model, SIGMA, (3,))[0]
    epsilon = 9.5
    honest = setup.log_support(epsilon)
    tally = escort_sample(
        model, setup, (epsilon,), honest, n_samples=4_000, seed=0, stream=1, config=QUIET
    )
    largest_fraction = tally.tally(0, Direction.REMOVE).sum_x[0]  # sanity: mass was seen
    assert largest_fraction > 0
    with pytest.raises(SupportBoundError, match="support bound"):
        escort_sample(
            model,
            setup,
            (epsilon,),
            honest - math.log(4.0),
            n_samples=4_000,
            seed=0,
            stream=1,
            config=QUIET,
        )


def test_escort_chunks_are_executor_and_pickle_independent() -> None:
    model = dp_sgd()
    setup = escort_setups(model, SIGMA, (2,))[0]
    args = {"n_samples": 2_000, "seed": 4, "stream": 1}
    chunked = EngineConfig(progress=False, chunk_size=1_000)
    local = escort_sample(model, setup, (8.0,), setup.log_support(8.0), config=chunked, **args)
    pool = attrs.evolve(chunked, executor=ProcessExecutor(2))
    other = escort_sample(model, setup, (8.0,), setup.log_support(8.0), config=pool, **args)
    a, b = local.tally(0, Direction.REMOVE), other.tally(0, Direction.REMOVE)
    assert a.count == b.count == 2_000
    assert np.array_equal(a.sum_x, b.sum_x)


def test_chunk_task_describes_its_escort() -> None:
    model = dp_sgd()
    task = EscortChunkTask(model, (SIGMA,), 10, 0, 1, (1.0,), (Direction.REMOVE,), 5, None)
    described = task.describe()
    assert described["proposal"] == "escort" and described["order"] == 2


@pytest.mark.parametrize(
    ("n", "b", "p", "warm", "order", "bands"),
    [(23, 3, 0.2, True, 2, 2), (40, 4, 0.3, False, 3, 3), (30, 2, 1.0, True, 2, 2)],
)
def test_compiled_backward_walk_draws_the_same_tuples(
    n: int, b: int, p: float, warm: bool, order: int, bands: int
) -> None:
    if not NUMBA_AVAILABLE:
        pytest.skip("numba is not available")
    chain = ParticipationChain(n_steps=n, min_sep=b, probability=p, warm_start=warm)
    c = np.linspace(1.0, 0.5, bands)
    c /= np.linalg.norm(c)
    draws = [
        sample_escort_counts(chain, c, 0.8, order, 400, np.random.default_rng(3), kernels=k)
        for k in ("array", "numba")
    ]
    assert np.array_equal(draws[0].counts, draws[1].counts)
    assert draws[0].log_z == draws[1].log_z
    assert draws[0].counts.sum() > 0


def test_escort_outputs_apply_the_dense_strategy() -> None:
    rng = np.random.default_rng(0)
    counts = (rng.random((30, 12)) < 0.2).astype(np.int8) * rng.integers(1, 3, (30, 12))
    c = (0.6, 0.5, 0.4, 0.3, 0.2)
    y = escort_outputs(counts.astype(np.int8), np.asarray(c), 0.5, np.random.default_rng(1))
    noise = 0.5 * np.random.default_rng(1).standard_normal(counts.shape)
    dense = counts @ oracles.strategy_matrix(c, 12).T  # rows cut at step n
    assert np.allclose(y - noise, dense, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_escort_agrees_with_plain_sampling_at_the_production_setting() -> None:
    """Warm 256-min-sep, 256-BandMF, n = 7200 (paper §7.4) at an epsilon plain sampling
    resolves: the two estimates of delta_remove agree within 4 combined standard errors."""
    n, size, bands = 7200, 14_745_600, 256
    scheme = BMinSep(n_steps=n, rate=1793 / size, min_sep=bands)
    model = scheme.loss_model(BandedToeplitz.optimal(n, bands))
    epsilon, sigma = 2.129, 0.47
    escort, escort_se, setup = EscortProposal().estimate_delta(
        model, sigma, epsilon, samples=6_000, seed=5, config=QUIET
    )
    tally = sample(
        model,
        [sigma],
        n_samples=20_000,
        seed=6,
        checks=(epsilon,),
        directions=(Direction.REMOVE,),
        histograms=False,
        config=QUIET,
    ).tally(0, Direction.REMOVE)
    plain = tally.delta(0)
    plain_se = tally.std_error(0)
    assert setup.order == 2
    assert abs(escort - plain) <= 4 * math.hypot(escort_se, plain_se)
    assert escort_se < plain_se  # the escort is the better estimator here


@pytest.mark.parametrize("delta", [1e-6, 1e-8, 1e-10])
def test_deterministic_add_route_is_sound_and_draws_no_add_samples(delta: float) -> None:
    """DP-SGD sized by precision: the add direction is certified by docs/math.md §10 (no add
    draws), the verification uses far fewer samples than offered, and over seeds the
    certified epsilon is never below dp_accounting's exact one (both directions)."""
    exact = exact_pld().get_epsilon_for_delta(delta)
    model = dp_sgd()
    for seed in range(4):
        cert = certify_epsilon(
            model,
            SIGMA,
            delta,
            samples=10**9,
            pilot_samples=1_000,
            seed=seed,
            config=QUIET,
            proposal=EscortProposal(precision=0.05),
        )
        assert cert.proposal is not None and cert.proposal.add in ("deterministic", "exact zero")
        assert cert.samples < 10**6
        assert cert.certified >= exact
        assert cert.certified <= exact * 1.1


def test_locate_counts_a_support_bound_above_one_as_failing() -> None:
    """At sigma = 0.05 every order's ``ln s_lam`` is in the thousands (e^ln s overflows a
    float): the pilot must treat such sigma as too small, not crash (``minsep train`` at
    epsilon 8 once died there with OverflowError)."""
    from minsep.framework.errors import CalibrationError
    from minsep.framework.montecarlo import locate_sigma

    model, proposal = dp_sgd(), EscortProposal()
    assert max(s.log_support(1.0) for s in proposal.setups(model, 0.05)) > 800.0
    with pytest.raises(CalibrationError, match="even sigma"):
        locate_sigma(
            model, 1.0, 1e-5, samples=2_000, seed=0, config=QUIET, low=0.02, high=0.05,
            proposal=proposal,
        )  # fmt: skip
    centre = locate_sigma(
        model, 1.0, 1e-5, samples=2_000, seed=0, config=QUIET, low=0.02, high=8.0,
        proposal=proposal,
    )  # fmt: skip
    assert 0.05 < centre < 8.0


# -- an escort calibration's add direction on plain draws of its own count ---------------


def quadrature_add_delta(sigma: float, epsilon: float) -> float:
    """``H(Q||P)`` at ``e^eps`` for :func:`band_model` (warm) at ``sigma``, by quadrature."""
    return quadrature_both(sigma, epsilon)[1]


class _Certain:
    """An escort whose support bound is below every delta: the remove direction passes every
    entry without a draw, so the add direction alone decides the walk."""

    order = 2

    def log_support(self, epsilon: float) -> float:
        return -50.0


ADD_SWEEP = (1.5, 1.3, 1.2, 1.1, 1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6)


def add_only_calibration(monkeypatch: pytest.MonkeyPatch, seed: int, start: int) -> object:
    from minsep.accountants import escort_sweep

    class Vacuous:  # the §10 bound settles nothing: plain add draws decide every entry
        def __init__(self, model: object, sigma: float) -> None:
            pass

        def delta(self, eps: float) -> float:
            return 1.0

    monkeypatch.setattr(escort_sweep, "add_bound", Vacuous)
    monkeypatch.setattr(escort_sweep.SweepEscorts, "setup", lambda self, i, eps: _Certain())
    return calibrate_sweep(
        band_model(True),
        ADD_SWEEP,
        0.5,
        0.05,
        samples=100,  # the escort's (unused: its bound certifies); the add draws are their own
        seed=seed,
        config=QUIET,
        proposal=EscortProposal(add_samples=20_000),
        start=start,
    )


@pytest.mark.parametrize(("seed", "start"), [(0, 0), (1, 3), (2, 6), (3, 9)])
def test_plain_add_draws_never_release_a_sigma_below_the_exact_one(
    monkeypatch: pytest.MonkeyPatch, seed: int, start: int
) -> None:
    """docs/rdp-escort.md §8 (routes): the add direction verified on ``add_samples`` plain
    draws of its own, drawn a few entries at a time (AddDraws), from the top and from inside
    the sweep (two walks): the released sigma's exact add delta (quadrature) is at most delta,
    and the walk does stop (the exact answer lies inside the sweep: ~0.9)."""
    result = add_only_calibration(monkeypatch, seed, start)
    assert result.proposal is not None and result.proposal.add == "plain"
    assert quadrature_add_delta(result.sigma, 0.5) <= 0.05
    assert result.index < len(ADD_SWEEP) - 1
    assert quadrature_add_delta(ADD_SWEEP[-1], 0.5) > 0.05


def test_the_add_only_calibration_test_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the add draws ignored (every entry's delta read as 0) the same walk releases the
    sweep's last sigma, whose exact add delta is above delta: the test above discriminates."""
    from minsep.accountants import escort_sweep

    monkeypatch.setattr(escort_sweep.AddDraws, "delta", lambda self, index: 0.0)
    result = add_only_calibration(monkeypatch, 0, 0)
    assert result.sigma == ADD_SWEEP[-1]
    assert quadrature_add_delta(result.sigma, 0.5) > 0.05


def test_add_draws_in_batches_equal_the_shared_draws_of_the_whole_sweep() -> None:
    """Drawing the add direction a few entries at a time on the same seed and stream gives
    each entry the delta the whole sweep's shared draws give it (the same transcripts)."""
    from minsep.accountants.escort_sweep import AddDraws
    from minsep.framework.montecarlo.plain import sweep_tally

    model, eps = band_model(True), 0.5
    shared = sweep_tally(
        model, ADD_SWEEP, eps, samples=5_000, seed=4, stream=1, config=QUIET,
        description="shared", directions=(Direction.ADD,),
    )  # fmt: skip
    draws = AddDraws(model, ADD_SWEEP, eps, lambda j: False, 5_000, 4, 1, QUIET)
    for index in (5, 0, 10, 3, 6):
        assert draws.delta(index) == shared.delta(index, 0)


def test_the_add_bound_is_computed_at_walked_entries_only_and_its_label_passes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§10 is computed at the entries the walk checks the add direction at (every second
    remove pass and the entry it would release, docs/math.md §7, deferred add checks); the
    route's label ("deterministic": §10 settles the smallest sigma) passes nothing by itself,
    so with a bound that is (artificially) vacuous at 1.6 alone, where a check falls, the walk
    fails there instead of passing it; 3.0 is covered by the certificate at 2.2 (the true
    delta_add is non-increasing in sigma) and never asked."""
    from minsep.accountants import escort_sweep

    real, asked = escort_sweep.add_bound, []

    class Holed:  # the true bound, vacuous at sigma 1.6 only
        def __init__(self, model: BMinSepLossModel, sigma: float) -> None:
            self.bound, self.sigma = real(model, sigma), sigma
            asked.append(sigma)

        def delta(self, eps: float) -> float:
            return 1.0 if self.sigma == 1.6 else self.bound.delta(eps)

    monkeypatch.setattr(escort_sweep, "add_bound", Holed)
    sweep = (3.0, 2.2, 1.8, 1.6, 1.5)
    result = calibrate_sweep(
        dp_sgd(), sweep, 2.0, 1e-8, samples=20_000, seed=0, config=QUIET,
        proposal=EscortProposal(precision=0.05),
    )  # fmt: skip
    assert result.proposal is not None and result.proposal.add == "deterministic"
    assert result.index == 2 and result.sigma == 1.8  # 1.6 fails on its own §10 check
    assert 3.0 not in asked and set(asked) == {1.5, 2.2, 1.6, 1.8}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_escort_calibration_with_plain_add_draws_is_sound_end_to_end(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accountant's escort calibration with the add direction on plain draws of its own
    (``add_samples``, as the route sets it) below ln(1/pi(empty)) ~ 1.1, where §10 does not
    settle it: the released sigma's exact delta in both directions (quadrature) is at most
    delta (the exact sigma is ~1.22, the remove direction binding). The sweep is kept four
    entries below the centre, so that it reaches the sigmas where §10 does not settle."""
    from minsep.accountants import monte_carlo_sweep
    from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings

    monkeypatch.setattr(monte_carlo_sweep, "END_BELOW_CENTRE", 4)

    scheme = BMinSep(n_steps=BANDS_N, rate=0.25, min_sep=B, warm_start=True)
    strategy = BandedToeplitz(coefficients=C)
    accountant = MonteCarloAccountant(
        samples=20_000, proposal="escort", precision=0.2, add_samples=20_000, seed=seed,
        run=RunSettings(progress=False),
    )  # fmt: skip
    result = accountant.calibrate(scheme, strategy, 0.5, 0.05)
    assert result.monte_carlo is not None
    assert result.monte_carlo.proposal is not None
    assert result.monte_carlo.proposal["add"] == "plain"
    sigma = float(result.sigma)
    assert max(quadrature_both(sigma, 0.5)) <= 0.05
    assert sigma < 1.6  # it walked to near the exact sigma, not a guard


@functools.cache
def quadrature_both(sigma: float, epsilon: float) -> tuple[float, float]:
    """``(H(P||Q), H(Q||P))`` at ``e^eps`` for :func:`band_model` (warm) at ``sigma``."""
    scheme = BMinSep(n_steps=BANDS_N, rate=0.25, min_sep=B, warm_start=True)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / math.sqrt(2 * math.pi)
    grid = np.array(list(itertools.product(range(nodes.size), repeat=BANDS_N)))
    ys, w = sigma * nodes[grid], np.prod(weights[grid], axis=1)
    matrix = oracles.strategy_matrix(C, BANDS_N)
    u = np.zeros(len(ys))
    for x, prob in oracles.b_min_sep_law(BANDS_N, scheme.probability, B, True).items():
        mean = matrix @ np.asarray(x, dtype=float)
        u += prob * np.exp((ys @ mean - 0.5 * mean @ mean) / sigma**2)
    e = math.exp(epsilon)
    return float(w @ np.maximum(u - e, 0.0)), float(w @ np.maximum(1.0 - e * u, 0.0))
