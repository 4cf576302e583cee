"""What the paper scripts write, and how a rerun is compared with it.

Every script writes into one output folder:

- ``<name>*.csv``: the numbers, floats with :data:`DIGITS` significant digits, so that a rerun
  with the same options reproduces the files byte for byte (tiny platform noise stays below
  the printed precision);
- ``<name>.json``: the settings that produced them (deterministic) and a ``timing`` block
  (wall and CPU seconds; the only part that differs between reruns);
- ``<name>.md``: the tables as markdown (pasted into ``paper/README.md``);
- ``<name>*.png``: the figures (:mod:`minsep.paper.plots`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from minsep.framework.environment import environment

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


__all__ = [
    "DIGITS",
    "OUTPUT_DIR",
    "RERUN_RTOL",
    "RUNS_DIR",
    "csv_differences",
    "fmt",
    "fresh_output_dir",
    "markdown_table",
    "read_csv",
    "write_csv",
    "write_metadata",
    "write_text",
]
