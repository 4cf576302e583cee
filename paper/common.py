"""Shared plumbing of the paper scripts: options, deterministic CSV output, tables and plots.

Every script writes into one output folder:

- ``<name>*.csv``: the numbers, floats with :data:`DIGITS` significant digits, so that a rerun
  with the same options reproduces the files byte for byte (tiny platform noise stays below
  the printed precision);
- ``<name>.json``: the settings that produced them (deterministic) and a ``timing`` block
  (wall and CPU seconds; the only part that differs between reruns);
- ``<name>.md``: the tables as markdown (pasted into ``paper/README.md``);
- ``<name>*.png``: the figures (matplotlib with the Agg backend, the optional ``plot`` extra;
  skipped with a warning when matplotlib is missing).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from minsep.framework.cli.common import nonnegative_int, positive_int
from minsep.framework.environment import environment
from minsep.framework.validation import Validator, fail
from minsep.framework.workers import parse_workers, resolve_workers

#: Significant digits of every float written to a CSV or markdown table.
DIGITS = 6

#: Where the committed quick-mode outputs live (written only when asked: ``--output``).
OUTPUT_DIR = Path(__file__).resolve().parent / "outputs"

#: Where runs go by default: a fresh folder per run under this one (relative to the working
#: directory; ``runs/`` is ignored by git).
RUNS_DIR = Path("runs")


def fresh_output_dir(name: str, root: Path = RUNS_DIR) -> Path:
    """A new folder ``<root>/paper-<name>-<UTC timestamp>`` (suffixed ``-2``, ``-3``, ...
    when taken), created, so that no run overwrites another's or the committed outputs."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = root / f"paper-{name}-{stamp}"
    path, count = base, 1
    while True:
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            count += 1
            path = base.with_name(f"{base.name}-{count}")


# --- numbers ---------------------------------------------------------------------------------


def fmt(value: Any, digits: int = DIGITS) -> str:
    """A cell: floats with ``digits`` significant digits, None as empty, others as ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = f"{value:.{digits}g}"
        return "0" if text == "-0" else text
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` (missing keys empty) with a header line; floats via :func:`fmt`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([fmt(row.get(column)) for column in columns])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV written by :func:`write_csv` (values as strings)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


#: Relative tolerance of numeric cells when a rerun is compared with the committed outputs:
#: twice the PLD calibration's ``sigma_rtol`` (1e-3). dp_accounting's PLD composition (FFT
#: convolutions through numpy/scipy) moves epsilon in the last digits between releases, and
#: the sigma bisection may then stop elsewhere in its 1e-3 bracket (paper/README.md).
RERUN_RTOL = 2e-3


def csv_differences(
    produced: Sequence[Mapping[str, str]],
    committed: Sequence[Mapping[str, str]],
    rtol: float = RERUN_RTOL,
) -> list[str]:
    """The cells in which two CSVs (as :func:`read_csv` rows) differ: text exactly, cells that
    both parse as numbers within ``rtol`` relative (equal infinities and NaNs agree); a
    different row count or header is one difference."""
    if len(produced) != len(committed):
        return [f"{len(produced)} rows produced, {len(committed)} committed"]
    out = []
    for index, (new, old) in enumerate(zip(produced, committed, strict=True)):
        if list(new) != list(old):
            return [f"columns {list(new)} produced, {list(old)} committed"]
        for column, text in new.items():
            if not _same_cell(text, old[column], rtol):
                out.append(
                    f"row {index + 1} {column}: {text!r} produced, {old[column]!r} committed"
                )
    return out


def _same_cell(a: str, b: str, rtol: float) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
        return False  # equal spellings were accepted above
    return math.isclose(x, y, rel_tol=rtol, abs_tol=0.0)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    """A GitHub markdown table; floats with ``digits`` significant digits, None as ``-``."""

    def cell(value: Any) -> str:
        return "-" if value is None else fmt(value, digits)

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` (a trailing newline added), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    return path


def _plain(value: Any) -> Any:
    if attrs.has(type(value)):
        return {k: _plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def write_metadata(path: Path, settings: Mapping[str, Any], timing: Mapping[str, Any]) -> Path:
    """``{"settings", "timing", "environment"}`` as indented JSON: the settings are
    deterministic; ``environment`` records the package versions and the git commit that
    produced the outputs (:func:`minsep.framework.environment.environment`)."""
    data = {"settings": _plain(settings), "timing": _plain(timing), "environment": environment()}
    return write_text(path, json.dumps(data, indent=2, sort_keys=True))


# --- validation ------------------------------------------------------------------------------


def tuple_of(validator: Validator) -> Validator:
    """attrs validator: a non-empty tuple whose every item passes ``validator``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, tuple) or not value:
            raise fail(instance, attribute.name, value, "a non-empty tuple")
        for item in value:
            validator(instance, attribute, item)

    return validate


# --- timing and progress ---------------------------------------------------------------------


@attrs.define
class Stopwatch:
    """Wall and CPU (this process) seconds since construction."""

    wall0: float = attrs.field(factory=time.perf_counter)
    cpu0: float = attrs.field(factory=time.process_time)

    @property
    def wall(self) -> float:
        """Wall seconds elapsed."""
        return time.perf_counter() - self.wall0

    @property
    def cpu(self) -> float:
        """CPU seconds of this process elapsed (worker processes not included)."""
        return time.process_time() - self.cpu0


@attrs.define
class Reporter:
    """One line on stderr per unit of work (only when enabled: default, a terminal)."""

    name: str
    enabled: bool
    clock: Stopwatch = attrs.field(factory=Stopwatch)

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"[{self.name} {self.clock.wall:7.1f}s] {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """One line on stderr."""
    print(f"paper: {message}", file=sys.stderr, flush=True)


# --- options ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class EngineOptions:
    """How the Monte Carlo work runs (never what it computes, except ``seed``).

    Attributes:
        seed: root seed of every Monte Carlo stream (results are reproducible given it).
        workers: worker processes (results do not depend on it).
        backend: ``"numpy"`` or ``"cupy"`` (a GPU; same random streams, same results up to
            rounding).
        scheduler: address or scheduler file of a running Dask cluster (implies Dask).
        progress: show progress lines on stderr.
    """

    seed: int
    workers: int = 1
    backend: str = "numpy"
    scheduler: str | None = None
    progress: bool = False

    def accountant_options(self, samples: int) -> dict[str, Any]:
        """Options for :class:`~minsep.accountants.monte_carlo.MonteCarloAccountant`, flat
        (:func:`~minsep.framework.setup.build_accountant` groups them into its records)."""
        options: dict[str, Any] = {
            "samples": samples,
            "seed": self.seed,
            "workers": self.workers,
            "backend": self.backend,
            "progress": False,
        }
        if self.scheduler is not None:
            options["scheduler"] = self.scheduler
        return options

    def record(self) -> dict[str, Any]:
        """The parts that determine the numbers (for the settings record)."""
        return {"seed": self.seed, "backend": self.backend}


def float_list(text: str) -> tuple[float, ...]:
    """Comma-separated positive finite numbers (an argparse type)."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be positive numbers, e.g. 1,2")
    return values


def int_list(text: str) -> tuple[int, ...]:
    """Comma-separated integers >= 1 (an argparse type)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be integers >= 1, e.g. 4,16")
    return values


def add_common_arguments(parser: argparse.ArgumentParser, default_seed: int) -> None:
    """``--quick``, ``--output-dir``, ``--samples``, ``--seed``, ``--workers``, ``--backend``,
    ``--scheduler``, ``--no-plot``, ``--progress``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the reduced grid whose outputs are committed (wall times: paper/README.md)",
    )
    parser.add_argument(
        "--output-dir",
        "--output",
        type=Path,
        default=None,
        help="folder for the CSV, JSON, markdown and PNG outputs (default: a fresh "
        f"{RUNS_DIR}/paper-NAME-<UTC time>/; '--output paper/outputs' overwrites the committed "
        "results)",
    )
    parser.add_argument(
        "--samples",
        type=positive_int,
        help="Monte Carlo verification samples per direction (default: the mode's own)",
    )
    parser.add_argument(
        "--seed",
        type=nonnegative_int,
        default=default_seed,
        help=f"root seed of the Monte Carlo streams (default {default_seed})",
    )
    parser.add_argument(
        "--workers",
        type=parse_workers,
        default=1,
        help="Monte Carlo worker processes, or auto (the CPUs free now; default 1)",
    )
    parser.add_argument(
        "--backend",
        default="numpy",
        choices=("numpy", "cupy", "auto"),
        help="array backend of the Monte Carlo engine (cupy: a CUDA GPU)",
    )
    parser.add_argument(
        "--scheduler",
        help="a running Dask scheduler (tcp://host:8786 or a scheduler file) for the Monte "
        "Carlo chunks",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG figures")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress lines on stderr (default: only on a terminal)",
    )


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """The :class:`EngineOptions` of parsed common arguments."""
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    return EngineOptions(
        seed=args.seed,
        workers=resolve_workers(args.workers, "paper", "--workers"),
        backend=args.backend,
        scheduler=args.scheduler,
        progress=progress,
    )


# --- plots -----------------------------------------------------------------------------------


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


def run_script(
    args: argparse.Namespace,
    settings_from_args: Callable[[argparse.Namespace], tuple[Any, str]],
    run_experiment: Callable[..., dict[str, Path]],
    name: str = "run",
) -> int:
    """Run one script from parsed arguments; print its markdown tables and what it wrote
    (into ``--output-dir``, else a :func:`fresh_output_dir` named after ``name``)."""
    settings, mode = settings_from_args(args)
    output = args.output_dir
    if output is None:
        output = fresh_output_dir(name)
    written = run_experiment(
        settings, engine_options(args), output, plots=not args.no_plot, mode=mode
    )
    print(written["markdown"].read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(p) for p in written.values()))
    return 0


def script_main(
    name: str,
    doc: str | None,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None,
) -> int:
    """``python -m paper.<name>``: parse ``argv`` with the script's options and run it."""
    parser = argparse.ArgumentParser(
        prog=f"python -m paper.{name}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


S = TypeVar("S")


def settings_with_overrides(
    args: argparse.Namespace, quick: S, full: S, grid_keys: Sequence[str]
) -> tuple[S, str]:
    """The quick or full settings with ``--samples`` and grid overrides applied, and the mode's
    name (``"(modified)"`` once the grid differs from the documented one)."""
    settings, mode = (quick, "quick") if args.quick else (full, "full")
    changes: dict[str, Any] = {}
    if args.samples is not None:
        changes["samples"] = args.samples
    for key in grid_keys:
        if getattr(args, key, None) is not None:
            changes[key] = getattr(args, key)
    if changes:
        settings = attrs.evolve(settings, **changes)  # type: ignore[misc]
        if set(changes) - {"samples"}:
            mode = f"{mode} (modified)"
    return settings, mode
