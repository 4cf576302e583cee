"""A single-valued option given twice: the same value is accepted, different ones refused."""

from __future__ import annotations

import pytest

from minsep.framework.cli.main import build_parser, conflicting_option, main

BASE = ["epsilon", "--scheme", "poisson", "--steps", "8", "--rate", "1/4", "--delta", "1e-3",
        "--accountant", "gaussian"]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        (["--sigma", "1", "--sigma", "1"], False),
        (["--sigma", "1", "--sigma=1.0"], False),  # equal once parsed
        (["--sigma", "1", "--sigma", "2"], True),
        (["--sigma", "1", "--sig", "2"], True),  # an abbreviation is the same option
        (["--sigma", "1", "--param", "a=1", "--param", "a=2"], False),  # repeatable
    ],
)
def test_conflicting_option(extra: list[str], refused: bool) -> None:
    problem = conflicting_option(build_parser(), "epsilon", [*BASE, *extra])
    assert (problem is not None) == refused
    if refused:
        assert problem is not None and "--sigma" in problem and "'2'" in problem


def test_cli_refuses_conflicting_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--sigma", "1", "--sigma", "2"]) == 2
    err = capsys.readouterr().err
    assert "--sigma is given twice with different values ('1' and '2')" in err
