"""The bench's options (issue 28): model skipping, progress lines and its time limit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minsep import bench


def _bench(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert bench.main(["--quick", "--no-engine", "--repeats", "1", "--case", "small",
                       "--json", *argv]) == 0  # fmt: skip
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_bench_skips_models_reports_progress_and_stops_at_its_time_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    labels = [e.label for e in bench.bench_models(bench.QUICK[0]) if e.model is not None][:2]
    first, second = labels
    result, err = _bench(["--models", ",".join(labels), "--skip-models", second], capsys)
    case = result["cases"][0]
    assert list(case["models"]) == [first] and case["skipped"] == {second: "--skip-models"}
    assert f"model 1/2 {first}" in err and second not in err
    result, err = _bench(["--models", ",".join(labels), "--time-limit", "0"], capsys)
    case = result["cases"][0]
    assert case["models"] == {} and set(case["skipped"].values()) == {"--time-limit reached"}
    result, err = _bench(["--models", first, "--no-progress"], capsys)
    assert list(result["cases"][0]["models"]) == [first] and "model 1/1" not in err
