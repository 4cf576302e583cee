"""The accounting commands answer at once (first answer), choose the accountant with auto and
say which one answered (framework/cli/first_answer.py, common.choose_accountant)."""

from __future__ import annotations

import json

import pytest

from minsep.framework import setup
from minsep.framework.cli.main import main

SMALL = ["--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
         "--rate", "1/8"]  # fmt: skip
MC = ["--samples", "4000", "--pilot-samples", "1000", "--seed", "5"]


def _pair() -> tuple[object, object]:
    scheme = setup.build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    return scheme, setup.build_strategy(16, 4)


def test_epsilon_prints_the_best_deterministic_bound_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["epsilon", *SMALL, *MC, "--sigma", "1", "--delta", "1e-2", "--json"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    first = result["first_answer"]
    scheme, strategy = _pair()
    bounds = {
        name: setup.build_accountant(name).epsilon(scheme, strategy, 1.0, 1e-2).certified_epsilon
        for name in ("rdp", "gaussian")
    }
    assert first["bounds"] == pytest.approx(bounds)
    assert first["value"] == min(bounds.values()) and first["quantity"] == "epsilon"
    # only the choice of --workers auto (made when the accountant is built) may come first
    lines = [x for x in captured.err.splitlines() if "plan: workers auto" not in x]
    assert lines[0].startswith("minsep: first answer (deterministic upper bound")
    assert "plan:" in lines[1]  # printed before the Monte Carlo run is planned
    assert result["accountant"] == "monte_carlo"
    assert any("chosen by --accountant auto" in note for note in result["notes"])


def test_calibrate_first_answer_is_the_smallest_sufficient_sigma(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["calibrate", *SMALL, *MC, "--epsilon", "2", "--delta", "1e-2", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)["first_answer"]
    scheme, strategy = _pair()
    gaussian = setup.build_accountant("gaussian").calibrate(scheme, strategy, 2.0, 1e-2).sigma
    assert first["quantity"] == "sigma" and first["value"] <= gaussian
    assert first["value"] == min(first["bounds"].values())


def test_quiet_keeps_stderr_silent(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["delta", *SMALL, *MC, "--sigma", "1", "--epsilon", "2", "--quiet"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "delta (certified)" in captured.out


def test_auto_takes_the_exact_accountant_and_names_the_ignored_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["epsilon", "--scheme", "cyclic_poisson", "--min-sep", "4", "--bands", "4",
            "--steps", "16", "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", *MC]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "accountant           pld (exact)" in captured.out
    assert "chosen by --accountant auto" in captured.out
    assert "does not take --pilot-samples, --samples, --seed: ignored" in captured.err


def test_a_named_accountant_still_refuses_options_it_does_not_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["epsilon", *SMALL, "--sigma", "1", "--delta", "1e-2", "--accountant", "rdp", *MC]
    assert main(argv) == 2
    assert "does not take the option(s)" in capsys.readouterr().err


def test_auto_past_monte_carlo_warns_that_the_bound_is_deterministic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "2", "--bands", "4", "--steps",
            "16", "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--json"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["accountant"] in ("rdp", "gaussian") and result["first_answer"] is None
    assert "Monte Carlo cannot account this pair" in captured.err
    assert any("monte_carlo: " in note for note in result["notes"])
