"""Summaries and JSON documents of training runs (means with t-intervals, certificates)."""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minsep.framework.results import CalibrationResult
from minsep.framework.validation import check_range


def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the two-sided Student-t interval mean ± t_{(1+c)/2, K-1}·s/√K.

    With one value the interval is that value (no spread can be estimated).
    """
    check_range(
        "t_interval", "confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True
    )
    k = len(values)
    if k == 0:
        raise ValueError("t_interval: values must be non-empty")
    mean = math.fsum(values) / k
    if k == 1:
        return mean, mean, mean
    from scipy import stats

    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (k - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2.0, df=k - 1)) * sd / math.sqrt(k)
    return mean, mean - half, mean + half


def summarise(
    train_accuracy: Sequence[float], test_accuracy: Sequence[float], confidence: float = 0.95
) -> dict[str, Any]:
    """Mean and t-interval of train and test accuracy over repeated seeds."""
    out: dict[str, Any] = {"repeats": len(test_accuracy), "confidence": confidence}
    for name, values in (("train_accuracy", train_accuracy), ("test_accuracy", test_accuracy)):
        mean, low, high = t_interval(values, confidence)
        out[name] = {"mean": mean, "low": low, "high": high}
    return out


def certificate_text(calibration: CalibrationResult) -> str:
    """One human sentence stating what the calibrated σ guarantees and how it was obtained."""
    target = f"({calibration.epsilon:g}, {calibration.delta:g})-DP"
    if calibration.method == "monte_carlo":
        text = f"sigma = {calibration.sigma:.6g} is certified {target} by Monte Carlo accounting"
        if calibration.samples is not None:
            text += f" from {calibration.samples:,} privacy-loss samples"
        if calibration.base_delta is not None:
            text += f", verified at base delta {calibration.base_delta:.3g}"
        text += (
            f"; the probability {calibration.failure_probability:.3g} that sampling error hides "
            "a larger delta is already included in the stated delta (Fact 4.2)"
        )
        if calibration.seed is not None:
            text += f"; accountant seed {calibration.seed}"
        return text
    return (
        f"sigma = {calibration.sigma:.6g} is {target} by {calibration.method} accounting "
        f"({calibration.accountant}; no sampling error)"
    )


def default_output(directory: str | Path = "runs") -> Path:
    """``runs/train-<UTC timestamp>.json``."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S-%f")
    return Path(directory) / f"train-{stamp}.json"


def write_json(document: dict[str, Any], path: str | Path) -> Path:
    """Write ``document`` as indented JSON, creating parent directories; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n")
    return target
