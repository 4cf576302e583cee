"""A scheme comparison as a table, CSV or JSON, with its warnings about Monte Carlo rows
verified with few samples."""

from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import attrs

from minsep.framework.compare_row import ComparisonRow
from minsep.framework.compare_setup import ComparisonSetup
from minsep.framework.environment import environment
from minsep.framework.errors import (
    ConfigurationError,
)
from minsep.framework.format import fmt
from minsep.framework.montecarlo.bounds import min_samples

COLUMNS: tuple[tuple[str, str], ...] = (
    ("label", "scheme"),
    ("bands", "bands"),
    ("min_sep", "b"),
    ("sigma", "sigma"),
    ("sigma_low", "sigma low"),
    ("epsilon", "cert. eps"),
    ("accounted_delta", "delta used"),
    ("samples", "samples"),
    ("mse", "MSE"),
    ("mse_ratio", "MSE/best"),
    ("accountant", "accountant"),
)

#: A Monte Carlo row should keep at least this fraction of the target delta as its base delta
#: (the rest pays for the verification failure, docs/math.md §7); fewer samples are warned.
BASE_DELTA_FRACTION = 0.5

#: The table's legend of the columns that are not self-explanatory.
LEGEND = (
    "sigma low: the smallest sigma meeting the target lies in [sigma low, sigma] (exact rows: "
    "the search bracket; Monte Carlo rows: the sigma of the point estimate alone, so the gap is "
    "the cost of verifying with these samples). delta used: the target delta for exact rows, "
    "the base delta Monte Carlo rows were verified at; samples: verification samples per "
    "direction."
)


def recommended_samples(delta: float) -> int | None:
    """Verification samples per direction with which a Monte Carlo row keeps a base delta of
    at least ``BASE_DELTA_FRACTION * delta`` (:func:`~minsep.framework.montecarlo.bounds.
    min_samples`); None when no feasible run does."""
    try:
        return min_samples(BASE_DELTA_FRACTION * delta, delta)
    except ConfigurationError:
        return None


def sample_warnings(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> list[str]:
    """One warning per distinct sample count of Monte Carlo rows below
    :func:`recommended_samples`: their sigma is inflated by the verification margin, so their
    MSE ratios against exact rows depend on the sample count, not only on the scheme."""
    need = recommended_samples(setup.delta)
    kept = BASE_DELTA_FRACTION * setup.delta
    out = []
    for samples in sorted({r.samples for r in rows if r.samples is not None}):
        if need is not None and samples >= need:
            continue
        same = [r for r in rows if r.samples == samples]
        if all(r.base_delta is not None and r.base_delta >= kept for r in same):
            continue  # they kept the base delta anyway (escort rows: s x_b, docs/rdp-escort.md)
        bases = [r.base_delta for r in rows if r.samples == samples and r.base_delta]
        base = f" at base delta {fmt(min(bases), 3)}" if bases else ""
        wanted = (
            f"needs >= {need:,} samples per direction for a base delta >= "
            f"{BASE_DELTA_FRACTION:g} delta"
            if need is not None
            else "cannot keep that base delta with any feasible sample count"
        )
        out.append(
            f"Monte Carlo rows were verified with {samples:,} samples per direction{base} "
            f"(target delta {setup.delta:g}); delta = {setup.delta:g} {wanted} (--samples). "
            "Their sigma and MSE include the verification margin: rank them against exact rows "
            "by the [sigma low, sigma] interval, not by sigma alone."
        )
    return out


def empty_reason(setup: ComparisonSetup) -> str:
    """Why :func:`compare` found no row for ``setup`` (for an empty table)."""
    top = setup.epoch_length
    large = [k for k in setup.bands if k > math.floor(top * (1 + 1e-12))]
    reasons = []
    if large:
        reasons.append(
            f"bands {', '.join(map(str, large))} > |D|/B = {top:.6g} (a banded strategy needs "
            "a min-sep b with bands <= b <= |D|/B)"
        )
    if setup.families is not None:
        reasons.append(f"only the families {', '.join(setup.families)} were asked for")
    if not reasons:
        reasons.append("no registered scheme proposed a feasible row (see the warnings above)")
    return "no rows: " + "; ".join(reasons)


#: The strategy column, shown when extra strategies are compared.
STRATEGY_COLUMN = ("strategy", "strategy")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return fmt(value, 5)
    return str(value)


def best_strategies(rows: Sequence[ComparisonRow]) -> list[ComparisonRow]:
    """Per row family (in table order), the certified row with the smallest MSE: which
    strategy (and bands, min-sep) wins for that scheme at this setup."""
    best: dict[str, ComparisonRow] = {}
    for row in rows:
        if row.mse is None or not math.isfinite(row.mse):
            continue
        if row.family not in best or row.mse < (best[row.family].mse or math.inf):
            best[row.family] = row
    return list(best.values())


def format_table(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """A plain-text table, one row per combination, with the setup as its title (and, when
    extra strategies are compared, a strategy column and the best strategy per scheme)."""
    target = (
        f"target eps = {setup.epsilon:g}"
        if setup.epsilon is not None
        else f"sigma = {setup.sigma:g}"
    )
    title = (
        f"n = {setup.n_steps}, p0 = {setup.rate:.6g} (|D|/B = {setup.epoch_length:.6g}), "
        f"delta = {setup.delta:g}, {target}"
    )
    if not rows:
        return "\n".join([title, empty_reason(setup)])
    columns = COLUMNS if not setup.strategies else (COLUMNS[0], STRATEGY_COLUMN, *COLUMNS[1:])
    cells = [[_cell(getattr(r, key)) for key, _ in columns] for r in rows]
    heads = [head for _, head in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]

    def line(values: Sequence[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = [v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    out = [title, line(heads), line(["-" * w for w in widths])]
    out += [line(c) for c in cells]
    if setup.strategies:
        winners = [
            f"  {r.label}: {r.strategy} (b {r.min_sep}), sigma {_cell(r.sigma)}, MSE {_cell(r.mse)}"
            for r in best_strategies(rows)
        ]
        out += ["best strategy per scheme (smallest MSE at a certified sigma):", *winners]
    out += textwrap.wrap(LEGEND, width=100)
    notes = [f"  {r.label} (bands {r.bands}, b {r.min_sep}): {r.note}" for r in rows if r.note]
    if notes:
        out += ["notes:", *notes]
    out += [f"warning: {w}" for w in sample_warnings(setup, rows)]
    return "\n".join(out)


def format_csv(rows: Sequence[ComparisonRow]) -> str:
    """CSV with one header line and the fields of :class:`ComparisonRow`."""
    buffer = io.StringIO()
    names = [*(f.name for f in attrs.fields(ComparisonRow)), "accounted_delta"]
    writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_dict().items()})
    return buffer.getvalue()


def format_json(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """``{"setup", "rows", "warnings", "recommended_samples", "environment"}`` as indented JSON (no
    non-finite numbers); ``empty_reason`` is added when there is no row."""
    data: dict[str, Any] = {
        "setup": attrs.asdict(setup),
        "rows": [r.to_dict() for r in rows],
        "warnings": sample_warnings(setup, rows),
        "recommended_samples": recommended_samples(setup.delta),
        "environment": environment(),
    }
    if not rows:
        data["empty_reason"] = empty_reason(setup)
    return json.dumps(data, indent=2, allow_nan=False)
