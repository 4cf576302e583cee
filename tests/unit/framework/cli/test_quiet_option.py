"""``--quiet`` is accepted by the accountants that show no progress; an explicit
``--progress`` is still refused where it would be ignored (issue 28)."""

from __future__ import annotations

import pytest

from minsep.framework.cli.main import EXIT_ERROR, main

POISSON = ["epsilon", "--scheme", "poisson", "--steps", "8", "--rate", "1/4", "--sigma", "1",
           "--delta", "1e-5", "--no-cache"]  # fmt: skip


@pytest.mark.parametrize("accountant", ["pld", "gaussian", "rdp"])
def test_quiet_is_accepted_by_accountants_without_progress(
    accountant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*POISSON, "--accountant", accountant, "--quiet"]) == 0
    assert "progress" not in capsys.readouterr().err


def test_an_explicit_progress_is_still_refused_where_it_would_be_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*POISSON, "--accountant", "pld", "--progress"]) == EXIT_ERROR
    assert "--progress" in capsys.readouterr().err
