"""Route choice: plain or escort, and how many samples, from the question (accountants/routes.py,
docs/rdp-escort.md §8)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import attrs
import pytest

from minsep.accountants import escort_add, escort_engine, escort_sampling, route_add, routes
from minsep.accountants.escort_engine import escort_setups, measure_escort_seconds
from minsep.accountants.escort_law import ChainEscortLaw
from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.accountants.monte_carlo_sweep import START_ABOVE_CENTRE
from minsep.accountants.routes import ESCORT_MARGIN, escort_samples
from minsep.framework.cli.main import main
from minsep.framework.montecarlo import RunPlan
from minsep.framework.montecarlo.bounds import min_samples
from minsep.framework.montecarlo.precision import samples_for_precision
from minsep.schemes.b_min_sep import BMinSep
from minsep.strategies import BandedToeplitz

# One expected participation (ln(1/pi(empty)) ~ 1): the add direction is exactly 0 at the
# certified epsilon (~2.5), where the escort's support bound is a few tens of delta.
N, RATE, SIGMA, DELTA = 64, 1 / 64, 0.8, 1e-8


def pair() -> tuple[BMinSep, BandedToeplitz]:
    return BMinSep.from_rate(N, RATE, min_sep=4), BandedToeplitz.optimal(N, 2)


def accountant(**options: object) -> MonteCarloAccountant:
    return MonteCarloAccountant(seed=5, **options, run=RunSettings(progress=False))  # type: ignore[arg-type]


def test_escort_samples_follow_the_normalised_problem() -> None:
    delta = 1e-8
    assert escort_samples(delta, math.log(delta / 2), 0.05, 8) == 100  # s <= delta: RDP alone
    s = 50 * delta
    # an epsilon question (8 candidates): half of the budget delta^r goes to the margin
    expected = min_samples(delta**1.025 / s, delta / s, candidates=8)
    assert escort_samples(delta, math.log(s), 0.05, 8) == expected
    # a calibration (one claim): the whole budget, times the margin for the pilot's noise
    once = min_samples(delta**1.05 / s, delta / s, candidates=1)
    assert escort_samples(delta, math.log(s), 0.05, 1) == int(ESCORT_MARGIN * once)
    # a looser support bound needs more samples, and never more than plain sampling's order
    assert escort_samples(delta, math.log(500 * delta), 0.05, 8) > escort_samples(
        delta, math.log(s), 0.05, 8
    )


def test_the_escort_rate_probe_measures_a_pass_and_a_draw() -> None:
    scheme, strategy = pair()
    model = scheme.loss_model(strategy)
    fixed, per_draw = measure_escort_seconds(model, escort_setups(model, SIGMA, (2,))[0])
    assert 0 < fixed < math.inf and 0 < per_draw < math.inf


def test_auto_takes_the_escort_where_it_is_cheaper() -> None:
    scheme, strategy = pair()
    numbers = {"sigma": SIGMA, "delta": DELTA}
    chosen, route = accountant().route(scheme, strategy, "epsilon", numbers, 0.05)
    plain = samples_for_precision(DELTA, 0.05, candidates=8)
    assert route.proposal == "escort" and chosen.proposal == "escort"
    assert chosen.samples == route.samples < plain / 100
    assert "support bound" in route.reason


class Loose:  # a §10 (and §10.1) bound that never suffices
    def delta(self, epsilon: float) -> float:
        return 1.0

    def epsilon(self, delta: float) -> float:
        return math.inf


def loosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(route_add, "chosen_add_bound", lambda *args: ("deterministic", Loose()))
    monkeypatch.setattr(route_add, "add_bound", lambda *args: Loose())


def rates(draw: float, evaluate: float) -> Callable[[], RunPlan]:
    return lambda: RunPlan("calibrate", (), 1000, 1, 1, draw_seconds=draw, eval_seconds=evaluate)


def test_plain_is_kept_for_an_epsilon_question_whose_add_direction_needs_sampling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loosen(monkeypatch)
    scheme, strategy = pair()
    numbers = {"sigma": 3.0, "delta": DELTA}  # epsilon ~0.3 < ln(1/pi(empty)) ~ 1
    _, route = accountant().route(scheme, strategy, "epsilon", numbers, 0.05)
    assert route.proposal == "plain" and "add direction needs plain sampling" in route.reason
    assert route.add_samples is None


@pytest.mark.parametrize("plain_cost", [1e-6, 1e9])
def test_a_calibration_takes_the_escort_with_plain_add_draws_where_cheaper(
    monkeypatch: pytest.MonkeyPatch, plain_cost: float
) -> None:
    """The remove direction by the escort and the add direction by plain draws (plain
    sampling's count for one claim, timed at the plain engine's rates) where that estimate is
    below plain sampling's both ways, else plain."""
    loosen(monkeypatch)
    scheme, strategy = pair()
    model = scheme.loss_model(strategy)
    numbers = {"epsilon": 0.5, "delta": DELTA}  # below ln(1/pi(empty)) ~ 1
    asker = attrs.evolve(accountant(), precision=0.05)
    route = routes.choose_route(
        asker, model, "calibrate", numbers, 0.05, None, lambda: plain_cost, rates(1e-9, 1e-9)
    )
    if plain_cost > 1:
        assert route.proposal == "escort" and "add direction by plain draws" in route.reason
        assert route.add_samples == samples_for_precision(DELTA, 0.05)
        assert route.seconds is not None and route.seconds < plain_cost
        chosen = attrs.evolve(asker, proposal="escort", add_samples=route.add_samples)
        proposal, _ = chosen._proposal(model, None, DELTA, 0.5)
        assert proposal is not None and proposal.add_samples == route.add_samples
    else:
        assert route.proposal == "plain" and route.add_samples is None
    limited = routes.choose_route(  # plain add draws are not cut to fit a time limit
        asker, model, "calibrate", numbers, 0.05, 1e-6, lambda: plain_cost, rates(1e-9, 1e-9)
    )
    assert limited.proposal == "plain" and limited.add_samples is None
    untimed = routes.choose_route(
        asker, model, "calibrate", numbers, 0.05, None, lambda: plain_cost, lambda: None
    )
    assert untimed.proposal == "plain"  # plain add draws not timed: the escort is not preferred


def test_the_deterministic_add_bound_spares_the_add_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/math.md §10: below ln(1/pi(empty)) the add direction needs no sampling where the
    bound's delta at epsilon is at most delta, or (epsilon questions, with a slack) where its
    epsilon at delta is within the slack of the answer's. The sampled block bound (§10.1, its
    entry-minimum variant §10.1.1: 2 bands, min-sep 4) then spares the case §10 alone cannot."""
    scheme, strategy = pair()
    model = scheme.loss_model(strategy)
    bound = escort_engine.add_bound(model, 1.0).epsilon(DELTA)  # ~ 0.74
    assert not routes.add_needs_sampling(model, bound / 1.05, 1.0, DELTA, 0.01)  # block bound
    with monkeypatch.context() as patched:  # §10 alone
        patched.setattr(ChainEscortLaw, "sampled_add_bound", lambda *args, **kwargs: None)
        patched.setattr(escort_add, "_CHOSEN", {})  # the memo holds the unpatched bounds
        assert routes.add_needs_sampling(model, 0.5)  # sigma unknown: no bound to use
        assert routes.add_needs_sampling(model, 0.5, 1.0, DELTA)  # delta_add(0.5) <~ 6e-4
        assert not routes.add_needs_sampling(model, 0.5, 2.0, DELTA)  # <= 4e-13 at sigma 2
        assert not routes.add_needs_sampling(model, bound / 1.05, 1.0, DELTA, 0.1)
        assert routes.add_needs_sampling(model, bound / 1.05, 1.0, DELTA, 0.01)
        assert not routes.add_needs_sampling(model, 1.1, 1.0, DELTA)  # 0 above ln(1/pi)


def test_a_fixed_proposal_is_respected() -> None:
    scheme, strategy = pair()
    numbers = {"sigma": SIGMA, "delta": DELTA}
    _, route = accountant(proposal="plain").route(scheme, strategy, "epsilon", numbers, 0.05)
    assert route.proposal == "plain"


def test_epsilon_runs_the_route_it_chose(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "2", "--steps",
            str(N), "--rate", "1/64", "--sigma", str(SIGMA), "--delta", str(DELTA), "--seed",
            "5", "--precision", "0.1", "--no-cache", "--json"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["monte_carlo"]["proposal"]["method"] == "escort"
    assert "by the escort route" in captured.err
    assert "epsilon (escort, order" in captured.err  # the plan used the escort's rates
    assert result["certified_epsilon"] >= result["epsilon"]
    # the route chose the escort, the caller did not ask for it
    assert any(n.startswith("proposal: escort (route): escort") for n in result["notes"])
    assert not any("escort (requested)" in n for n in result["notes"])


def test_the_calibration_estimate_counts_every_part_the_run_pays() -> None:
    scheme, strategy = pair()
    model = scheme.loss_model(strategy)
    asker = accountant()
    chunk = asker.run.chunk(model)
    width = max(1, escort_sampling.BATCH_BYTES // (chunk * N))
    m, pilot = 5 * width * chunk + 1, 7  # an entry: six batches (the last one draw); pilot: one
    costs = routes.EscortCosts(3, fixed=2.0, per_draw=1e-3, locate=50.0, plan=9.0, add=4.0)
    stages = routes._escort_stages("calibrate", m, pilot)
    assert stages == [pilot] * (routes.LOCATE_STEPS + 1) + [m] * routes.WALKED_ENTRIES
    assert routes._batches(asker, model, m) == 6 and routes._batches(asker, model, pilot) == 1
    steps, entries = routes.LOCATE_STEPS + 1, routes.WALKED_ENTRIES
    expected = (
        steps * (2.0 + pilot * 1e-3)  # each locating step: one batch and its draws
        + entries * (6 * 2.0 + m * 1e-3)  # each walked entry: its batches and draws
        + (50.0 - steps * routes.ROUTE_PILOT * 1e-3)  # the locate's passes, less the route's draws
        + 9.0  # the sweep plan's passes
        + entries * (2.0 + 4.0)  # per entry: its ln Z pass and the add direction's bounds
    )
    seconds = routes._escort_seconds(asker, model, "calibrate", m, pilot, costs)
    assert seconds == pytest.approx(expected, rel=1e-12)
    # every part moves the estimate: the add bounds are paid once per walked entry
    more = attrs.evolve(costs, add=5.0)
    grown = routes._escort_seconds(asker, model, "calibrate", m, pilot, more) - seconds
    assert grown == pytest.approx(entries * 1.0)


def test_the_plan_line_of_a_calibration_reuses_the_routes_costs() -> None:
    scheme, strategy = pair()
    model = scheme.loss_model(strategy)
    costs = routes.EscortCosts(5, fixed=1.0, per_draw=1e-4, locate=3.0, plan=2.0, add=1.0)
    routes._MEASURED.clear()
    routes._MEASURED[id(model)] = (model, 2.0, costs)
    assert routes.measured_costs(model, 2.0) == costs
    assert routes.measured_costs(model, 2.5) is None  # another question's
    asker = accountant(samples=4000)
    proposal = escort_engine.EscortProposal(precision=0.05)
    text, seconds = routes.escort_plan(asker, model, proposal, "calibrate", 1.0, 2.0)
    pilot = min(asker._pilot(), routes.ESCORT_PILOT)
    assert seconds == routes._escort_seconds(asker, model, "calibrate", 4000, pilot, costs)
    assert "order 5" in text
    routes._MEASURED.clear()


def test_a_routed_calibration_is_centred_by_the_routes_own_pilot() -> None:
    """The route's locating pilot (stream 0 of seed + 1) centres the run's sweep, so the run
    does not repeat it; only for the question the route measured, and only when routed."""
    scheme, strategy = pair()
    numbers = {"epsilon": 2.5, "delta": DELTA}  # above ln(1/pi(empty)) ~ 1: add exactly 0
    chosen, route = accountant().route(scheme, strategy, "calibrate", numbers, 0.05)
    model = chosen._model(scheme, strategy)  # the shared model the route measured
    assert route.proposal == "escort" and chosen.routed is not None
    centre = routes.routed_centre(chosen, model, 2.5)
    assert centre is not None and f"at sigma {centre:.4g}" in route.reason
    assert routes.routed_centre(chosen, model, 2.4) is None  # another question
    assert routes.routed_centre(accountant(), model, 2.5) is None  # not routed
    moved = centre * 1.05  # a centre no pilot of the run would find: the run must take it
    kept = routes._MEASURED[id(model)]
    routes._MEASURED[id(model)] = (*kept[:2], attrs.evolve(kept[2], centre=moved))
    result = chosen.calibrate(scheme, strategy, 2.5, DELTA)
    assert result.candidates == chosen.calibration_sweep.escort_points(moved)
    assert not routes.routed_start(chosen, model, 2.5)  # the pilot's own centre: walk above
    grid = chosen.calibration_sweep
    assert grid.walk_start(at_centre=True) == grid.walk_start() + min(
        max(grid.sweep_size // 3, 1), START_ABOVE_CENTRE
    )
    assert result.candidates[grid.walk_start(at_centre=True)] == pytest.approx(moved)
    kept = routes._MEASURED[id(model)]
    routes._MEASURED[id(model)] = (*kept[:2], attrs.evolve(kept[2], bound_centre=True))
    assert routes.routed_start(chosen, model, 2.5)  # where the add bound binds: at the centre
    assert not routes.routed_start(accountant(), model, 2.5)  # not routed
    routes._MEASURED.clear()


def test_bound_sigma_brackets_where_the_add_bound_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``bound_sigma``: grows sigma until §10 settles epsilon, then bisects with the entry's
    bound (here a sharper one); the result settles it, and lies within the bisection's
    resolution above the sharper bound's threshold; None when §10 never settles below top."""
    from minsep.accountants import route_add

    class Bound:
        def __init__(self, scale: float, sigma: float) -> None:
            self.value = scale / sigma

        def epsilon(self, delta: float) -> float:
            return self.value

    monkeypatch.setattr(route_add, "add_bound", lambda model, s: Bound(4.0, s))
    monkeypatch.setattr(
        route_add, "chosen_add_bound", lambda model, s, d, seed, e: ("block", Bound(3.0, s))
    )
    found = route_add.bound_sigma(object(), (2.0, 1.0, 1e-6), 0, top=100.0)  # type: ignore[arg-type]
    assert found is not None and 3.0 / found <= 2.0  # settles
    first = 1.25**4  # §10 settles from 2 on: the first power of 1.25 above it
    assert found <= 1.5 * (first / 1.0) ** (1 / 2**route_add.BOUND_STEPS) * (1 + 1e-12)
    assert route_add.bound_sigma(object(), (2.0, 1.0, 1e-6), 0, top=1.9) is None  # type: ignore[arg-type]


class _ScaledBound:
    """An add bound whose epsilon at every delta is ``scale / sigma``."""

    def __init__(self, scale: float, sigma: float) -> None:
        self.value = scale / sigma

    def epsilon(self, delta: float) -> float:
        return self.value

    def delta(self, epsilon: float) -> float:
        return 1.0 if self.value > epsilon else 0.0


def _bounds(monkeypatch: pytest.MonkeyPatch, deterministic: float, sampled: float) -> None:
    """§10 settles epsilon 2 from ``deterministic / 2`` up, the sampled block bound from
    ``sampled / 2``; plain add draws are estimated over :data:`~.route_add.BLOCK_BOUND_AFTER`."""
    monkeypatch.setattr(route_add, "add_bound", lambda model, s: _ScaledBound(deterministic, s))
    monkeypatch.setattr(
        route_add,
        "chosen_add_bound",
        lambda model, s, d, seed, e: ("block", _ScaledBound(sampled, s)),
    )
    monkeypatch.setattr(route_add, "add_threshold", lambda model: math.inf)
    monkeypatch.setattr(
        route_add, "plain_add_seconds", lambda plan, m: 2 * route_add.BLOCK_BOUND_AFTER
    )


def test_bound_sigma_stays_within_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a ``limit``: the entry's bound settles at the result, which is at most the limit;
    None where that bound does not settle at the limit (however far §10 reaches)."""
    _bounds(monkeypatch, deterministic=8.0, sampled=2.3)  # §10 from 4, the block bound from 1.15
    found = route_add.bound_sigma(object(), (2.0, 1.0, 1e-6), 0, top=100.0, limit=1.2)  # type: ignore[arg-type]
    assert found is not None and 1.15 <= found <= 1.2
    assert route_add.bound_sigma(object(), (2.0, 1.0, 1e-6), 0, top=100.0, limit=1.1) is None  # type: ignore[arg-type]
    unlimited = route_add.bound_sigma(object(), (2.0, 1.0, 1e-6), 0, top=100.0)  # type: ignore[arg-type]
    assert unlimited is not None and unlimited >= 1.15


@pytest.mark.parametrize(
    ("sampled", "precision", "moved"),
    [
        (2.3, 0.2, True),  # the block bound settles from 1.15: within 1.2, the walk moves there
        (2.3, 0.1, False),  # beyond 1.1: the plain add draws, however long they take
        (3.4, 0.2, False),  # settles from 1.7 only (the answer the bound would force: 42 % up)
    ],
)
def test_a_calibration_moves_its_walk_only_within_the_precision(
    monkeypatch: pytest.MonkeyPatch, sampled: float, precision: float, moved: bool
) -> None:
    """Plain add draws estimated over a minute: the add direction takes the bound's sigma only
    where it lies within ``sigma (1 + precision)``, so that the released sigma does not
    depend on how fast the machine is (docs/rdp-escort.md §8)."""
    _bounds(monkeypatch, deterministic=8.0, sampled=sampled)
    plan = route_add.calibration_add(object(), (2.0, 1.0, 1e-6), precision, 0, None, top=100.0)  # type: ignore[arg-type]
    assert plan.sampled
    if moved:
        assert plan.centre is not None and plan.centre <= 1.0 + precision
        assert plan.samples is None
    else:
        assert plan.centre is None
        assert plan.samples == samples_for_precision(1e-6, precision, candidates=1)


def test_a_time_limit_trades_the_precision_for_the_add_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plain add draws estimated over ``max_seconds``: the add direction by the bound from
    where it settles, however far up, labelled beyond the precision; without a limit, or where
    the draws fit, the plain draws stand; the bound's centre within the precision carries no
    label."""
    _bounds(monkeypatch, deterministic=8.0, sampled=3.4)  # settles from 1.7 up
    draws_seconds = 2 * route_add.BLOCK_BOUND_AFTER
    numbers = (2.0, 1.0, 1e-6)

    def plan(max_seconds: float | None, precision: float = 0.2) -> route_add.CalibrationAdd:
        return route_add.calibration_add(
            object(),  # type: ignore[arg-type]
            numbers,
            precision,
            0,
            None,
            top=100.0,
            max_seconds=max_seconds,
        )

    looser = plan(draws_seconds / 2)
    assert looser.centre is not None and 1.7 <= looser.centre <= 1.7 * 1.25
    assert looser.samples is None and looser.beyond is not None
    assert "beyond the precision" in looser.beyond and "per walked entry" in looser.beyond
    assert plan(None).centre is None and plan(None).samples is not None  # no limit: the draws
    assert plan(2 * draws_seconds).centre is None  # the draws fit the limit
    within = plan(draws_seconds / 2, precision=1.0)  # 1.7 is within sigma (1 + 1.0)
    assert within.centre is not None and within.beyond is None


def test_the_add_label_names_exact_zero_the_bound_and_its_overshoot() -> None:
    plan = route_add.CalibrationAdd(True, None, 0.0)
    assert plan.label(exact_zero=True) == "exact zero"
    assert plan.label(exact_zero=False) == "bounded (§10, §10.1)"
    beyond = attrs.evolve(plan, centre=1.7, beyond="from sigma 1.7, beyond the precision")
    assert (
        beyond.label(exact_zero=False)
        == "bounded (§10, §10.1) from sigma 1.7, beyond the precision"
    )
