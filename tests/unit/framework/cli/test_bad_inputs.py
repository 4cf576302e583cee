"""The last bad inputs of issue 31: each is refused before any work with exit status 2 and one
line that names the option the user typed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minsep.accountants import escort_sampling
from minsep.framework.cli import common
from minsep.framework.cli.main import EXIT_ERROR, main
from minsep.framework.montecarlo import sampling

EPSILON = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps",
           "16", "--rate", "1/8", "--sigma", "1", "--delta", "1e-3", "--seed", "3",
           "--workers", "1"]  # fmt: skip
COMPARE = ["compare", "--steps", "64", "--rate", "1/8", "--delta", "1e-2", "--epsilon", "2",
           "--bands", "4", "--min-seps", "4", "--samples", "4000", "--seed", "0"]  # fmt: skip


@pytest.fixture(autouse=True)
def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any Monte Carlo sampling fails the test: the refusals come first."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("sampling started before the bad input was refused")

    monkeypatch.setattr(sampling, "sample_chunks", refuse)  # every plain draw
    monkeypatch.setattr(escort_sampling, "sample_chunks", refuse)  # every escort draw


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *named: str) -> str:
    assert main(argv) == EXIT_ERROR
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"minsep {argv[0]}: error: "), lines[0]
    for text in named:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("flags", [["--warm-start", "--cold-start"],
                                   ["--cold-start", "--warm-start"],
                                   ["--warm-start", "--no-warm-start"]])  # fmt: skip
def test_warm_and_cold_start_together(flags: list[str], capsys: Any) -> None:
    line = _refused([*EPSILON, "--samples", "40000", *flags], capsys, *flags)
    assert "contradict" in line


def test_the_same_flag_twice_is_no_contradiction(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps",
            "16", "--rate", "1/8", "--sigma", "1", "--accountant", "rdp", "--warm-start",
            "--warm-start"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err


def test_an_invalid_minsep_kernels_stops_the_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINSEP_KERNELS", "garbage")
    _refused([*EPSILON, "--samples", "40000"], capsys, "MINSEP_KERNELS", "'garbage'", "'auto'",
             "'array'")  # fmt: skip


@pytest.mark.parametrize(
    ("content", "why"), [("{}", "has no address"), ("not json", "cannot be read as JSON"),
                         ('{"address": "nowhere"}', "address 'nowhere'")],
)  # fmt: skip
def test_a_scheduler_file_without_an_address(
    tmp_path: Path, content: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    scheduler = tmp_path / "scheduler.json"
    scheduler.write_text(content, encoding="utf-8")
    argv = [*EPSILON, "--samples", "40000", "--scheduler", str(scheduler)]
    _refused(argv, capsys, "--scheduler", why)


def test_a_curve_grid_beyond_the_memory_budget(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError("the scheme was built before the grid was checked")

    monkeypatch.setattr(common, "build_scheme", refuse)
    argv = ["curve", "--scheme", "poisson", "--steps", "16", "--rate", "1/8", "--sigma", "1"]
    line = _refused([*argv, "--epsilon-grid", "0:8:100000000"], capsys, "--epsilon-grid",
                    "--memory-budget", "at most 524,288 points")  # fmt: skip
    assert "100,000,000 points" in line
    _refused([*argv, "--epsilon-grid", "0:8:1000", "--memory-budget", "1M"], capsys,
             "--epsilon-grid", "at most 512 points")  # fmt: skip


def test_a_tiny_precision_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused([*EPSILON, "--precision", "1e-9"], capsys, "--precision = 1e-09", "--samples")
    assert "min_samples" not in line


def test_a_bad_base_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["epsilon", "--scheme", "truncated", "--base", "nosuch", "--dataset-size", "40",
            "--max-batch-size", "20", "--steps", "16", "--rate", "1/8", "--sigma", "1",
            "--accountant", "gaussian"]  # fmt: skip
    _refused(argv, capsys, "base = 'nosuch'", "unknown scheme", "command-line option --base")


@pytest.mark.parametrize("empty", ["", ",", " , "])
def test_empty_schemes_are_named(empty: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused([*COMPARE, "--schemes", empty], capsys, "--schemes")
    assert "ComparisonSetup" not in line


def test_an_output_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from minsep.training import cli as training

    def refuse(*args: Any) -> Any:
        raise AssertionError("the data were loaded before --output was checked")

    monkeypatch.setattr(training, "load_data", refuse)
    argv = ["train", "--non-private", "--data", "synthetic", "--output", str(tmp_path)]
    line = _refused(argv, capsys, f"--output {str(tmp_path)!r}", "folder")
    assert "Errno" not in line


def test_the_refusals_come_as_json_errors_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*COMPARE, "--schemes", "", "--json"]) == EXIT_ERROR
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["exit_code"] == EXIT_ERROR and "--schemes" in error["message"]


def test_auto_does_not_skip_monte_carlo_for_an_invalid_minsep_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from minsep.framework import setup
    from minsep.framework.errors import ConfigurationError

    monkeypatch.setenv("MINSEP_KERNELS", "garbage")
    accountant = setup.build_accountant("monte_carlo")
    scheme = setup.build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    with pytest.raises(ConfigurationError, match="MINSEP_KERNELS"):
        accountant.why_not(scheme, setup.build_strategy(16, 4))
