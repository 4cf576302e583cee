"""The PyTorch example (examples/torch_bandmf.py) runs end to end at a reduced size."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "torch_bandmf.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("torch_bandmf_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_docstrings_command_runs_with_auto_at_a_reduced_size(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, friction 1: ``--scheme b_min_sep --min-sep 4 --bands 4 --epsilon 8`` with
    ``auto`` crashed in the escort. Reduced to 60 steps and 2,000 Monte Carlo samples it must
    finish, print the first answer on stderr at once and report a certified (ε, δ)."""
    argv = ["--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--epsilon", "8"]
    assert example.main([*argv, "--steps", "60", "--rate", "0.0625", "--samples", "2000"]) == 0
    out, err = capsys.readouterr()
    assert "first answer" in err.splitlines()[0]
    assert "calibrating sigma" in err
    assert "-DP after 60 of 60 steps (certified by" in out
    assert "test accuracy" in out


def test_a_given_sigma_reports_its_certified_epsilon(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--scheme", "poisson", "--bands", "1", "--sigma", "1.0", "--steps", "40"]
    assert example.main([*argv, "--rate", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "certified by pld" in out and "half way" in out
