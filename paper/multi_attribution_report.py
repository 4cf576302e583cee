"""The tables and the figure of paper §7.3's analogue (:mod:`minsep.paper.multi_attribution`):
the best MSE per method and epsilon, and the graph's statistics."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minsep.paper.multi_attribution_settings import MASettings
from minsep.paper.output import markdown_table
from minsep.paper.plots import LinePanel, Series, plot_line_panels

METHODS = ("dp_sgd", "b_min_sep", "unamplified")
LABELS = {
    "dp_sgd": "DP-SGD",
    "b_min_sep": "b-min-sep BandMF",
    "unamplified": "unamplified BandMF",
}

BEST_COLUMNS = (
    "epsilon_target",
    "dp_sgd_sigma",
    "dp_sgd_mse",
    "b_min_sep_bands",
    "b_min_sep_sigma",
    "b_min_sep_mse",
    "unamplified_bands",
    "unamplified_sigma",
    "unamplified_mse",
    "b_min_sep_over_dp_sgd",
    "b_min_sep_over_unamplified",
)


def best_rows(settings: MASettings, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per epsilon, the smallest-MSE row of each method and the MSE ratios."""
    out = []
    for epsilon in settings.epsilons:
        entry: dict[str, Any] = {"epsilon_target": epsilon}
        for method in METHODS:
            candidates = [
                r
                for r in rows
                if r["epsilon_target"] == epsilon
                and r["method"] == method
                and r.get("mse") is not None
            ]
            if candidates:
                best = min(candidates, key=lambda r: r["mse"])
                entry[f"{method}_sigma"] = best["sigma"]
                entry[f"{method}_mse"] = best["mse"]
                if method != "dp_sgd":
                    entry[f"{method}_bands"] = best["bands"]
        bms = entry.get("b_min_sep_mse")
        for other in ("dp_sgd", "unamplified"):
            value = entry.get(f"{other}_mse")
            entry[f"b_min_sep_over_{other}"] = bms / value if bms and value else None
        out.append(entry)
    return out


GRAPH_COLUMNS = ("quantity", "value")


def markdown(
    settings: MASettings,
    statistics: dict[str, Any],
    best: Sequence[dict[str, Any]],
    samples: int,
) -> str:
    """The graph statistics and the per-epsilon comparison."""
    parts = [
        f"n = {settings.n_steps}, δ = {settings.delta:g}, expected batch "
        f"{statistics['expected_batch']:.4g} (p0 = {statistics['rate']:.4g}), k_u = "
        f"{statistics['max_examples_per_author']}, bands ∈ {list(settings.bands)}, "
        f"{samples} Monte Carlo verification samples per direction.",
        "",
        markdown_table(
            ["graph", "value"],
            [[k.replace("_", " "), v] for k, v in statistics.items()],
        ),
        "",
        "Best MSE per method (σ at that configuration; ratios < 1: b-min-sep better):",
        "",
        markdown_table(
            [
                "ε",
                "DP-SGD σ",
                "DP-SGD MSE",
                "b-min-sep k=b",
                "σ",
                "MSE",
                "unamplified k",
                "σ",
                "MSE",
                "b-min-sep / DP-SGD",
                "b-min-sep / unamplified",
            ],
            [[r.get(c) for c in BEST_COLUMNS] for r in best],
        ),
    ]
    return "\n".join(parts)


def plot(path: Path, settings: MASettings, best: Sequence[dict[str, Any]]) -> Path | None:
    """Best MSE and its sigma against epsilon for the three methods."""
    eps = tuple(float(r["epsilon_target"]) for r in best)
    panels = [
        LinePanel(
            tuple(
                Series(LABELS[m], eps, tuple(r.get(f"{m}_{key}") for r in best)) for m in METHODS
            ),
            "target ε",
            ylabel,
            title,
        )
        for key, ylabel, title in (
            ("mse", "prefix-sum MSE (best over bands)", "Utility"),
            ("sigma", "noise multiplier σ", "Calibrated σ at the best bands"),
        )
    ]
    return plot_line_panels(
        path,
        panels,
        f"User-level privacy, synthetic co-authorship graph (k_u = 2), n = {settings.n_steps}, "
        f"δ = {settings.delta:g}",
    )


__all__ = ["BEST_COLUMNS", "GRAPH_COLUMNS", "LABELS", "METHODS", "best_rows", "markdown", "plot"]
