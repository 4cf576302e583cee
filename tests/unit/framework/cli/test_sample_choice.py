"""Samples chosen from the question (montecarlo/precision.py, cli/sample_choice.py)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.framework.cli.main import main
from minsep.framework.montecarlo.bounds import base_delta
from minsep.framework.montecarlo.precision import (
    LOOSEST_PRECISION,
    precision_of_samples,
    samples_for_precision,
)

SMALL = ["--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
         "--rate", "1/8", "--seed", "2"]  # fmt: skip


@pytest.mark.parametrize(("delta", "candidates"), [(1e-3, 8), (1e-2, 1), (1e-5, 1)])
def test_samples_reach_the_precision_and_no_fewer_would(delta: float, candidates: int) -> None:
    m = samples_for_precision(delta, 0.05, candidates=candidates)
    assert base_delta(m, delta, candidates=candidates) >= delta**1.05
    assert precision_of_samples(m, delta, candidates=candidates) <= 0.05
    assert precision_of_samples(m - 1, delta, candidates=candidates) > 0.05
    assert samples_for_precision(delta, 0.1, candidates=candidates) < m


def test_the_former_default_is_a_precision_of_about_three_percent() -> None:
    # 1e6 samples at delta = 1e-3 (README): certified 1.2575 against the estimate 1.2241
    assert precision_of_samples(10**6, 1e-3, candidates=8) == pytest.approx(0.0267, abs=1e-3)


def _epsilon(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    assert main(["epsilon", *SMALL, "--sigma", "1", "--delta", "1e-2", "--json", *extra]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_epsilon_chooses_and_states_its_samples(capsys: pytest.CaptureFixture[str]) -> None:
    # plain sampling named: under --proposal auto the route (plain or escort) follows measured
    # sampling rates, so the sample count would depend on the machine's load
    # at this tiny size, where the two routes cost about the same (test_routes.py checks auto's
    # choice where one route is over 100 times cheaper)
    result, err = _epsilon(capsys, "--proposal", "plain")
    assert result["monte_carlo"]["samples"] == samples_for_precision(1e-2, 0.05, candidates=8)
    assert "chosen for delta = 0.01 at 0.05 precision" in err
    assert any("chosen for delta = 0.01" in note for note in result["notes"])
    looser, _ = _epsilon(capsys, "--proposal", "plain", "--precision", "0.2")
    assert looser["monte_carlo"]["samples"] == samples_for_precision(1e-2, 0.2, candidates=8)
    given, err = _epsilon(capsys, "--samples", "3000")
    assert given["monte_carlo"]["samples"] == 3000 and "3,000 per direction (--samples)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["epsilon", "--sigma", "1", "--samples", "3000", "--precision", "0.1"], "--samples"),
        (["curve", "--sigma", "1", "--epsilons", "1,2", "--precision", "0.1"], "--deltas"),
    ],
)
def test_precision_is_refused_where_it_cannot_apply(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, *SMALL]) == 2
    err = capsys.readouterr().err
    assert "--precision = 0.1 is invalid" in err and message in err


@pytest.fixture
def hundred_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every plan is estimated at 100 s for the default-precision samples (no timing, and no
    load: the plan's workers are taken as free cores)."""
    real = MonteCarloAccountant.plan
    full = samples_for_precision(1e-2, 0.05, candidates=8)

    def plan(self: MonteCarloAccountant, *args: Any, **kwargs: Any) -> Any:
        found = real(self, *args, **kwargs, measure=False)
        per = 100.0 / (full * 2.5)  # samples of both directions, pilot = samples / 4
        return attrs.evolve(found, draw_seconds=per, eval_seconds=0.0, cores=None)

    monkeypatch.setattr(MonteCarloAccountant, "plan", plan)


@pytest.mark.usefixtures("hundred_seconds")
def test_max_seconds_cuts_chosen_samples_to_fit(capsys: pytest.CaptureFixture[str]) -> None:
    full = samples_for_precision(1e-2, 0.05, candidates=8)
    # plain named: under auto the escort may be cheaper here (the add direction is settled by
    # the block bound of docs/math.md §10.1), and this test is about cutting plain samples
    result, err = _epsilon(capsys, "--proposal", "plain", "--max-seconds", "40", "--workers", "1")
    assert result["monte_carlo"]["samples"] == int(full * 0.4)
    reached = precision_of_samples(int(full * 0.4), 1e-2, candidates=8)
    assert f"to fit --max-seconds 40 (estimated 100 s for {full:,}): precision {reached:.3g}" in err


@pytest.mark.usefixtures("hundred_seconds")
def test_max_seconds_refuses_what_cannot_fit(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["epsilon", *SMALL, "--sigma", "1", "--delta", "1e-2", "--max-seconds", "1"]
    argv += ["--proposal", "plain"]  # the plain route's refusal (auto may take the escort)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--max-seconds = 1 is too small: even at precision {LOOSEST_PRECISION:g}" in err
    # issue 30, friction 4: the first answer computed before the refusal is printed first
    assert "minsep: first answer (deterministic upper bound" in err
    assert err.index("first answer") < err.index("--max-seconds = 1 is too small")


def test_delta_plans_its_samples_from_the_first_answer(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["delta", *SMALL, "--sigma", "1", "--epsilon", "2", "--precision", "0.2", "--json"]
    assert main(argv) in (0, 3)
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    reference = result["first_answer"]["value"]
    assert 0 < reference < 1
    assert result["monte_carlo"]["samples"] == samples_for_precision(reference, 0.2, candidates=8)
    assert "chosen for the first answer's delta" in captured.err


def test_curve_plans_its_samples_from_the_smallest_target_delta(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["curve", *SMALL, "--sigma", "1", "--epsilons", "1,2,3", "--deltas", "1e-2,1e-3",
            "--precision", "0.3", "--json"]  # fmt: skip
    assert main(argv) in (0, 3)
    captured = capsys.readouterr()
    assert json.loads(captured.out)["monte_carlo"]["samples"] == samples_for_precision(
        1e-3, 0.3, candidates=3
    )
    assert "chosen for delta = 0.001 at 0.3 precision over 3 grid points" in captured.err


def test_curve_refuses_the_escort_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["curve", *SMALL, "--sigma", "1", "--epsilons", "1,2", "--proposal", "escort"]
    assert main(argv) == 2
    assert "--proposal = 'escort' is invalid for minsep curve" in capsys.readouterr().err
