"""paper/mse_comparison with strategies as a compared dimension (issue 18 item 4)."""

from __future__ import annotations

import argparse
import csv
from collections.abc import Iterator
from pathlib import Path

import pytest

from minsep.framework.compare import ComparisonRow
from minsep.framework.errors import ConfigurationError
from minsep.framework.registries import strategies
from minsep.paper import mse_comparison
from tests.unit.framework.test_compare_strategies import NAME, GeometricTest


def _args(**changes: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    mse_comparison.SCRIPT.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def test_the_demo_setting_is_the_issue_s() -> None:
    settings, mode = mse_comparison.settings_from_args(_args(demo=True))
    assert mode == "demo"
    assert (settings.n_steps, settings.epoch_lengths, settings.delta, settings.epsilons) == (
        1024,
        (256,),
        1e-3,
        (2.0,),
    )
    assert settings.strategies
    extra, mode = mse_comparison.settings_from_args(
        _args(demo=True, strategies=("banded_toeplitz:bands=2",))
    )
    assert extra.strategies == ("banded_toeplitz:bands=2",) and mode == "demo (modified)"


def test_bad_strategy_specs_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="strategies"):
        mse_comparison.MSESettings(strategies=("no_such_strategy",))


def _row(family: str, strategy: str, bands: int | None, b: int, mse: float) -> ComparisonRow:
    return ComparisonRow(
        family=family,
        label=family,
        scheme=family,
        bands=bands,
        min_sep=b,
        accountant="monte_carlo",
        method="monte_carlo",
        delta=1e-3,
        sigma=1.0,
        epsilon=2.0,
        mse=mse,
        strategy=strategy,
    )


def test_strategy_rows_keep_the_best_row_of_each_strategy_and_name_the_winner() -> None:
    rec = mse_comparison.Record
    records = [
        rec(2.0, 256, _row("b_min_sep", "banded_toeplitz/k=4", 4, 8, 3.0)),
        rec(2.0, 256, _row("b_min_sep", "banded_toeplitz/k=8", 8, 16, 2.0)),
        rec(2.0, 256, _row("b_min_sep", "blt", None, 4, 2.5)),
        rec(2.0, 256, _row("b_min_sep", "blt", None, 8, 4.0)),
        rec(2.0, 256, _row("unamplified", "blt", None, 256, 9.0)),
    ]
    rows = mse_comparison.strategy_rows(mse_comparison.DEMO, records)
    table = {(r["family"], r["strategy"]): r for r in rows}
    grid = table[("b_min_sep", "banded_toeplitz (grid)")]
    assert (grid["bands"], grid["min_sep"], grid["mse_over_best"]) == (8, 16, 1.0)
    blt = table[("b_min_sep", "blt")]
    assert (blt["min_sep"], blt["mse_over_best"]) == (4, 1.25)
    assert table[("unamplified", "blt")]["mse_over_best"] == 1.0
    assert "MSE/best" in mse_comparison.strategy_markdown(rows)


@pytest.fixture
def registered() -> Iterator[str]:
    strategies.register(NAME)(GeometricTest)
    try:
        yield NAME
    finally:
        strategies.unregister(NAME)


@pytest.mark.slow  # a fast representative: test_compare_strategies
def test_micro_run_writes_the_strategy_table(tmp_path: Path, registered: str) -> None:
    settings = mse_comparison.MSESettings(
        n_steps=16,
        delta=1e-2,
        epsilons=(2.0,),
        epoch_lengths=(4,),
        bands=(2,),
        samples=4000,
        families=("b_min_sep", "unamplified"),
        strategies=(f"{registered}:ratio=0.4",),
    )
    written = mse_comparison.run_experiment(
        settings, mse_comparison.EngineOptions(seed=5), tmp_path, plots=False, mode="test"
    )
    with written["strategies"].open() as handle:
        rows = list(csv.DictReader(handle))
    kinds = {(r["family"], r["strategy"]) for r in rows}
    assert ("b_min_sep", f"{registered}:ratio=0.4") in kinds
    assert ("b_min_sep", "banded_toeplitz (grid)") in kinds
    assert "Best row of each strategy" in written["markdown"].read_text()
