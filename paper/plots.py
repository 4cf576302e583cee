"""The paper scripts' figures: matplotlib on the Agg backend (the optional ``plot`` extra),
ratio heat maps centred at 1 and line panels; skipped with a warning when matplotlib is
missing. PNGs are saved without version metadata, so reruns differ only where the data do."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs


def warn(message: str) -> None:
    """One line on stderr."""
    print(f"paper: {message}", file=sys.stderr, flush=True)


def pyplot(name: str) -> Any:
    """matplotlib's pyplot on the Agg backend, or None (with a warning naming the figure
    ``name``) when the optional ``plot`` extra is missing."""
    try:
        import matplotlib
    except ImportError:
        warn(f"matplotlib is not installed (pip install 'minsep[plot]'): skipping {name}")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: matplotlib settings of every figure.
STYLE: dict[str, Any] = {"figure.dpi": 100, "savefig.dpi": 110, "font.size": 9}


def save_figure(figure: Any, path: Path) -> Path:
    """Save as PNG without the version metadata (smaller diffs between reruns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", bbox_inches="tight", metadata={"Software": None})
    return path


@attrs.frozen
class HeatPanel:
    """One annotated heat map: ``values[i][j]`` at row ``row_labels[i]``, column ``j``."""

    values: tuple[tuple[float | None, ...], ...]
    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    title: str
    xlabel: str
    ylabel: str


#: How far the colour scale reaches past 1 on a side the data do not reach (so that 1, white,
#: is always on the scale).
RATIO_MARGIN = 0.01
#: The smallest ratio (and inverse) drawn at full colour: nearer ratios stay pale, so that a
#: 1 % difference never looks like a large one.
RATIO_MIN_SPAN = 1.25


def ratio_colour_range(values: Sequence[float]) -> tuple[float, float]:
    """``(vmin, vmax)`` of a ratio colour scale centred at 1: the data's own range, widened
    to just past 1 on a side without data (so both halves of the diverging map exist), and
    ``1 -+ RATIO_MARGIN`` when there is no finite positive value."""
    finite = [v for v in values if math.isfinite(v) and v > 0]
    low = min([*finite, 1.0 - RATIO_MARGIN])
    high = max([*finite, 1.0 + RATIO_MARGIN])
    return min(low, 1.0 - RATIO_MARGIN), max(high, 1.0 + RATIO_MARGIN)


def plot_ratio_heatmaps(
    path: Path, panels: Sequence[HeatPanel], colorbar_label: str, suptitle: str
) -> Path | None:
    """Side-by-side heat maps of MSE ratios on a diverging scale centred at 1 (blue < 1 <
    red) that spans the data (:func:`ratio_colour_range`), each cell annotated with its value;
    missing cells grey. Returns None when matplotlib is missing."""
    plt = pyplot(path.name)
    if plt is None:
        return None
    import numpy as np
    from matplotlib.colors import ListedColormap, LogNorm

    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(
            1, len(panels), figsize=(4.2 * len(panels) + 0.8, 3.6), squeeze=False
        )
        finite = [
            v for p in panels for row in p.values for v in row if v is not None and math.isfinite(v)
        ]
        low, high = ratio_colour_range(finite)
        # Colours symmetric in log scale around 1 (r and 1/r equally strong, white at 1), but
        # the scale drawn only over the data: the slice of RdBu_r that [low, high] occupies.
        span = max(abs(math.log(low)), abs(math.log(high)), math.log(RATIO_MIN_SPAN))

        def position(value: float) -> float:
            return 0.5 + math.log(value) / (2.0 * span)

        full = plt.get_cmap("RdBu_r")
        sliced = full(np.linspace(position(low), position(high), 256))
        cmap = ListedColormap(sliced).with_extremes(bad="0.85")
        norm = LogNorm(vmin=low, vmax=high)
        image = None
        for axis, panel in zip(axes[0], panels, strict=True):
            data = np.array(
                [[np.nan if v is None else v for v in row] for row in panel.values], dtype=float
            )
            image = axis.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=norm, aspect="auto")
            axis.set_xticks(range(len(panel.column_labels)), panel.column_labels)
            axis.set_yticks(range(len(panel.row_labels)), panel.row_labels)
            axis.set_xlabel(panel.xlabel)
            axis.set_ylabel(panel.ylabel)
            axis.set_title(panel.title)
            for i, row in enumerate(panel.values):
                for j, value in enumerate(row):
                    text = "-" if value is None else f"{value:.2f}"
                    dark = value is not None and value > 0 and abs(position(value) - 0.5) > 0.3
                    colour = "white" if dark else "black"
                    axis.text(j, i, text, ha="center", va="center", fontsize=8, color=colour)
        if image is not None:
            bar = figure.colorbar(image, ax=axes[0].tolist(), shrink=0.9)
            bar.set_label(colorbar_label)
            nice = [v for v in (0.25, 0.5, 0.75, 1.25, 1.5, 2.0, 3.0, 4.0) if low < v < high]
            ticks = [1.0, *nice]
            for end in (low, high):  # the data's ends, unless they would overprint a tick
                if all(abs(math.log(end / t)) > 0.05 for t in ticks):
                    ticks.append(end)
            bar.set_ticks(sorted(ticks))
            bar.ax.minorticks_off()
            bar.ax.yaxis.set_major_formatter(lambda value, _: f"{value:.2f}")
        figure.suptitle(suptitle, y=1.03)
        try:
            return save_figure(figure, path)
        finally:
            plt.close(figure)


@attrs.frozen
class Series:
    """One line of a line plot (points with a None y are left out)."""

    label: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    marker: str = "o"


@attrs.frozen
class LinePanel:
    """One axis of :func:`plot_line_panels`."""

    series: tuple[Series, ...]
    xlabel: str
    ylabel: str
    title: str
    logx: bool = True
    logy: bool = True


def plot_line_panels(path: Path, panels: Sequence[LinePanel], suptitle: str) -> Path | None:
    """Line plots side by side, each with labelled axes and a legend (log axes by default,
    x in base 2 with the data's ticks). Returns None when matplotlib is missing."""
    plt = pyplot(path.name)
    if plt is None:
        return None
    from matplotlib import ticker

    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.9), squeeze=False)
        for axis, panel in zip(axes[0], panels, strict=True):
            for line in panel.series:
                points = [(x, y) for x, y in zip(line.x, line.y, strict=True) if y is not None]
                if not points:
                    continue
                xs, ys = zip(*points, strict=True)
                axis.plot(xs, ys, marker=line.marker, label=line.label)
            if panel.logx:
                axis.set_xscale("log", base=2)
            if panel.logy:
                axis.set_yscale("log")
                axis.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                axis.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                axis.yaxis.set_minor_formatter(ticker.NullFormatter())
            ticks = sorted({x for line in panel.series for x in line.x})
            axis.set_xticks(ticks, [f"{x:g}" for x in ticks])
            axis.set_xlabel(panel.xlabel)
            axis.set_ylabel(panel.ylabel)
            axis.set_title(panel.title)
            axis.grid(True, which="both", alpha=0.3)
            axis.legend()
        figure.suptitle(suptitle, y=1.02)
        try:
            return save_figure(figure, path)
        finally:
            plt.close(figure)


__all__ = [
    "RATIO_MARGIN",
    "RATIO_MIN_SPAN",
    "STYLE",
    "HeatPanel",
    "LinePanel",
    "Series",
    "plot_line_panels",
    "plot_ratio_heatmaps",
    "pyplot",
    "ratio_colour_range",
    "save_figure",
    "warn",
]
