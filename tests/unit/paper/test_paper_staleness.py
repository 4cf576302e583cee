"""The staleness check of the committed paper outputs (paper/staleness.py) finds a changed
committed row, and passes where the outputs are current."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from minsep.paper import staleness
from minsep.paper.common import OUTPUT_DIR


def test_the_committed_graph_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert staleness.stale("multi_attribution") == []
    assert staleness.main(["--only", "multi_attribution"]) == 0
    assert capsys.readouterr().out.startswith("multi_attribution: current")


def test_a_changed_committed_row_is_reported_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "multi_attribution_graph.csv"
    text = (OUTPUT_DIR / name).read_text(encoding="utf-8")
    (tmp_path / name).write_text(text.replace("papers_drawn,30000", "papers_drawn,31000"))
    shutil.copy(OUTPUT_DIR / name, tmp_path / "unused.csv")
    monkeypatch.setattr(staleness, "OUTPUT_DIR", tmp_path)
    assert staleness.stale("multi_attribution") == [
        "row 1 value: '30000' produced, '31000' committed"
    ]
    assert staleness.main(["--only", "multi_attribution"]) == 1
    out = capsys.readouterr().out
    assert "STALE" in out and "minsep paper multi_attribution --quick --output paper/outputs" in out
