"""The markdown tables and the heat maps of paper §7.1 (:mod:`minsep.paper.mse_comparison`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minsep.paper.mse_settings import MSESettings
from minsep.paper.mse_tables import ratio_grid
from minsep.paper.output import markdown_table
from minsep.paper.plots import HeatPanel, plot_ratio_heatmaps


def strategy_markdown(strategies: Sequence[dict[str, Any]]) -> str:
    """The best row of each strategy per setup and scheme (``MSE/best`` 1: the winner)."""
    rows = [
        [
            f"{r['epsilon_target']:g}",
            r["epoch_length"],
            r["family"],
            r["strategy"],
            r["bands"],
            r["min_sep"],
            r["sigma"],
            r["mse"],
            r["mse_over_best"],
        ]
        for r in strategies
    ]
    heads = ["ε", "\\|D\\|/B", "scheme", "strategy", "k", "b", "σ", "MSE", "MSE/best"]
    return markdown_table(heads, rows)


def markdown(settings: MSESettings, ratios: Sequence[dict[str, Any]], samples: int) -> str:
    """The two ratio tables (Fig. 2, Fig. 3) and the best configuration per setup."""
    heads = ["ε \\ \\|D\\|/B", *[str(length) for length in settings.epoch_lengths]]
    parts = [
        f"n = {settings.n_steps}, δ = {settings.delta:g}, bands ∈ {list(settings.bands)}, "
        f"{samples} Monte Carlo verification samples per direction.",
        "",
        "MSE ratio b-min-sep / cyclic Poisson (Fig. 2; < 1: b-min-sep better):",
        "",
    ]
    for key, title in (
        ("ratio_vs_cyclic_poisson", None),
        ("ratio_vs_balls_in_bins", "MSE ratio b-min-sep / balls-in-bins (Fig. 3):"),
    ):
        if title:
            parts += ["", title, ""]
        grid = ratio_grid(settings, ratios, key)
        rows = [[f"{e:g}", *row] for e, row in zip(settings.epsilons, grid, strict=True)]
        parts.append(markdown_table(heads, rows, digits=3))
    parts += ["", "Best configuration per setup (MSE; b-min-sep as bands/b):", ""]
    rows = [
        [
            f"{r['epsilon_target']:g}",
            r["epoch_length"],
            r["b_min_sep_mse"],
            f"{r['b_min_sep_bands']}/{r['b_min_sep_b']}" if r["b_min_sep_mse"] else None,
            r["cyclic_poisson_mse"],
            r["cyclic_poisson_bands"],
            r["balls_in_bins_mse"],
            r["balls_in_bins_bands"],
            r["dp_sgd_mse"],
        ]
        for r in ratios
    ]
    parts.append(
        markdown_table(
            [
                "ε",
                "\\|D\\|/B",
                "b-min-sep MSE",
                "k/b",
                "cyclic MSE",
                "k",
                "balls-in-bins MSE",
                "k",
                "DP-SGD MSE",
            ],
            rows,
        )
    )
    return "\n".join(parts)


def plot(path: Path, settings: MSESettings, ratios: Sequence[dict[str, Any]]) -> Path | None:
    """Fig. 2 and 3 analogues side by side."""
    rows = tuple(f"{e:g}" for e in settings.epsilons)
    columns = tuple(str(length) for length in settings.epoch_lengths)
    panels = [
        HeatPanel(
            ratio_grid(settings, ratios, key),
            rows,
            columns,
            title,
            "epoch length |D|/B",
            "target ε",
        )
        for key, title in (
            ("ratio_vs_cyclic_poisson", "b-min-sep / cyclic Poisson"),
            ("ratio_vs_balls_in_bins", "b-min-sep / balls-in-bins"),
        )
    ]
    return plot_ratio_heatmaps(
        path,
        panels,
        "MSE ratio (< 1: b-min-sep better)",
        f"Best-MSE ratios, n = {settings.n_steps}, δ = {settings.delta:g}",
    )


__all__ = ["markdown", "plot", "strategy_markdown"]
