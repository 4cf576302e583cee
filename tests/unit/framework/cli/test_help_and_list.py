"""The CLI's manners (issue 19, item 3): help with defaults and examples, a plain ``minsep
list`` with each scheme's options and accountants, one throughput unit, the PLD search named
for what it is, a quiet Dask shutdown, and a too-few-samples error naming ``--samples``."""

from __future__ import annotations

import argparse
import json
import logging
import shlex
from typing import Any

import pytest

from minsep.framework.cli import common
from minsep.framework.cli.coverage import coverage
from minsep.framework.cli.main import build_parser, commands, main
from minsep.framework.montecarlo import dask_executor
from minsep.framework.montecarlo.planning import RunPlan, Stage
from minsep.framework.registries import accountants, schemes

POISSON = ["--scheme", "poisson", "--steps", "16", "--rate", "1/8"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("name", ["list", "compare", "epsilon", "calibrate", "delta", "curve"])
def test_help_shows_defaults_and_examples(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([name, "--help"])
    out = capsys.readouterr().out
    assert "\nexamples:\n  minsep " + name in out
    if name != "list":
        assert "--steps STEPS" in out and "(default: 1024)" in out
        assert "(default: None)" not in out and "(default: )" not in out


def test_every_example_parses() -> None:
    parser = build_parser()
    found = 0
    for name, sub in _subparsers(parser).items():
        epilog = sub.epilog or ""
        for line in epilog.splitlines()[1:]:
            words = shlex.split(line, comments=True)
            assert words[:2] == ["minsep", name]
            args = parser.parse_args(words[1:])
            assert args.command == name
            found += 1
    assert found >= len(commands())


def test_list_is_plain_text_with_options_and_accountants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "schemes"]) == 0
    out = capsys.readouterr().out
    assert "`" not in out
    lines = out.splitlines()
    for name in schemes.names():
        (start,) = [i for i, line in enumerate(lines) if line.startswith(f"  {name} ")]
        block = []
        for line in lines[start + 1 :]:
            if not line.startswith("    "):
                break
            block.append(line.strip())
        assert block[-1].startswith("accountants: ")
        for parameter in schemes.get(name).parameters():
            assert any(b.startswith(parameter.flag + " ") for b in block)
    poisson = next(line for line in lines if line.startswith("  poisson "))
    after = lines[lines.index(poisson) + 1].strip()
    assert after.startswith("accountants: ") and "pld" in after and "monte_carlo" in after


def test_list_json_carries_the_accountants_the_hooks_accept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "schemes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["scheme_accountants"]) == set(data["schemes"])
    example = schemes.get("cyclic_poisson").example()
    from minsep.framework.setup import build_strategy

    identity = build_strategy(example.n_steps, 1)
    expected = [e.name for e in accountants.entries() if e.cls().supports(example, identity)]
    assert data["scheme_accountants"]["cyclic_poisson"] == expected
    assert "rdp" not in coverage("cyclic_poisson") and "rdp" in coverage("b_min_sep")


def test_throughput_has_one_unit(capsys: pytest.CaptureFixture[str]) -> None:
    assert common.throughput(1000, 2.0, 10).startswith("5e+03 sample·steps/s (1,000 loss")
    args = [*POISSON, "--accountant", "monte_carlo", "--sigma", "1", "--delta", "1e-2"]
    args += ["--samples", "6000", "--seed", "1"]
    assert main(["epsilon", *args, "--proposal", "plain", "--no-progress"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("throughput")]
    assert "sample·steps/s" in line and "evaluations/s" not in line
    plan = RunPlan("epsilon", (Stage("verify", 10, 1),), 10, 8, 1 << 20, 1, 0, 1e-3, 1e-4, 16)
    assert plan.describe_time().count("sample·steps/s") == 2
    assert "16,000 sample·steps/s" in plan.describe_time()


def test_exact_calibration_says_bisection(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", *POISSON, "--epsilon", "2", "--accountant", "pld"]) == 0
    out = capsys.readouterr().out
    assert "bisection" in out and "sweep" not in out
    assert "the smallest sigma lies in (" in out


def test_too_few_samples_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*POISSON, "--accountant", "monte_carlo", "--sigma", "1", "--samples", "100"]
    args += ["--proposal", "plain", "--seed", "1"]
    assert main(["epsilon", *args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "need --samples >= " in err and "(command-line option --samples)" in err


class _Noisy:
    """A stand-in client/cluster whose close logs like a stopping Dask nanny."""

    def close(self) -> None:
        logging.getLogger("distributed.nanny").warning("Worker process still alive")


def test_dask_shutdown_is_quiet(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entries: dict[Any, Any] = {("fake",): (_Noisy(), _Noisy())}
    monkeypatch.setattr(dask_executor, "_CLUSTERS", entries)
    before = logging.getLogger("distributed").level
    with caplog.at_level(logging.WARNING):
        dask_executor.shutdown_clusters()
    assert entries == {}
    assert not [r for r in caplog.records if r.name.startswith("distributed")]
    assert logging.getLogger("distributed").level == before


@pytest.mark.parametrize("command", ["epsilon", "delta", "curve"])
def test_subnormal_sigma_is_refused_before_any_work(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sigma below MIN_SIGMA is an argument error: no first answer, plan or rate probe runs
    (it used to reach the rate probe and divide by zero)."""
    extra = {
        "epsilon": ["--delta", "1e-3"],
        "delta": ["--epsilon", "1"],
        "curve": ["--epsilon-grid", "0:1:3"],
    }
    with pytest.raises(SystemExit) as stop:
        main([command, *POISSON, "--sigma", "1e-320", *extra[command]])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--sigma" in err and "[1e-100, inf)" in err and "plan:" not in err
