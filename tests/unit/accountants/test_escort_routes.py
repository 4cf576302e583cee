"""The escort's order over a calibration sweep, and ``proposal="auto"`` falling back to plain.

docs/rdp-escort.md §8. The calibration's order minimises the largest support bound over the
sweep (the bound at the smallest sigma: Z_lam is non-increasing in sigma); where the escort
cannot run, ``auto`` answers with plain sampling and says so instead of raising.
"""

from __future__ import annotations

import math

import attrs
import pytest
from dp_accounting.pld import privacy_loss_distribution

from minsep.accountants import escort_setup
from minsep.accountants.escort_engine import (
    DEFAULT_ORDERS,
    EscortProposal,
    EscortSetup,
    choose_setup,
    escort_setups,
)
from minsep.accountants.escort_setup import LOCATE_RATIO, locate_setup
from minsep.accountants.escort_sweep import ADD_EVERY, DeferredAdd, escort_sweep
from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import EngineConfig, calibrate_sweep
from minsep.framework.montecarlo.proposals import SweepQuestion
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.b_min_sep.loss import BMinSepLossModel
from minsep.strategies import BandedToeplitz

QUIET = EngineConfig(progress=False)
# The issue's case: DP-SGD n = 500, q = 0.005, eps = 4.5, sweep 0.75 / 0.65 / 0.55.
N, P, EPSILON, SWEEP = 500, 0.005, 4.5, (0.75, 0.65, 0.55)


def dp_sgd() -> BMinSepLossModel:
    return BMinSepLossModel(
        coefficients=(1.0,), n_steps=N, min_sep=1, probability=P, warm_start=False
    )


def largest_bounds() -> dict[int, float]:
    """ln of the largest support bound over the sweep, per order affordable everywhere."""
    model, out = dp_sgd(), {}
    for lam in DEFAULT_ORDERS:
        try:
            out[lam] = max(escort_setups(model, s, (lam,))[0].log_support(EPSILON) for s in SWEEP)
        except ConfigurationError:
            continue
    return out


def test_sweep_order_minimises_the_largest_support_bound() -> None:
    worst = largest_bounds()
    order = EscortProposal().sweep_order(dp_sgd(), SWEEP, EPSILON)
    assert worst[order] == min(worst.values())
    assert order == 3 and worst[3] < -8.0
    # the former choice (best at the middle sigma) has a bound above 1 at the smallest sigma
    middle = choose_setup(EscortProposal().setups(dp_sgd(), SWEEP[1]), EPSILON).order
    assert middle != order and worst[middle] > 0.0


def test_escort_calibration_certifies_on_the_issue_sweep() -> None:
    delta = 1e-5
    result = calibrate_sweep(
        dp_sgd(),
        SWEEP,
        EPSILON,
        delta,
        samples=4_000,
        seed=11,
        config=QUIET,
        proposal=EscortProposal(),
    )
    assert result.proposal is not None and result.proposal.order == 3
    exact = (
        privacy_loss_distribution.from_gaussian_mechanism(
            result.sigma, sampling_prob=P, value_discretization_interval=1e-4
        )
        .self_compose(N)
        .get_delta_for_epsilon(EPSILON)
    )
    assert exact <= delta


def wide_min_sep() -> tuple[BMinSep, BandedToeplitz]:
    """b = 6000: C(b + 1, 2) = 18003000 > 2^24 multiset states (docs/rdp-escort.md §3.1), so no
    escort order fits the default budget (p < 1: the chain, not balls-in-bins, §10.9)."""
    scheme = BMinSep.from_rate(8, 1 / 12000, min_sep=6000)
    return scheme, BandedToeplitz.optimal(8, 2)


def test_unavailable_names_the_state_budget() -> None:
    scheme, strategy = wide_min_sep()
    reason = EscortProposal().unavailable(scheme.loss_model(strategy))
    assert reason is not None and "max_states" in reason
    assert EscortProposal().unavailable(dp_sgd()) is None


def test_auto_does_not_choose_an_escort_that_cannot_run() -> None:
    scheme, strategy = wide_min_sep()
    accountant = MonteCarloAccountant(
        samples=2_000, pilot_samples=1_000, seed=3, run=RunSettings(progress=False)
    )
    for ask in (
        lambda: accountant.calibrate(scheme, strategy, 2.0, 1e-6),
        lambda: accountant.epsilon(scheme, strategy, 1.0, 1e-6),
    ):
        with pytest.raises(ConfigurationError, match="samples") as info:
            ask()
        assert "escort_setups" not in str(info.value)  # the plain refusal, not the escort's


def test_auto_calibration_falls_back_when_the_sweep_defeats_the_escort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_order_helps(*args: object, **kwargs: object) -> None:
        raise ConfigurationError("no affordable order helps (test)")

    monkeypatch.setattr(EscortProposal, "sweep_plan", no_order_helps)
    accountant = MonteCarloAccountant(
        samples=2_000, pilot_samples=500, seed=3, run=RunSettings(progress=False)
    )
    with pytest.raises(ConfigurationError, match=r"chose the escort .* cannot run here") as info:
        accountant.calibrate(*dp_sgd_pair(), 4.5, 1e-6)
    assert "no affordable order helps (test)" in str(info.value)


def dp_sgd_pair() -> tuple[BMinSep, BandedToeplitz]:
    return BMinSep.from_rate(N, P, min_sep=1), BandedToeplitz.optimal(N, 1)


def test_sweep_order_breaks_ties_by_the_smaller_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal support bounds need equal samples: the smaller order (fewer states) is chosen,
    whatever order the proposal lists its orders in."""
    monkeypatch.setattr(EscortSetup, "log_support", lambda self, epsilon: -5.0)
    for orders in ((8, 3, 5), (5, 8, 3)):
        assert EscortProposal(orders=orders).sweep_order(dp_sgd(), SWEEP, EPSILON) == 3


def test_sweep_order_is_compared_at_every_entry() -> None:
    """The chosen order's largest bound over the sweep is the smallest of every order's (by
    brute force over all entries, not only the smallest sigma), for sweeps in both regimes."""
    for sweep, epsilon in ((SWEEP, EPSILON), ((1.2, 0.9, 0.7), 2.0), ((0.8, 0.75), 6.0)):
        model, worst = dp_sgd(), {}
        for lam in DEFAULT_ORDERS:
            bounds = [escort_setups(model, s, (lam,))[0].log_support(epsilon) for s in sweep]
            worst[lam] = max(bounds)
        order = EscortProposal().sweep_order(model, sweep, epsilon)
        assert worst[order] == min(worst.values()), (sweep, worst)


def bmin_sep() -> BMinSepLossModel:
    return BMinSepLossModel(
        coefficients=(1.0, 0.6, 0.3), n_steps=40, min_sep=4, probability=0.1, warm_start=False
    )


@pytest.mark.parametrize(
    ("model", "sweep", "epsilon"),
    [(dp_sgd(), SWEEP, EPSILON), (bmin_sep(), (1.6, 1.3, 1.1, 0.9, 0.8), 1.5)],
)
def test_sweep_scale_is_the_largest_bound_over_every_entry(
    model: BMinSepLossModel, sweep: tuple[float, ...], epsilon: float
) -> None:
    """s* is taken at the smallest runnable sigma without computing the other entries (Z_lam
    is non-increasing in sigma): brute force over every entry, each entry's lazy escort is the
    eager one, and none has a bound above s*."""
    escorts = EscortProposal().sweep_plan(model, sweep, epsilon)
    eager = [escort_setups(model, s, (escorts.order,))[0] for s in escorts.sigmas]
    assert escorts.log_scale == max(s.log_support(epsilon) for s in eager)
    for i, setup in enumerate(eager):
        assert escorts.setup(i, epsilon) == setup
    assert escorts.setup(len(escorts.sigmas), epsilon) is None


def test_an_entry_above_the_scale_fails_without_sampling() -> None:
    escorts = EscortProposal().sweep_plan(bmin_sep(), (1.6, 1.3, 1.1), 1.5)
    lowered = attrs.evolve(escorts, log_scale=escorts.log_scale - 1e-6)  # as if rounding moved it
    assert lowered.setup(2, 1.5) is None and lowered.setup(0, 1.5) is not None
    sweep = escort_sweep(
        bmin_sep(), SweepQuestion((1.6, 1.3, 1.1), 1.5, 1e-2, 2_000, 1, QUIET, 1), lowered, True
    )
    observed, passed = sweep.check(2)
    assert not passed and math.isnan(observed)


def test_the_locating_pilot_prefers_a_cheap_order_only_while_it_is_tight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """b = 8: orders up to 5 have at most C(12, 5) = 792 multiset states, order 6 has
    C(13, 6) = 1716; with LOCATE_STATES = 1000 in between, the pilot's escort is the best cheap
    order while its bound is within LOCATE_RATIO of the target, else the best of every order
    (a planning rule: it only centres the sweep)."""
    monkeypatch.setattr(escort_setup, "LOCATE_STATES", 1000)
    model = BMinSepLossModel(
        coefficients=(1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.01),
        n_steps=24,
        min_sep=8,
        probability=0.05,
        warm_start=False,
    )
    orders, sigma, eps = (2, 3, 4, 5, 6), 1.5, 2.0
    every = escort_setups(model, sigma, orders)
    best = choose_setup(every, eps)
    cheap = choose_setup([s for s in every if s.order <= 5], eps)
    assert best.order == 6 and cheap.order < 6  # the case is one where the rule matters
    loose = math.exp(cheap.log_support(eps)) / LOCATE_RATIO
    assert locate_setup(model, sigma, eps, loose * 1.01, orders, 1 << 24) == cheap
    assert locate_setup(model, sigma, eps, loose * 0.99, orders, 1 << 24) == best
    assert locate_setup(model, sigma, eps, loose, (6,), 1 << 24) == best  # no cheap order


def test_an_entry_whose_remove_direction_fails_skips_the_add_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The §10.1 block bound is an entry's costliest check: where the remove direction already
    failed the entry fails without it; where it passed, the add bound still decides."""
    model, sweep = bmin_sep(), (1.6, 1.3, 1.1)
    escorts = EscortProposal().sweep_plan(model, sweep, 1.5)
    plan = escort_sweep(model, SweepQuestion(sweep, 1.5, 1e-2, 2_000, 1, QUIET, 1), escorts, False)
    asked: list[int] = []

    def add_fails(self: object, index: int) -> float:
        asked.append(index)
        return 1.0

    monkeypatch.setattr(type(plan), "_bounded_add_delta", add_fails)
    unsettled = attrs.evolve(plan, settled=(False,) * 3)
    assert escorts.setup(2, 1.5) is not None
    assert escorts.setup(2, 1.5).log_support(1.5) > math.log(1e-2)  # entry 2 samples
    observed, passed = attrs.evolve(unsettled, x_b=-1.0).check(2)  # the remove check fails
    assert not passed and observed < 1.0 and asked == []
    due = DeferredAdd(passes=ADD_EVERY - 1)  # the add check falls at this entry
    observed, passed = attrs.evolve(unsettled, x_b=1.0, deferred=due).check(2)  # add decides
    assert not passed and observed == 1.0 and asked == [2]


def test_an_entry_with_many_escort_draws_checks_its_add_bound_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From ADD_FIRST_SAMPLES escort draws per entry, the add bound (seconds) runs first: an
    entry it fails fails without a single escort draw; one it passes still draws."""
    from minsep.accountants import escort_sweep as module

    model, sweep = bmin_sep(), (1.6, 1.3, 1.1)
    escorts = EscortProposal().sweep_plan(model, sweep, 1.5)
    plan = escort_sweep(model, SweepQuestion(sweep, 1.5, 1e-2, 2_000, 1, QUIET, 1), escorts, False)
    unsettled = attrs.evolve(plan, settled=(False,) * 3)
    monkeypatch.setattr(module, "ADD_FIRST_SAMPLES", 1_000)
    drawn: list[int] = []
    real_sampler = module.EscortSampler

    def counting(*args: object, **kwargs: object) -> object:
        drawn.append(1)
        return real_sampler(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "EscortSampler", counting)
    monkeypatch.setattr(type(plan), "_bounded_add_delta", lambda self, index: 1.0)
    observed, passed = attrs.evolve(unsettled, x_b=1.0, deferred=DeferredAdd()).check(2)
    assert not passed and observed == 1.0 and drawn == []
    monkeypatch.setattr(type(plan), "_bounded_add_delta", lambda self, index: 0.0)
    observed, passed = attrs.evolve(unsettled, x_b=1.0, deferred=DeferredAdd()).check(2)
    assert passed and drawn == [1]
    covered = DeferredAdd(certified=2)  # a certificate covers the entry: no bound, escort draws
    observed, passed = attrs.evolve(unsettled, x_b=1.0, deferred=covered).check(2)
    assert passed and drawn == [1, 1]
    monkeypatch.setattr(module, "ADD_FIRST_SAMPLES", 10**9)  # few draws: escort first, as before
    monkeypatch.setattr(type(plan), "_bounded_add_delta", lambda self, index: 1.0)
    due = DeferredAdd(passes=ADD_EVERY - 1)  # the add check falls here, after the draws
    observed, passed = attrs.evolve(unsettled, x_b=1.0, deferred=due).check(2)
    assert not passed and drawn == [1, 1, 1]
