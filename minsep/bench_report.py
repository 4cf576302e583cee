"""The bench's outputs (:mod:`minsep.bench`): the human-readable table, the load average and the
result as JSON-ready data (what ``--json`` prints and :mod:`minsep.bench_docs` renders)."""

from __future__ import annotations

import math
import os
from typing import Any

import attrs

from minsep.bench_timing import Figure


def _rate(figure: Figure) -> str:
    return f"{figure.best:9.3g} best  {figure.median:9.3g} median"


def report(case_rows: list[dict[str, Any]], engine_rows: list[dict[str, Any]]) -> str:
    """The human-readable table."""
    lines = ["every registered loss model, REMOVE; sample·steps per second (normals: per second)"]
    for case in case_rows:
        lines.append(f"\n[{case['case']}]  {case['samples']} samples per repetition")
        lines.append(
            f"  {'model':<28} {'kernels':<7} {'fresh/CPU-s':>11} {'log-ratio':>10} "
            f"{'x normals':>9} {'x compiled':>10} {'x b-min-sep':>11} {'fused x normals':>15}"
        )
        for label, row in case["models"].items():
            share = row.get("share_of_b_min_sep", math.nan)
            compiled = row.get("share_of_compiled_normals", math.nan)
            lines.append(
                f"  {label:<28} {row['kernels']:<7} {row['fresh_cpu'].median:11.3g} "
                f"{row['log_ratio_cpu'].median:10.3g} {row['share_of_normals']:9.2f} "
                f"{compiled:10.2f} {share:11.2f} {row['fused_share_of_normals']:15.2f}"
            )
        for label, reason in case["skipped"].items():
            lines.append(f"  {label:<28} skipped: {reason}")
        normals = case.get("normals")
        if normals:
            numpy_rate, compiled = normals["numpy_cpu"].median, normals["compiled_cpu"].median
            lines.append(
                f"  normals per CPU-second: numpy {numpy_rate:.3g}, compiled SFC64 (what the "
                f"models draw with, same numbers) {compiled:.3g} = {compiled / numpy_rate:.2f}x"
            )
        if case.get("correlation"):
            lines.append(f"  correlation: {case['correlation']}")
    for row in engine_rows:
        lines.append(f"\n[{row['case']}]  engine, warm b-min-sep, REMOVE only")
        lines.append(f"  1 process          {_rate(row['local'])}")
        if "local_cpu" in row:
            lines.append(f"    per CPU-second   {_rate(row['local_cpu'])}")
        if "pool" in row:
            lines.append(f"  {row['workers']} processes        {_rate(row['pool'])}")
            if "pool_cpu" in row:
                lines.append(f"    per CPU-second   {_rate(row['pool_cpu'])}")
            lines.append(
                f"  wall scaling       {row['scaling_best']:.2f} best  "
                f"{row['scaling_median']:.2f} median (of {row['workers']}; needs idle cores)"
            )
            lines.append(
                f"  control            {row['capacity']:.2f} cores usable now by the pool "
                "(numpy normals on the same workers)"
            )
            if "efficiency" in row:
                lines.append(
                    f"  CPU efficiency     {row['efficiency']:.2f} (pool vs 1 process, per "
                    f"CPU-second; x {row['workers']} = {row['workers'] * row['efficiency']:.2f}"
                    " on idle cores)"
                )
    lines.append(
        "\nfresh/CPU-s, log-ratio: medians per CPU-second; x normals, x compiled, x b-min-sep: "
        "the fresh rate over numpy's normal rate, the compiled SFC64 rate and b-min-sep's, all "
        "measured in this run"
    )
    return "\n".join(lines)


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover - platforms without it
        return "n/a"


def jsonable(value: Any) -> Any:
    if isinstance(value, Figure):
        return attrs.asdict(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


__all__ = ["jsonable", "load_average", "report"]
