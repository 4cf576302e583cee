"""Paper §4.1's limits (paper/limits.py): b-min-sep against random-phase cyclic Poisson."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from minsep.paper import limits
from minsep.paper.common import OUTPUT_DIR, read_csv


def test_loss_sample_delta_is_the_plain_mean() -> None:
    losses = np.random.default_rng(0).normal(0.5, 1.0, size=500)
    sample = limits.LossSample.of(losses)
    for eps in (0.0, 0.3, 1.0, 2.5):
        expected = float(np.mean(np.maximum(1.0 - np.exp(eps - losses), 0.0)))
        assert sample.delta(eps) == pytest.approx(expected, abs=1e-12)


def test_micro_run_brackets_and_the_small_sigma_gap(tmp_path: Path) -> None:
    settings = limits.LimitSettings(
        n_steps=16, bands=2, min_sep=2, rate=1 / 4, sigmas=(0.3, 4.0), samples=4000
    )
    rows = read_csv(limits.run_experiment(settings, tmp_path, plots=False))
    assert len(rows) == 4
    for r in rows:
        lo, hat, hi = (float(r[k]) for k in ("epsilon_lower", "epsilon_hat", "epsilon_upper"))
        assert lo <= hat <= hi < math.inf
    by = {(float(r["sigma"]), r["scheme"]): float(r["epsilon_hat"]) for r in rows}
    cyclic = "cyclic Poisson (random phase)"
    assert by[(0.3, "b-min-sep")] < by[(0.3, cyclic)]


@pytest.mark.slow
def test_trend_on_the_sigma_grid(tmp_path: Path) -> None:
    """sigma -> 0: b-min-sep certified strictly better; sigma grows: the ratio rises to 1."""
    settings = limits.QUICK
    produced = limits.run_experiment(settings, tmp_path, plots=False)
    rows = read_csv(produced)
    cyclic = "cyclic Poisson (random phase)"
    get = {(float(r["sigma"]), r["scheme"]): r for r in rows}
    small, large = min(settings.sigmas), max(settings.sigmas)
    assert float(get[(small, "b-min-sep")]["epsilon_upper"]) < float(
        get[(small, cyclic)]["epsilon_lower"]
    )
    ratios = [
        float(get[(s, "b-min-sep")]["epsilon_hat"]) / float(get[(s, cyclic)]["epsilon_hat"])
        for s in settings.sigmas
    ]
    assert all(b >= a - 0.01 for a, b in itertools.pairwise(ratios))
    assert ratios[0] < 0.9 < 0.97 < ratios[-1] <= 1.01
    # at the largest sigma the certified brackets overlap: consistent with equality
    assert float(get[(large, "b-min-sep")]["epsilon_upper"]) >= float(
        get[(large, cyclic)]["epsilon_lower"]
    )
    committed = (OUTPUT_DIR / "limits.csv").read_text(encoding="utf-8")
    assert produced.read_text(encoding="utf-8") == committed
