"""The README's Python example runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_usage_runs(capsys: pytest.CaptureFixture[str]) -> None:
    text = README.read_text()
    section = text.split("## Using minsep from Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the README lost its Python example"
    exec(compile(code.group(1), str(README), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    estimate, certified = map(float, lines[0].split())
    assert 0 < estimate <= certified < 10
    sigma, mse = map(float, lines[1].split())
    assert sigma > 0 and mse > 0
    assert lines[2].startswith("256 ")


def test_readme_composition_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    section = README.read_text().split("### Composing with other releases", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None, "the README lost its composition example"
    exec(compile(code.group(1), str(README), "exec"), {})
    epsilon, failure = map(float, capsys.readouterr().out.split())
    assert 0 < epsilon < 10 and failure == 0.0
