"""The paper figures (issue 19, item 7): the ratio colour scale spans the data, centred at 1,
and the production figure draws from the committed outputs with a short legend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from minsep.paper import mse_comparison, production
from minsep.paper.common import (
    OUTPUT_DIR,
    RATIO_MARGIN,
    HeatPanel,
    plot_ratio_heatmaps,
    ratio_colour_range,
    read_csv,
)

pytest.importorskip("matplotlib")


def test_ratio_colour_range_fits_the_data() -> None:
    assert ratio_colour_range([0.44, 0.8, 1.18]) == (0.44, 1.18)
    # One-sided data still put 1 (white) on the scale, just past it.
    assert ratio_colour_range([1.05, 1.3]) == (1.0 - RATIO_MARGIN, 1.3)
    assert ratio_colour_range([0.5, 0.9]) == (0.5, 1.0 + RATIO_MARGIN)
    assert ratio_colour_range([float("nan"), float("inf")]) == (
        1.0 - RATIO_MARGIN,
        1.0 + RATIO_MARGIN,
    )


def _numbers(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        item: dict[str, Any] = {}
        for key, text in row.items():
            try:
                item[key] = None if text == "" else float(text)
            except ValueError:
                item[key] = text
        out.append(item)
    return out


def test_heat_map_colour_bar_spans_the_data(tmp_path: Path, monkeypatch: Any) -> None:
    import matplotlib.figure

    limits: list[tuple[float, float]] = []
    original = matplotlib.figure.Figure.colorbar

    def spy(self: Any, mappable: Any, *args: Any, **kwargs: Any) -> Any:
        limits.append((mappable.norm.vmin, mappable.norm.vmax))
        return original(self, mappable, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "colorbar", spy)
    panel = HeatPanel(((0.44, 1.18), (0.9, None)), ("1", "4"), ("128", "1024"), "t", "x", "y")
    assert plot_ratio_heatmaps(tmp_path / "h.png", [panel], "ratio", "s") is not None
    assert limits == [(0.44, 1.18)]
    ratios = _numbers(read_csv(OUTPUT_DIR / "mse_comparison_ratios.csv"))
    assert mse_comparison.plot(tmp_path / "m.png", mse_comparison.QUICK, ratios) is not None
    values = [r[k] for r in ratios for k in ("ratio_vs_cyclic_poisson", "ratio_vs_balls_in_bins")]
    assert limits[-1] == ratio_colour_range(values) == (min(values), 1.0 + RATIO_MARGIN)


def test_production_figure_keeps_the_legend_to_the_curves(tmp_path: Path, monkeypatch: Any) -> None:
    import matplotlib.figure

    entries: list[int] = []
    original = matplotlib.figure.Figure.legend

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        legend = original(self, *args, **kwargs)
        entries.append(len(legend.get_texts()))
        return legend

    monkeypatch.setattr(matplotlib.figure.Figure, "legend", spy)
    pld = _numbers(read_csv(OUTPUT_DIR / "production_pld.csv"))
    mc = _numbers(read_csv(OUTPUT_DIR / "production_monte_carlo.csv"))
    for row in mc:
        row["samples"] = int(row["samples"])
    assert production.plot(tmp_path / "p.png", production.QUICK, pld, mc) is not None
    schemes = {row["scheme"] for row in mc}
    assert entries == [len(schemes) + 2]  # the Monte Carlo curves, the exact one, target ε
