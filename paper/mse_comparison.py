"""Paper §7.1 (Fig. 2 and 3): MSE of b-min-sep BandMF against cyclic Poisson and balls-in-bins.

For every target epsilon and epoch length |D|/B of the grid, :func:`minsep.framework.compare`
calibrates the noise multiplier of every (scheme, bands, min-sep) combination at equal expected
batch size:

- cyclic Poisson BandMF (b = bands groups) and DP-SGD by exact PLD;
- balls-in-bins and b-min-sep BandMF (warm start, b over the powers of two with
  bands <= b <= |D|/B) by Monte Carlo: Algorithm 5 (App. A) with ``samples`` verification
  samples per direction; the default ``min_samples(delta/2, delta)`` verifies at base delta
  delta/2, the paper's "estimate epsilon at delta/2";
- unamplified BandMF (one participation per epoch) by the Gaussian mechanism.

Strategies are a compared dimension too: besides the bands grid, ``strategies`` names further
registered strategies (specs ``name:key=value``, e.g. ``blt`` or
``banded_toeplitz:bands=4:objective=max``); b-min-sep accounts those that are not banded by the
r-min-sep bounds of App. B.1 (docs/math.md §2.1), at every b up to |D|/B.

Utility is the prefix-sum MSE ``(1/n) ||A C^-1||_F^2 sigma^2`` (docs/math.md §8). For each scheme
the best MSE over strategies, bands (and b) is kept (the best-strategy table says which strategy
wins), and the ratios b-min-sep / cyclic Poisson (Fig. 2) and b-min-sep / balls-in-bins (Fig. 3)
are tabulated and drawn as heat maps (< 1: b-min-sep wins).
For the tables balls-in-bins is b-min-sep at b = |D|/B (p = 1), the same loss model on the same
draws as the other b, so the Fig. 3 ratio is <= 1 exactly; the rows CSV keeps the balls-in-bins
calibrations by their own loss model as a cross-check.

The parts live in :mod:`~minsep.paper.mse_settings` (the grids), :mod:`~minsep.paper.mse_grid`
(calibrating), :mod:`~minsep.paper.mse_tables` (best rows and ratios) and
:mod:`~minsep.paper.mse_report` (markdown and heat maps).

Run ``python -m paper.mse_comparison [--quick]`` or ``minsep paper mse_comparison [--quick]``.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import attrs

from minsep.paper.mse_grid import Record, run_grid
from minsep.paper.mse_report import markdown, plot, strategy_markdown
from minsep.paper.mse_settings import DEMO, FAMILIES, FULL, QUICK, MSESettings
from minsep.paper.mse_tables import (
    AS_B_MIN_SEP,
    BEST_COLUMNS,
    RATIO_COLUMNS,
    ROW_COLUMNS,
    STRATEGY_COLUMNS,
    balls_in_bins_as_b_min_sep,
    best_rows,
    ratio_rows,
    row_dicts,
    strategy_rows,
)
from minsep.paper.options import (
    EngineOptions,
    add_grid_overrides,
    paper_samples,
    settings_with_overrides,
)
from minsep.paper.script import Script, ScriptRun

__all__ = [
    "AS_B_MIN_SEP",
    "BEST_COLUMNS",
    "DEMO",
    "FAMILIES",
    "FULL",
    "QUICK",
    "RATIO_COLUMNS",
    "ROW_COLUMNS",
    "SCRIPT",
    "STRATEGY_COLUMNS",
    "EngineOptions",
    "MSESettings",
    "Record",
    "balls_in_bins_as_b_min_sep",
    "best_rows",
    "markdown",
    "paper_samples",
    "plot",
    "ratio_rows",
    "row_dicts",
    "run_experiment",
    "run_grid",
    "settings_from_args",
    "strategy_markdown",
    "strategy_rows",
]


def _options(parser: argparse.ArgumentParser) -> None:
    """The grid overrides, the extra strategies and the demo's setting."""
    grid = add_grid_overrides(
        parser,
        epsilons="0.5,1,2",
        epoch_lengths=True,
        bands="numbers of bands, e.g. 2,4,8",
    )
    grid.add_argument(
        "--strategies",
        type=lambda t: tuple(s.strip() for s in t.split(",") if s.strip()),
        help="extra strategies besides the bands grid, e.g. blt,banded_inverse or "
        "banded_toeplitz:bands=8:objective=max",
    )
    grid.add_argument(
        "--demo",
        action="store_true",
        help="the demo's setting (n 1024, |D|/B 256, delta 1e-3, epsilon 2) with strategies",
    )


def settings_from_args(args: argparse.Namespace) -> tuple[MSESettings, str]:
    """The grid of parsed arguments and the mode's name."""
    keys = ("epsilons", "epoch_lengths", "bands", "strategies")
    if getattr(args, "demo", False):
        settings, mode = settings_with_overrides(args, DEMO, DEMO, keys)
        return settings, mode.replace("quick", "demo").replace("full", "demo")
    return settings_with_overrides(args, QUICK, FULL, keys)


def _full_grid_projection(timing: dict[str, Any], samples: int) -> dict[str, Any]:
    """The per-family timing and what the full grid would take at this run's speed."""
    monte_carlo = [v for k, v in timing.items() if k.endswith(":monte_carlo")]
    rows = sum(v["rows"] for v in monte_carlo)
    per_row = sum(v["total_s"] for v in monte_carlo) / rows if rows else math.nan
    scale = FULL.resolved_samples() / samples
    return {
        "per_family": timing,
        "monte_carlo_wall_s_per_calibration": per_row,
        "full_grid_monte_carlo_calibrations": FULL.monte_carlo_rows(),
        "full_grid_projected_wall_s": per_row * scale * FULL.monte_carlo_rows(),
        "projection_note": "mean wall seconds per Monte Carlo calibration of this run x "
        "(full samples / these samples) x full-grid calibrations, at this run's workers",
    }


def _run(settings: MSESettings, job: ScriptRun) -> None:
    """Run the grid and write ``mse_comparison_{rows,best,ratios,strategies}.csv``, ``.md``,
    ``mse_comparison.png`` and ``.json``."""
    samples = settings.resolved_samples()
    records, timing = run_grid(settings, job.engine, job.report)
    best = best_rows(balls_in_bins_as_b_min_sep(records))
    ratios = ratio_rows(settings, best)
    by_strategy = strategy_rows(settings, records)
    text = markdown(settings, ratios, samples)
    if settings.strategies:
        text += "\n\nBest row of each strategy per scheme (MSE/best = 1: the winning strategy):\n\n"
        text += strategy_markdown(by_strategy)
    job.csv("rows", ROW_COLUMNS, row_dicts(records))
    job.csv(
        "best",
        BEST_COLUMNS,
        [
            {"epsilon_target": e, "epoch_length": length, **attrs.asdict(r)}
            for (e, length, _), r in best.items()
        ],
    )
    job.csv("ratios", RATIO_COLUMNS, ratios)
    job.csv("strategies", STRATEGY_COLUMNS, by_strategy)
    job.markdown(text)
    job.figure(lambda path: plot(path, settings, ratios))
    job.record(
        settings,
        facts={"samples": samples, "monte_carlo_calibrations": settings.monte_carlo_rows()},
        timing={"workers": job.engine.workers, **_full_grid_projection(timing, samples)},
    )


#: Root seed of the Monte Carlo streams (the committed outputs were made with it).
DEFAULT_SEED = 71
SCRIPT = Script("mse_comparison", __doc__, DEFAULT_SEED, settings_from_args, _run, _options)
run_experiment = SCRIPT.run_experiment

if __name__ == "__main__":
    raise SystemExit(SCRIPT.main())
