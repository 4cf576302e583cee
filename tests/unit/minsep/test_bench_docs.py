"""docs/performance.md: the bench writes its generated section, the hand-kept text stays."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

import pytest

from minsep import bench, bench_docs

ROOT = Path(__file__).resolve().parents[3]
KERNEL_MODULES = [
    *sorted((ROOT / "schemes" / "kernels").glob("*.py")),
    *sorted((ROOT / "schemes").glob("*/cpu_kernels.py")),
    *sorted((ROOT / "schemes").glob("*/fused.py")),
    *sorted((ROOT / "minsep").glob("bench*.py")),
]
#: A timing quoted in a kernel module: "3.1 ns", "1.7x faster", "7% faster".
QUOTED_TIMING = re.compile(r"\d\s*ns\b|\d(\.\d+)?x faster|\d\s*%\s*faster")


def _figure(rate: float) -> dict[str, float]:
    return {"best": rate, "median": rate}


def _result() -> dict[str, Any]:
    row = {
        "kernels": "numba",
        "fresh_cpu": _figure(6.0e7),
        "log_ratio_cpu": _figure(3.0e8),
        "fused_cpu": _figure(5.0e7),
        "share_of_normals": 0.5,
        "share_of_compiled_normals": 0.2,
        "share_of_b_min_sep": 1.0,
    }
    case = {
        "case": "n=7200, k=b=256",
        "samples": 128,
        "models": {"b_min_sep": row, "truncated": {**row, "share_of_b_min_sep": 0.55}},
        "skipped": {"poisson": "needs bands <= 1"},
        "normals": {"numpy_cpu": _figure(1.0e8), "compiled_cpu": _figure(3.0e8)},
        "correlation": "fft, FFT length 7500, fftw",
    }
    return {
        "command": "python -m minsep.bench --docs docs/performance.md",
        "backend": "numpy",
        "kernels": "numba",
        "repeats": 5,
        "machine": "Test CPU, x86_64, 2 CPUs visible, Linux",
        "versions": "numpy 2.0",
        "commit": "abc1234",
        "load_start": "1.00",
        "load_end": "2.00",
        "cases": [case],
        "engine": [],
    }


def test_render_names_machine_date_commit_and_every_figure() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)
    text = bench_docs.render(_result(), now=when)
    expected = [
        "Test CPU",
        "2026-01-02 03:04 UTC",
        "`abc1234`",
        "--docs docs/performance.md",
        "fft, FFT length 7500, fftw",
        "| truncated | numba | 6e+07 | 3e+08 | 5e+07 | 0.20 | 0.50 | 0.55 |",
        "poisson | skipped",
        "compiled SFC64 3e+08",
    ]
    for piece in expected:
        assert piece in text, piece
    assert bench_docs.BEGIN not in text and bench_docs.END not in text


def test_update_replaces_only_the_generated_section(tmp_path: Path) -> None:
    path = tmp_path / "performance.md"
    before, after = "# Title\n\nkept above\n\n", "\n\nkept below\n"
    path.write_text(f"{before}{bench_docs.BEGIN}\nold\n{bench_docs.END}{after}")
    bench_docs.update(path, "new figures")
    assert path.read_text() == f"{before}{bench_docs.BEGIN}\nnew figures\n{bench_docs.END}{after}"
    bench_docs.update(path, "newer")  # idempotent on its own output
    assert path.read_text().count(bench_docs.BEGIN) == 1
    assert "newer" in path.read_text() and "new figures" not in path.read_text()


def test_update_creates_or_appends_the_markers(tmp_path: Path) -> None:
    fresh = tmp_path / "docs" / "performance.md"
    bench_docs.update(fresh, "figures")
    assert fresh.read_text() == f"# Performance\n\n{bench_docs.BEGIN}\nfigures\n{bench_docs.END}\n"
    plain = tmp_path / "plain.md"
    plain.write_text("notes\n")
    bench_docs.update(plain, "figures")
    assert plain.read_text() == f"notes\n\n{bench_docs.BEGIN}\nfigures\n{bench_docs.END}\n"


def test_the_committed_page_has_one_generated_section() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    assert text.count(bench_docs.BEGIN) == 1 and text.count(bench_docs.END) == 1
    assert text.index(bench_docs.BEGIN) < text.index(bench_docs.END)


@pytest.mark.parametrize("module", KERNEL_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_kernel_modules_quote_no_timings(module: Path) -> None:
    """Measured figures belong in docs/performance.md, not in kernel comments and docstrings."""
    found = [line.strip() for line in module.read_text().splitlines() if QUOTED_TIMING.search(line)]
    assert not found, found


def test_bench_writes_the_page(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    path = tmp_path / "performance.md"
    path.write_text(f"# P\n\nhand-kept\n\n{bench_docs.BEGIN}\n{bench_docs.END}\n")
    args = ["--quick", "--no-engine", "--case", "small", "--repeats", "1", "--models",
            "b_min_sep", "--json", "--docs", str(path)]  # fmt: skip
    assert bench.main(args) == 0
    text = path.read_text()
    assert text.startswith("# P\n\nhand-kept\n")
    assert "| b_min_sep | numba |" in text and "Correlation: direct sums." in text
    assert bench_docs.commit() in text
