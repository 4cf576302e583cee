"""Paper §7.3 analogue: multi-attribution (user-level) privacy on a synthetic co-authorship graph.

The paper trains on arXiv abstracts with the authors as users, drops single-author papers,
bounds every author to k_u = 2 papers, and compares DP-SGD, warm-start b-min-sep BandMF and
unamplified BandMF (Fig. 5, by test loss). We cannot ship arXiv, so this script builds a
synthetic graph with the same shape (:func:`synthetic_coauthorship`: papers with >= 2 authors
drawn with Zipf-like productivity, then the greedy contribution bounding of
:meth:`~minsep.schemes.attribution.AttributionGraph.bound_contributions` to k_u = 2) and
compares the three methods by calibrated noise multiplier and prefix-sum MSE (docs/math.md §8) at
equal expected batch size, for each target epsilon. The privacy unit is a user (fixed-graph
adjacency, zero-out of all the user's examples):

- **DP-SGD**: Poisson sampling of examples at rate p0 with the identity strategy. A user's
  k_u examples are sampled independently, so one step's user-level contribution is
  x ~ Binomial(k_u, p0) aligned clipped gradients: the dominating pair is the n-fold
  composition of the Gaussian mixture sum_j P(x = j) N(j, sigma^2) against N(0, sigma^2) (the
  single-user process of docs/math.md §5 with b = 1 and C = I). It is accounted exactly by
  dp_accounting's ``MixtureOfGaussiansDpEvent`` PLD, both directions, pessimistic rounding.
  This is tight for aligned gradients and needs no group-privacy step.
- **b-min-sep BandMF** (Algorithm 3, ``multi_attribution``): bands k and min-sep b = k (as in
  the paper), holding-set probability p solved on the graph so that the expected batch after
  burn-in is |D| p0; burn-in b - 1 steps makes Algorithm 3 exactly stationary (the holding sets
  are i.i.d.), accounted as cold start by Monte Carlo (Theorem 6.1, ``max_user_examples`` =
  k_u), calibrated by Algorithm 5.
- **Unamplified BandMF**: every example participates once per epoch (min-sep floor(1/p0), at
  most ceil(n / floor(1/p0)) participations); a user's k_u examples add up, so the user-level
  sensitivity is at most k_u times the example-level one (triangle inequality; tight when the
  examples are always batched together): sigma = k_u x the Gaussian-mechanism sigma of one
  example.

The parts live in :mod:`~minsep.paper.coauthorship` (the graph),
:mod:`~minsep.paper.multi_attribution_settings` (the runs),
:mod:`~minsep.paper.multi_attribution_accounting` (the calibrations) and
:mod:`~minsep.paper.multi_attribution_report` (tables and figure).

Run ``python -m paper.multi_attribution [--quick]`` or ``minsep paper multi_attribution``.
"""

from __future__ import annotations

import argparse
from typing import Any

from minsep.paper.coauthorship import GraphSettings, GraphSummary, synthetic_coauthorship
from minsep.paper.multi_attribution_accounting import (
    ROW_COLUMNS,
    calibrate_all,
    dp_sgd_epsilon,
    dp_sgd_event,
    dp_sgd_sigma,
)
from minsep.paper.multi_attribution_report import (
    BEST_COLUMNS,
    GRAPH_COLUMNS,
    best_rows,
    markdown,
    plot,
)
from minsep.paper.multi_attribution_settings import FULL, QUICK, MASettings
from minsep.paper.options import EngineOptions, add_grid_overrides, settings_with_overrides
from minsep.paper.script import Script, ScriptRun, mean_seconds

__all__ = [
    "BEST_COLUMNS",
    "FULL",
    "GRAPH_COLUMNS",
    "QUICK",
    "ROW_COLUMNS",
    "SCRIPT",
    "EngineOptions",
    "GraphSettings",
    "GraphSummary",
    "MASettings",
    "best_rows",
    "calibrate_all",
    "dp_sgd_epsilon",
    "dp_sgd_event",
    "dp_sgd_sigma",
    "markdown",
    "plot",
    "run_experiment",
    "settings_from_args",
    "synthetic_coauthorship",
]


def _full_mode_projection(
    settings: MASettings, seconds: dict[str, list[float]], samples: int
) -> dict[str, Any]:
    """The seconds per method and what the full mode's Monte Carlo calibrations would take at
    this run's speed (scaled by samples and steps)."""
    per_calibration = mean_seconds(seconds["b_min_sep"])
    scale = (FULL.resolved_samples() / samples) * (FULL.n_steps / settings.n_steps)
    full_calibrations = len(FULL.epsilons) * len(FULL.bands)
    return {
        "per_method": {
            m: {"rows": len(v), "total_s": sum(v), "mean_s": sum(v) / len(v) if v else None}
            for m, v in seconds.items()
        },
        "monte_carlo_wall_s_per_calibration": per_calibration,
        "full_mode_monte_carlo_calibrations": full_calibrations,
        "full_mode_projected_monte_carlo_wall_s": per_calibration * scale * full_calibrations,
        "projection_note": "mean wall seconds per Monte Carlo calibration of this run x "
        "(full samples / these samples) x (full n / this n) x full calibrations, at this "
        "run's workers",
    }


def _options(parser: argparse.ArgumentParser) -> None:
    """The grid overrides: target epsilons and bands."""
    add_grid_overrides(parser, epsilons="1,2,4", bands="numbers of bands (b = bands), e.g. 2,4")


def settings_from_args(args: argparse.Namespace) -> tuple[MASettings, str]:
    """The settings of parsed arguments and the mode's name."""
    return settings_with_overrides(args, QUICK, FULL, ("epsilons", "bands"))


def _run(settings: MASettings, job: ScriptRun) -> None:
    """Build the graph, calibrate every row, write ``multi_attribution_{graph,rows,best}.csv``,
    ``.md``, ``multi_attribution.png`` and ``.json``."""
    job.report("building the synthetic co-authorship graph")
    summary = synthetic_coauthorship(settings.graph)
    graph = summary.graph
    rate = settings.rate(graph.n_examples)
    statistics = {
        **summary.statistics,
        "rate": rate,
        "expected_batch": rate * graph.n_examples,
    }
    graph_seconds = job.clock.wall
    rows, seconds = calibrate_all(settings, graph, job.engine, job.report)
    best = best_rows(settings, rows)
    samples = settings.resolved_samples()
    job.csv("graph", GRAPH_COLUMNS, [{"quantity": k, "value": v} for k, v in statistics.items()])
    job.csv("rows", ROW_COLUMNS, rows)
    job.csv("best", BEST_COLUMNS, best)
    job.markdown(markdown(settings, statistics, best, samples))
    job.figure(lambda path: plot(path, settings, best))
    job.record(
        settings,
        facts={"samples": samples},
        timing={
            "graph_wall_s": graph_seconds,
            "workers": job.engine.workers,
            **_full_mode_projection(settings, seconds, samples),
        },
    )


#: Root seed of the Monte Carlo streams (the committed outputs were made with it).
DEFAULT_SEED = 73
SCRIPT = Script("multi_attribution", __doc__, DEFAULT_SEED, settings_from_args, _run, _options)
run_experiment = SCRIPT.run_experiment

if __name__ == "__main__":
    raise SystemExit(SCRIPT.main())
