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

Run ``python -m paper.mse_comparison [--quick]`` or ``minsep paper mse_comparison [--quick]``.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from minsep.framework.compare import ComparisonRow, ComparisonSetup, compare
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import min_samples
from minsep.framework.setup import parse_strategy_spec
from minsep.framework.validation import (
    integer,
    one_of,
    optional,
    positive,
    positive_int,
    probability,
)
from minsep.paper.common import (
    EngineOptions,
    HeatPanel,
    Reporter,
    Stopwatch,
    add_common_arguments,
    float_list,
    int_list,
    markdown_table,
    plot_ratio_heatmaps,
    run_script,
    script_main,
    settings_with_overrides,
    tuple_of,
    write_csv,
    write_metadata,
    write_text,
)

NAME = "mse_comparison"
DEFAULT_SEED = 71

#: The families compared (DP-SGD and unamplified BandMF only as context rows).
FAMILIES: tuple[str, ...] = (
    "poisson",
    "cyclic_poisson",
    "balls_in_bins",
    "b_min_sep",
    "unamplified",
)


def paper_samples(delta: float) -> int:
    """``min_samples(delta/2, delta)``: the verification samples that certify ``delta`` when
    checking at base delta ``delta/2`` (75,013 at delta = 1e-3)."""
    return min_samples(delta / 2.0, delta)


def _strategy_specs(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a (possibly empty) tuple of strategy specs of registered strategies."""
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(
            f"MSESettings.strategies = {value!r} is invalid: must be a tuple of strategy specs "
            "(name or name:key=value:...)",
            parameter="strategies",
        )
    for spec in value:
        parse_strategy_spec(spec, owner="MSESettings.strategies")


@attrs.frozen(kw_only=True)
class MSESettings:
    """The grid of one run (the paper's full grid by default).

    Attributes:
        n_steps: training steps n.
        delta: target delta.
        epsilons: target epsilons.
        epoch_lengths: |D|/B values; the participation rate is 1/|D|/B.
        bands: numbers of bands of the MSE-optimal banded Toeplitz strategies.
        samples: Monte Carlo verification samples per direction (None: ``paper_samples``).
        families: schemes compared (a subset of :data:`FAMILIES`).
        strategies: extra strategy specs compared besides the bands grid (see the module).
    """

    n_steps: int = attrs.field(default=1024, validator=positive_int())
    delta: float = attrs.field(default=1e-3, validator=probability(open_high=True))
    epsilons: tuple[float, ...] = attrs.field(
        default=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0), validator=tuple_of(positive())
    )
    epoch_lengths: tuple[int, ...] = attrs.field(
        default=(128, 256, 512, 1024), validator=tuple_of(positive_int())
    )
    bands: tuple[int, ...] = attrs.field(
        default=(2, 4, 8, 16, 32), validator=tuple_of(positive_int())
    )
    samples: int | None = attrs.field(default=None, validator=optional(integer(low=100)))
    families: tuple[str, ...] = attrs.field(default=FAMILIES, validator=tuple_of(one_of(*FAMILIES)))
    strategies: tuple[str, ...] = attrs.field(default=(), validator=_strategy_specs)

    def resolved_samples(self) -> int:
        """``samples``, or :func:`paper_samples` of ``delta`` when None."""
        return self.samples if self.samples is not None else paper_samples(self.delta)

    def min_seps(self, bands: int, epoch_length: int) -> tuple[int, ...]:
        """The powers of two b with ``bands <= b <= epoch_length`` (the paper's b grid)."""
        return tuple(
            2**e for e in range(epoch_length.bit_length()) if bands <= 2**e <= epoch_length
        )

    def monte_carlo_rows(self) -> int:
        """How many Monte Carlo calibrations the grid needs (b-min-sep and balls-in-bins; an
        extra strategy counted at every b, as a strategy that is not banded)."""
        per_setup = 0
        for length in self.epoch_lengths:
            for k in self.bands:
                if "b_min_sep" in self.families:
                    per_setup += len(self.min_seps(k, length))
                if "balls_in_bins" in self.families:
                    per_setup += 1
            if "b_min_sep" in self.families:
                per_setup += len(self.strategies) * len(self.min_seps(1, length))
        return per_setup * len(self.epsilons)


#: The paper's grid (§7.1).
FULL = MSESettings()

#: The demo's setting (n = 1024, |D|/B = 256, delta = 1e-3, epsilon = 2) with the MSE-optimal
#: banded grid and its max-objective variant as extra strategy; the strategies that are not
#: banded are added on the command line (``--strategies blt,banded_inverse``).
DEMO = MSESettings(
    epsilons=(2.0,),
    epoch_lengths=(256,),
    bands=(4, 8, 16),
    strategies=("banded_toeplitz:bands=8:objective=max",),
)

#: The committed quick run: a corner of the paper's grid at the paper's n, delta and sample
#: count (verification at delta/2).
QUICK = MSESettings(epsilons=(1.0, 4.0), epoch_lengths=(128, 1024), bands=(4, 16))


@attrs.frozen
class Record:
    """One calibrated row of one setup (epsilon, epoch length)."""

    epsilon_target: float
    epoch_length: int
    row: ComparisonRow


def run_grid(
    settings: MSESettings,
    engine: EngineOptions,
    report: Callable[[str], None] = lambda _: None,
) -> tuple[list[Record], dict[str, Any]]:
    """Calibrate every row of every setup; returns the records and per-family timing."""
    samples = settings.resolved_samples()
    options = engine.accountant_options(samples)
    records: list[Record] = []
    seconds: dict[str, list[float]] = defaultdict(list)
    setups = [(e, length) for e in settings.epsilons for length in settings.epoch_lengths]
    for index, (epsilon, length) in enumerate(setups):
        setup = ComparisonSetup(
            n_steps=settings.n_steps,
            rate=1.0 / length,
            delta=settings.delta,
            epsilon=epsilon,
            bands=settings.bands,
            families=settings.families,
            strategies=settings.strategies,
            accountant_options=options,
        )

        def progress(done: int, total: int, label: str, index: int = index) -> None:
            if label:
                report(f"setup {index + 1}/{len(setups)} row {done + 1}/{total}: {label}")

        report(f"setup {index + 1}/{len(setups)}: epsilon {epsilon:g}, |D|/B {length}")
        for row in compare(setup, progress=progress):
            records.append(Record(epsilon, length, row))
            seconds[f"{row.family}:{row.accountant}"].append(row.seconds)
    timing = {
        key: {"rows": len(v), "total_s": sum(v), "mean_s": sum(v) / len(v)}
        for key, v in sorted(seconds.items())
    }
    return records, timing


# --- tables ----------------------------------------------------------------------------------

ROW_COLUMNS = (
    "epsilon_target",
    "epoch_length",
    "family",
    "strategy",
    "bands",
    "min_sep",
    "accountant",
    "sigma",
    "epsilon",
    "mse",
    "failure_probability",
    "note",
)


def row_dicts(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Plain rows for the all-rows CSV."""
    out = []
    for record in records:
        r = record.row
        out.append(
            {
                "epsilon_target": record.epsilon_target,
                "epoch_length": record.epoch_length,
                "family": r.family,
                "strategy": r.strategy,
                "bands": r.bands,
                "min_sep": r.min_sep,
                "accountant": r.accountant,
                "sigma": r.sigma,
                "epsilon": r.epsilon,
                "mse": r.mse,
                "failure_probability": r.failure_probability,
                "note": r.note,
            }
        )
    return out


#: Note of a balls-in-bins row taken from the b-min-sep calibration at b = |D|/B.
AS_B_MIN_SEP = "b-min-sep at b = |D|/B (p = 1): same loss model and draws"


def balls_in_bins_as_b_min_sep(records: Sequence[Record]) -> list[Record]:
    """``records`` with each balls-in-bins row replaced by the b-min-sep row of the same setup
    and bands at b = |D|/B, relabelled as balls-in-bins.

    Warm b-min-sep at b = 1/p0 samples with p = 1 and *is* balls-in-bins (docs/math.md §3), and
    that row is calibrated on the same draws as every other b of its setup, so "b-min-sep is
    never worse than balls-in-bins" holds exactly: the balls-in-bins candidates are a subset of
    the b-min-sep ones. A balls-in-bins row without such a twin (bands > |D|/B) is kept as
    accounted by its own loss model.
    """
    twins = {
        (rec.epsilon_target, rec.epoch_length, rec.row.bands): rec.row
        for rec in records
        if rec.row.family == "b_min_sep" and rec.row.min_sep == rec.epoch_length
    }
    out = []
    for rec in records:
        twin = twins.get((rec.epsilon_target, rec.epoch_length, rec.row.bands))
        if rec.row.family == "balls_in_bins" and twin is not None:
            row = attrs.evolve(twin, family=rec.row.family, label=rec.row.label, note=AS_B_MIN_SEP)
            rec = Record(rec.epsilon_target, rec.epoch_length, row)
        out.append(rec)
    return out


def best_rows(records: Sequence[Record]) -> dict[tuple[float, int, str], ComparisonRow]:
    """The smallest-MSE certified row per (epsilon, epoch length, family)."""
    best: dict[tuple[float, int, str], ComparisonRow] = {}
    for record in records:
        r = record.row
        if r.mse is None or not math.isfinite(r.mse):
            continue
        key = (record.epsilon_target, record.epoch_length, r.family)
        if key not in best or r.mse < (best[key].mse or math.inf):
            best[key] = r
    return best


BEST_COLUMNS = (
    "epsilon_target",
    "epoch_length",
    "family",
    "strategy",
    "bands",
    "min_sep",
    "sigma",
    "mse",
)

RATIO_COLUMNS = (
    "epsilon_target",
    "epoch_length",
    "b_min_sep_mse",
    "b_min_sep_bands",
    "b_min_sep_b",
    "cyclic_poisson_mse",
    "cyclic_poisson_bands",
    "balls_in_bins_mse",
    "balls_in_bins_bands",
    "dp_sgd_mse",
    "ratio_vs_cyclic_poisson",
    "ratio_vs_balls_in_bins",
)


def ratio_rows(
    settings: MSESettings, best: dict[tuple[float, int, str], ComparisonRow]
) -> list[dict[str, Any]]:
    """Per setup: the best MSE of each scheme and the two ratios of Fig. 2 and 3."""

    def ratio(a: ComparisonRow | None, b: ComparisonRow | None) -> float | None:
        if a is None or b is None or a.mse is None or not b.mse:
            return None
        return float(a.mse) / float(b.mse)

    out = []
    for epsilon in settings.epsilons:
        for length in settings.epoch_lengths:
            bms = best.get((epsilon, length, "b_min_sep"))
            cyc = best.get((epsilon, length, "cyclic_poisson"))
            bib = best.get((epsilon, length, "balls_in_bins"))
            sgd = best.get((epsilon, length, "poisson"))
            out.append(
                {
                    "epsilon_target": epsilon,
                    "epoch_length": length,
                    "b_min_sep_mse": bms and bms.mse,
                    "b_min_sep_bands": bms and bms.bands,
                    "b_min_sep_b": bms and bms.min_sep,
                    "cyclic_poisson_mse": cyc and cyc.mse,
                    "cyclic_poisson_bands": cyc and cyc.bands,
                    "balls_in_bins_mse": bib and bib.mse,
                    "balls_in_bins_bands": bib and bib.bands,
                    "dp_sgd_mse": sgd and sgd.mse,
                    "ratio_vs_cyclic_poisson": ratio(bms, cyc),
                    "ratio_vs_balls_in_bins": ratio(bms, bib),
                }
            )
    return out


def ratio_grid(
    settings: MSESettings, ratios: Sequence[dict[str, Any]], key: str
) -> tuple[tuple[float | None, ...], ...]:
    """``key`` as a grid: rows epsilons, columns epoch lengths."""
    table = {(r["epsilon_target"], r["epoch_length"]): r[key] for r in ratios}
    return tuple(
        tuple(table.get((e, length)) for length in settings.epoch_lengths)
        for e in settings.epsilons
    )


def strategy_rows(settings: MSESettings, records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per setup, scheme family and strategy: the best certified row of that strategy (over
    bands and b) and its MSE over the family's best; the winner has ratio 1."""
    best: dict[tuple[float, int, str, str], ComparisonRow] = {}
    for record in records:
        r = record.row
        if r.mse is None or not math.isfinite(r.mse):
            continue
        key = (record.epsilon_target, record.epoch_length, r.family, _strategy_kind(r))
        if key not in best or r.mse < (best[key].mse or math.inf):
            best[key] = r
    top: dict[tuple[float, int, str], float] = {}
    for (e, length, family, _), r in best.items():
        assert r.mse is not None
        top[(e, length, family)] = min(top.get((e, length, family), math.inf), r.mse)
    return [
        {
            "epsilon_target": e,
            "epoch_length": length,
            "family": family,
            "strategy": kind,
            "bands": r.bands,
            "min_sep": r.min_sep,
            "sigma": r.sigma,
            "mse": r.mse,
            "mse_over_best": (r.mse or math.nan) / top[(e, length, family)],
        }
        for (e, length, family, kind), r in sorted(best.items(), key=lambda kv: kv[0])
    ]


def _strategy_kind(row: ComparisonRow) -> str:
    """The strategy a row compares: the bands grid's rows are one kind (MSE-optimal banded
    Toeplitz, any k; the identity for DP-SGD), each extra spec another."""
    if row.strategy.startswith("banded_toeplitz/") or row.strategy.startswith("identity"):
        return "banded_toeplitz (grid)" if row.strategy.startswith("banded") else "identity"
    return row.strategy


STRATEGY_COLUMNS = (
    "epsilon_target",
    "epoch_length",
    "family",
    "strategy",
    "bands",
    "min_sep",
    "sigma",
    "mse",
    "mse_over_best",
)


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


# --- entry points ----------------------------------------------------------------------------


def run_experiment(
    settings: MSESettings,
    engine: EngineOptions,
    output_dir: Path,
    *,
    plots: bool = True,
    mode: str = "custom",
) -> dict[str, Path]:
    """Run the grid and write ``mse_comparison_{rows,best,ratios}.csv``, ``.json``, ``.md``
    and ``mse_comparison.png`` into ``output_dir``; returns the paths written."""
    clock = Stopwatch()
    report = Reporter(NAME, engine.progress, clock)
    samples = settings.resolved_samples()
    records, timing = run_grid(settings, engine, report)
    best = best_rows(balls_in_bins_as_b_min_sep(records))
    ratios = ratio_rows(settings, best)
    by_strategy = strategy_rows(settings, records)
    text = markdown(settings, ratios, samples)
    if settings.strategies:
        text += "\n\nBest row of each strategy per scheme (MSE/best = 1: the winning strategy):\n\n"
        text += strategy_markdown(by_strategy)
    written = {
        "rows": write_csv(output_dir / f"{NAME}_rows.csv", ROW_COLUMNS, row_dicts(records)),
        "best": write_csv(
            output_dir / f"{NAME}_best.csv",
            BEST_COLUMNS,
            [
                {"epsilon_target": e, "epoch_length": length, **attrs.asdict(r)}
                for (e, length, _), r in best.items()
            ],
        ),
        "ratios": write_csv(output_dir / f"{NAME}_ratios.csv", RATIO_COLUMNS, ratios),
        "strategies": write_csv(
            output_dir / f"{NAME}_strategies.csv", STRATEGY_COLUMNS, by_strategy
        ),
        "markdown": write_text(output_dir / f"{NAME}.md", text),
    }
    if plots:
        figure = plot(output_dir / f"{NAME}.png", settings, ratios)
        if figure is not None:
            written["figure"] = figure
    full = FULL
    mc_seconds = [v["total_s"] for k, v in timing.items() if k.endswith(":monte_carlo")]
    mc_rows = sum(v["rows"] for k, v in timing.items() if k.endswith(":monte_carlo"))
    per_row = sum(mc_seconds) / mc_rows if mc_rows else math.nan
    scale = full.resolved_samples() / samples
    written["metadata"] = write_metadata(
        output_dir / f"{NAME}.json",
        {
            "mode": mode,
            "settings": settings,
            "samples": samples,
            "engine": engine.record(),
            "monte_carlo_calibrations": settings.monte_carlo_rows(),
        },
        {
            "wall_s": clock.wall,
            "cpu_s_main_process": clock.cpu,
            "workers": engine.workers,
            "per_family": timing,
            "monte_carlo_wall_s_per_calibration": per_row,
            "full_grid_monte_carlo_calibrations": full.monte_carlo_rows(),
            "full_grid_projected_wall_s": per_row * scale * full.monte_carlo_rows(),
            "projection_note": "mean wall seconds per Monte Carlo calibration of this run x "
            "(full samples / these samples) x full-grid calibrations, at this run's workers",
        },
    )
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The script's options (common ones plus grid overrides)."""
    add_common_arguments(parser, DEFAULT_SEED)
    grid = parser.add_argument_group("grid overrides")
    grid.add_argument("--epsilons", type=float_list, help="target epsilons, e.g. 0.5,1,2")
    grid.add_argument("--epoch-lengths", type=int_list, help="|D|/B values, e.g. 128,256")
    grid.add_argument("--bands", type=int_list, help="numbers of bands, e.g. 2,4,8")
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


def run(args: argparse.Namespace) -> int:
    """Run from parsed arguments; prints the markdown tables."""
    return run_script(args, settings_from_args, run_experiment, NAME)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paper.mse_comparison``."""
    return script_main("mse_comparison", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
