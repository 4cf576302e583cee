"""``minsep train`` answers at once and reuses a seeded calibration (first answer, cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minsep.framework.cli.main import main

ARGS = ["train", "--scheme", "b_min_sep", "--min-sep", "2", "--bands", "2", "--data",
        "synthetic", "--steps", "12", "--rate", "0.2", "--epsilon", "4", "--delta", "0.05",
        "--samples", "4000", "--no-progress"]  # fmt: skip


def _train(path: Path, *extra: str) -> dict[str, object]:
    assert main([*ARGS, *extra, "--output", str(path)]) == 0
    return json.loads(path.read_text(encoding="utf-8"))["run"]["calibration"]  # type: ignore[no-any-return]


def test_train_says_a_first_sigma_then_reuses_a_seeded_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _train(tmp_path / "a.json", "--seed", "1")
    captured = capsys.readouterr()
    # issue 30, friction 7: the first answer, plan and cache lines go to stderr, results to stdout
    err = captured.err
    assert "minsep: first answer (deterministic upper bound" in err
    assert err.index("first answer") < err.index("calibrating sigma")
    assert "first answer" not in captured.out and "calibrating sigma" not in captured.out
    assert "sigma = " in captured.out and "test accuracy" in captured.out
    assert "cached answer" not in err
    again = _train(tmp_path / "b.json", "--seed", "1")
    assert "cached answer from " in capsys.readouterr().err
    assert again == first
    fresh = _train(tmp_path / "c.json", "--seed", "1", "--no-cache")
    assert "cached answer" not in capsys.readouterr().err
    assert fresh["sigma"] == first["sigma"]  # same seed, same draws


def test_auto_hands_over_when_an_accountant_cannot_calibrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30, friction 1: with ``auto``, a Monte Carlo calibration that cannot run (the
    escort's "no order fits") hands over to the next accountant, saying why, instead of dying."""
    from minsep.accountants.monte_carlo import MonteCarloAccountant
    from minsep.framework.errors import ConfigurationError

    def cannot(*args: object, **kwargs: object) -> object:
        raise ConfigurationError("escort_setups.orders = (2,) is invalid: no order fits")

    monkeypatch.setattr(MonteCarloAccountant, "_calibrate", cannot)
    calibration = _train(tmp_path / "d.json", "--seed", "1", "--no-cache")
    err = capsys.readouterr().err
    assert "accountant 'monte_carlo' could not calibrate: escort_setups.orders" in err
    assert "trying 'rdp'" in err
    assert calibration["accountant"] == "rdp"
    named = [*ARGS, "--accountant", "monte_carlo", "--seed", "1", "--no-cache"]
    assert main([*named, "--output", str(tmp_path / "e.json")]) == 2  # named: no hand-over
