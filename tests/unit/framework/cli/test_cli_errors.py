"""Errors on the command line (issue 13 §4/§5): one clear line (and a JSON error object with
``--json``) instead of a traceback, for a forgotten option, usage errors, memory and OS errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minsep.framework.cli import common
from minsep.framework.cli.main import EXIT_ERROR, main
from tests.unit.montecarlo_toys import one_error_line

# -- a forgotten --min-sep ------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheme",
    [[], ["--scheme", "cyclic_poisson"],
     ["--scheme", "truncated", "--dataset-size", "1000", "--max-batch-size", "30"]],
)  # fmt: skip
def test_a_forgotten_min_sep_is_one_line_naming_the_option(
    scheme: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["epsilon", *scheme, "--steps", "64", "--rate", "1/16", "--sigma", "1"]
    assert main(argv) == EXIT_ERROR
    line = one_error_line(capsys.readouterr().err)
    assert "min_sep = <missing>" in line and "--min-sep" in line


def test_json_errors_are_objects_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", "--steps", "64", "--rate", "1/16", "--sigma", "1", "--json"]) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["type"] == "ConfigurationError" and error["exit_code"] == 2
    assert error["parameter"] == "min_sep" and error["option"] == "--min-sep"
    assert "min_sep" in error["message"] and captured.err  # the line on stderr stays


def test_json_usage_errors_are_objects_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["epsilon", "--sigma", "1", "--delta", "5", "--json"])
    assert info.value.code == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "UsageError" and "--delta" in error["message"]


def test_without_json_stdout_stays_empty_on_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", "--steps", "64", "--sigma", "1"]) == 2
    assert capsys.readouterr().out == ""


# -- memory and operating system errors ------------------------------------------------------


def _failing_build(error: BaseException) -> Any:
    def build(args: Any, name: str | None = None) -> Any:
        raise error

    return build


@pytest.mark.parametrize("as_json", [False, True])
def test_memory_error_is_one_line_and_nonzero(
    as_json: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "build_scheme", _failing_build(MemoryError()))
    argv = ["epsilon", "--min-sep", "4", "--sigma", "1", *(["--json"] if as_json else [])]
    assert main(argv) == EXIT_ERROR
    captured = capsys.readouterr()
    assert "out of memory" in one_error_line(captured.err)
    if as_json:
        assert json.loads(captured.out)["error"]["type"] == "MemoryError"


def test_os_error_isone_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "build_scheme", _failing_build(OSError(28, "No space left")))
    assert main(["calibrate", "--min-sep", "4", "--epsilon", "1"]) == EXIT_ERROR
    assert "No space left" in one_error_line(capsys.readouterr().err)
