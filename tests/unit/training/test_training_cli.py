"""``minsep train`` end to end on synthetic data, and the report helpers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from minsep.framework.cli.main import main
from minsep.framework.results import CalibrationResult
from minsep.training.report import certificate_text, summarise, t_interval

SMALL = ["--data", "synthetic", "--steps", "30", "--rate", "0.1", "--no-progress"]


def _document(path: Path) -> dict:
    return json.loads(path.read_text())


def test_t_interval_matches_scipy() -> None:
    values = [0.81, 0.84, 0.79, 0.86]
    mean, low, high = t_interval(values)
    ref = stats.t.interval(0.95, df=3, loc=sum(values) / 4, scale=stats.sem(values))
    assert mean == pytest.approx(0.825)
    assert (low, high) == pytest.approx(ref, rel=1e-12)
    assert t_interval([0.5]) == (0.5, 0.5, 0.5)
    summary = summarise([0.9, 0.95], [0.8, 0.9])
    assert summary["test_accuracy"]["mean"] == pytest.approx(0.85)
    assert summary["repeats"] == 2


def test_certificate_text_states_method() -> None:
    exact = CalibrationResult(accountant="pld", method="exact", sigma=1.2, epsilon=8.0, delta=1e-5)
    assert "no sampling error" in certificate_text(exact)
    mc = CalibrationResult(
        accountant="monte_carlo",
        method="monte_carlo",
        sigma=1.2,
        epsilon=8.0,
        delta=1e-5,
        monte_carlo={"samples": 1000, "base_delta": 2e-6, "seed": 3},
    )
    text = certificate_text(mc)
    assert "1,000" in text and "Monte Carlo" in text and "base delta" in text


def test_train_command_calibrates_trains_and_writes_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "deep" / "run.json"
    status = main(
        [
            "train",
            "--scheme",
            "poisson",
            *SMALL,
            "--epsilon",
            "8",
            "--delta",
            "1e-5",
            "--accountant",
            "pld",
            "--seed",
            "0",
            "--output",
            str(out),
        ]
    )
    assert status == 0
    text = capsys.readouterr().out
    assert "sigma = " in text and "test accuracy" in text and str(out) in text
    doc = _document(out)
    sigma = doc["run"]["sigma"]
    assert sigma > 0 and doc["run"]["calibration"]["sigma"] == sigma
    assert doc["run"]["calibration"]["accountant"] == "pld"
    assert doc["run"]["accounted"]["n_steps"] == 30
    assert doc["run"]["accounted"]["rate"] == pytest.approx(0.1)
    (record,) = doc["records"]
    assert record["run"]["sigma"] == sigma and record["seed"] == 0
    assert 0.0 <= record["test_accuracy"] <= 1.0


def test_train_repeats_report_mean_and_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    status = main(
        [
            "train",
            "--scheme",
            "poisson",
            *SMALL,
            "--epsilon",
            "8",
            "--accountant",
            "gaussian",
            "--repeats",
            "3",
            "--seed",
            "5",
            "--output",
            str(out),
        ]
    )
    assert status == 0
    assert "95% CI" in capsys.readouterr().out
    doc = _document(out)
    assert [r["seed"] for r in doc["records"]] == [5, 6, 7]
    s = doc["summary"]["test_accuracy"]
    accs = [r["test_accuracy"] for r in doc["records"]]
    assert s["mean"] == pytest.approx(sum(accs) / 3)
    assert s["low"] <= s["mean"] <= s["high"]


def test_non_private_baseline_has_no_noise(tmp_path: Path) -> None:
    out = tmp_path / "np.json"
    assert (
        main(["train", "--scheme", "poisson", *SMALL, "--non-private", "--output", str(out)]) == 0
    )
    doc = _document(out)
    assert doc["run"]["sigma"] == 0.0 and doc["run"]["clip_norm"] is None
    assert doc["run"]["calibration"] is None
    assert doc["records"][0]["test_accuracy"] > 0.9


def test_missing_epsilon_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["train", "--scheme", "poisson", *SMALL, "--output", str(tmp_path / "x.json")])
    assert status == 2
    assert "--epsilon" in capsys.readouterr().err


def test_json_flag_prints_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "j.json"
    assert (
        main(
            [
                "train",
                "--scheme",
                "poisson",
                *SMALL,
                "--non-private",
                "--json",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == _document(out)
    assert math.isfinite(printed["records"][0]["train_loss"])
    assert printed["environment"]["numpy"] == np.__version__  # versions and git commit
    assert "git_commit" in printed["environment"]


def test_auto_picks_monte_carlo_for_banded_b_min_sep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mc.json"
    status = main(
        [
            "train",
            "--scheme",
            "b_min_sep",
            "--min-sep",
            "2",
            "--bands",
            "2",
            "--data",
            "synthetic",
            "--steps",
            "12",
            "--rate",
            "0.2",
            "--epsilon",
            "4",
            "--delta",
            "0.05",
            "--samples",
            "4000",
            "--seed",
            "1",
            "--no-progress",
            "--output",
            str(out),
        ]
    )
    assert status == 0
    captured = capsys.readouterr()
    assert "'monte_carlo'" in captured.err  # "calibrating sigma ... with accountant" (stderr)
    assert "Monte Carlo" in captured.out and "4,000" in captured.out  # the certificate
    cal = _document(out)["run"]["calibration"]
    assert cal["accountant"] == "monte_carlo" and cal["monte_carlo"]["samples"] == 4000
    assert cal["scheme"]["min_sep"] == 2 and cal["strategy"]["bands"] == 2


def test_truncated_scheme_gets_the_training_set_size(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    status = main(
        [
            "train",
            "--scheme",
            "truncated",
            "--min-sep",
            "2",
            "--max-batch-size",
            "30",
            *SMALL,
            "--epsilon",
            "8",
            "--accountant",
            "gaussian",
            "--output",
            str(out),
        ]
    )
    assert status == 0
    doc = _document(out)
    assert doc["run"]["scheme"]["dataset_size"] == doc["data"]["train_size"]
    assert doc["run"]["scheme"]["max_batch_size"] == 30
    assert doc["records"][0]["mean_batch_size"] <= 30
