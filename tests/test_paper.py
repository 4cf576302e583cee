"""The paper scripts (``paper/``): micro runs of each (fast), quick runs against the committed
outputs (slow, ``make test-all``), the CLI wiring and the shared output helpers."""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

from minsep.framework.cli.main import build_parser, commands
from minsep.framework.compare import ComparisonRow
from minsep.framework.errors import ConfigurationError
from minsep.paper import mse_comparison, multi_attribution, production
from minsep.paper.common import (
    OUTPUT_DIR,
    csv_differences,
    fmt,
    markdown_table,
    read_csv,
    run_script,
    write_csv,
    write_metadata,
    write_text,
)

PAPER_DIR = OUTPUT_DIR.parent

# --- shared helpers ----------------------------------------------------------------------------


def test_fmt_writes_six_significant_digits() -> None:
    assert fmt(1.0 / 3.0) == "0.333333"
    assert fmt(123456789.0) == "1.23457e+08"
    assert fmt(-0.0) == "0"
    assert fmt(None) == ""
    assert fmt(math.inf) == "inf"
    assert fmt(7) == "7"


def test_write_csv_round_trips_and_leaves_missing_cells_empty(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "t.csv", ("a", "b"), [{"a": 0.1 + 0.2, "b": None}, {"a": 2}])
    assert path.read_text() == "a,b\n0.3,\n2,\n"
    assert read_csv(path) == [{"a": "0.3", "b": ""}, {"a": "2", "b": ""}]


def test_markdown_table_shape() -> None:
    text = markdown_table(["x", "y"], [[1.23456, None]])
    assert text.splitlines() == ["| x | y |", "|---|---|", "| 1.235 | - |"]


# --- CLI ---------------------------------------------------------------------------------------


def test_paper_command_is_registered_and_parses(tmp_path: Path) -> None:
    assert "paper" in commands()
    args = build_parser().parse_args(
        ["paper", "mse_comparison", "--quick", "--output-dir", str(tmp_path), "--workers", "2"]
    )
    assert args.experiment == "mse_comparison"
    assert args.quick and args.workers == 2 and args.output_dir == tmp_path
    settings, mode = mse_comparison.settings_from_args(args)
    assert settings == mse_comparison.QUICK and mode == "quick"
    for name in ("production", "multi_attribution"):
        parsed = build_parser().parse_args(["paper", name])
        assert parsed.experiment == name and not parsed.quick


def test_cli_refuses_a_bad_list() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["paper", "mse_comparison", "--epsilons", "1,x"])


def _args(**values: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    mse_comparison.SCRIPT.add_arguments(parser)
    args = parser.parse_args([])
    for key, value in values.items():
        setattr(args, key, value)
    return args


def test_overrides_mark_the_mode_modified() -> None:
    settings, mode = mse_comparison.settings_from_args(_args(quick=True, epsilons=(2.0,)))
    assert settings.epsilons == (2.0,) and mode == "quick (modified)"
    settings, mode = mse_comparison.settings_from_args(_args(samples=1000))
    assert settings.samples == 1000 and mode == "full"


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: mse_comparison.MSESettings(epsilons=()), "epsilons"),
        (lambda: mse_comparison.MSESettings(bands=(0, 4)), "bands"),
        (lambda: mse_comparison.MSESettings(families=("dp_sgd",)), "families"),
        (lambda: mse_comparison.MSESettings(delta=1.0), "delta"),
        (lambda: production.ProductionSettings(samples=1), "samples"),
        (lambda: production.ProductionSettings(expected_batch=10**9), "expected_batch"),
        (lambda: multi_attribution.GraphSettings(papers=0, users=10), "papers"),
        (
            lambda: multi_attribution.MASettings(
                graph=multi_attribution.QUICK.graph,
                n_steps=10,
                expected_batch=4,
                epoch_length=8,
                delta=1e-3,
            ),
            "expected_batch",
        ),
    ],
)
def test_settings_refuse_bad_values_by_name(build: Callable[[], object], name: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"\.{name} = "):
        build()


# --- §7.1 --------------------------------------------------------------------------------------


def test_paper_sample_count_verifies_at_half_delta() -> None:
    assert mse_comparison.paper_samples(1e-3) == 75013
    assert mse_comparison.FULL.resolved_samples() == 75013


def test_full_grid_size_matches_the_paper() -> None:
    # b-min-sep: for |D|/B = 2^j the b grid over bands {2..32} has 5j - 10 entries.
    full = mse_comparison.FULL
    assert full.min_seps(4, 128) == (4, 8, 16, 32, 64, 128)
    assert full.min_seps(32, 128) == (32, 64, 128)
    per_epsilon = sum(5 * j - 10 for j in (7, 8, 9, 10)) + 5 * 4
    assert full.monte_carlo_rows() == 6 * per_epsilon == 900


@pytest.mark.slow  # fast representative: test_production_micro_run
def test_mse_comparison_micro_run(tmp_path: Path) -> None:
    settings = mse_comparison.MSESettings(
        n_steps=32, delta=1e-2, epsilons=(2.0,), epoch_lengths=(8,), bands=(2,), samples=4000
    )
    engine = mse_comparison.EngineOptions(seed=5)
    written = mse_comparison.run_experiment(settings, engine, tmp_path / "a", mode="test")
    assert {"rows", "best", "ratios", "markdown", "metadata"} <= set(written)
    rows = read_csv(written["rows"])
    families = {r["family"] for r in rows}
    assert families == set(mse_comparison.FAMILIES)
    bms = [r for r in rows if r["family"] == "b_min_sep"]
    assert sorted(int(r["min_sep"]) for r in bms) == [2, 4, 8]
    (ratio,) = read_csv(written["ratios"])
    # balls-in-bins is accounted as b-min-sep at b = |D|/B (same model, same draws), so the
    # best b-min-sep is never worse: exactly, not up to Monte Carlo noise.
    assert float(ratio["ratio_vs_balls_in_bins"]) <= 1.0
    best = {r["family"]: r for r in read_csv(written["best"])}
    twin = next(r for r in bms if int(r["min_sep"]) == 8)
    assert best["balls_in_bins"]["sigma"] == twin["sigma"]
    assert float(ratio["ratio_vs_cyclic_poisson"]) > 0
    # Reproducible: a rerun writes the same CSVs.
    again = mse_comparison.run_experiment(
        settings, engine, tmp_path / "b", plots=False, mode="test"
    )
    for key in ("rows", "best", "ratios"):
        assert written[key].read_bytes() == again[key].read_bytes()


def test_balls_in_bins_rows_are_replaced_by_their_b_min_sep_twin() -> None:
    def row(family: str, bands: int, b: int, mse: float) -> ComparisonRow:
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
            epsilon=1.0,
            mse=mse,
        )

    records = [
        mse_comparison.Record(1.0, 8, row("balls_in_bins", 2, 8, 9.0)),
        mse_comparison.Record(1.0, 8, row("b_min_sep", 2, 4, 11.0)),
        mse_comparison.Record(1.0, 8, row("b_min_sep", 2, 8, 10.0)),
        mse_comparison.Record(1.0, 8, row("balls_in_bins", 16, 8, 7.0)),  # bands > |D|/B
    ]
    fair = mse_comparison.balls_in_bins_as_b_min_sep(records)
    assert [r.row.mse for r in fair] == [10.0, 11.0, 10.0, 7.0]
    assert fair[0].row.family == "balls_in_bins"
    assert fair[0].row.note == mse_comparison.AS_B_MIN_SEP
    assert fair[3].row.note == ""


# --- §7.4 --------------------------------------------------------------------------------------


def test_production_sample_counts_pin() -> None:
    rows = {r["check"]: r for r in production.sample_rows(production.FULL)}
    half = rows["base delta = delta/2"]
    assert half["samples_per_direction"] == 11_761_978_145
    assert half["sample_steps"] == 2 * 11_761_978_145 * 7200
    assert rows["base delta = delta/4"]["samples_per_direction"] < half["samples_per_direction"]
    paper = rows["paper's 7.5e9 samples"]
    assert 0.25 < paper["base_delta_over_delta"] < 0.5
    assert paper["gpu_hours_projected"] == pytest.approx(2 * 7.5e9 * 7200 / 1e10 / 3600)


def test_production_micro_run(tmp_path: Path) -> None:
    settings = production.ProductionSettings(
        n_steps=64,
        expected_batch=16,
        max_batch=24,
        dataset_size=1024,
        epsilon=2.0,
        bands=4,
        sigmas=(1.2, 0.9),
        samples=256,
        truncated_samples=128,
        chunk_size=128,
        pld_interval=2e-2,
    )
    engine = production.EngineOptions(seed=3)
    written = production.run_experiment(settings, engine, tmp_path, plots=False, mode="test")
    pld = {r["configuration"]: float(r["sigma"]) for r in read_csv(written["pld"])}
    assert len(pld) == 4
    assert pld["DP-SGD (Poisson)"] < pld["cyclic Poisson 4-BandMF"]
    mc = read_csv(written["monte_carlo"])
    assert len(mc) == 4
    for scheme in {r["scheme"] for r in mc}:
        by_sigma = {float(r["sigma"]): float(r["epsilon_hat"]) for r in mc if r["scheme"] == scheme}
        assert by_sigma[0.9] > by_sigma[1.2]  # less noise, more privacy loss
    assumptions = read_csv(written["assumptions"])
    assert len(assumptions) == 8
    sigma = {
        (r["configuration"], r["batch_for_rate"], r["accountant"]): float(r["sigma"])
        for r in assumptions
    }
    for (config, batch, route), value in sigma.items():
        if route == "rdp":  # RDP is never tighter than the exact PLD of the same event
            assert value >= sigma[(config, batch, "pld")]
        if batch == "padded B_max":  # a larger rate needs more noise
            assert value > sigma[(config, "expected B", route)]


# --- §7.3 --------------------------------------------------------------------------------------


def test_synthetic_graph_is_coauthorship_like() -> None:
    settings = multi_attribution.GraphSettings(papers=3000, users=2000, seed=11)
    first = multi_attribution.synthetic_coauthorship(settings)
    graph = first.graph
    assert np.diff(graph.indptr).min() >= 2  # every example has at least two users
    assert graph.max_user_examples == 2  # k_u = 2 after bounding
    stats = first.statistics
    assert stats["max_papers_per_author_before_bounding"] > 2  # bounding did something
    assert 0 < stats["examples_after_bounding"] < stats["papers_with_2plus_authors"]
    second = multi_attribution.synthetic_coauthorship(settings)
    assert np.array_equal(graph.indices, second.graph.indices)
    assert np.array_equal(graph.indptr, second.graph.indptr)


def _poisson_epsilon(sigma: float, rate: float, steps: int, delta: float) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(
        dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), steps
        )
    )
    return float(accountant.get_epsilon(delta))


def test_user_level_dp_sgd_reduces_to_poisson_for_one_example() -> None:
    one = multi_attribution.dp_sgd_epsilon(1.0, 0.02, 1, 50, 1e-5)
    assert one == pytest.approx(_poisson_epsilon(1.0, 0.02, 50, 1e-5), rel=1e-6)
    two = multi_attribution.dp_sgd_epsilon(1.0, 0.02, 2, 50, 1e-5, interval=1e-2)
    assert two > one * 1.5  # two examples of one user: a much larger loss


@pytest.mark.slow  # fast representative: test_production_micro_run
def test_multi_attribution_micro_run(tmp_path: Path) -> None:
    settings = multi_attribution.MASettings(
        graph=multi_attribution.GraphSettings(papers=1500, users=1000, seed=3),
        n_steps=24,
        epoch_length=16,
        delta=1e-2,
        epsilons=(4.0,),
        bands=(2,),
        samples=4000,
        pld_interval=2e-2,
    )
    engine = multi_attribution.EngineOptions(seed=9)
    written = multi_attribution.run_experiment(settings, engine, tmp_path, plots=False)
    rows = read_csv(written["rows"])
    assert [r["method"] for r in rows] == ["dp_sgd", "b_min_sep", "unamplified"]
    sgd, bms, una = rows
    assert float(sgd["sigma"]) > 0 and float(bms["sigma"]) > 0
    # Unamplified: k_u = 2 times the example-level Gaussian sigma (2 participations).
    assert "2 participations" in una["note"]
    (best,) = read_csv(written["best"])
    assert float(best["b_min_sep_over_unamplified"]) < 1  # amplification helps


# --- the committed quick outputs -----------------------------------------------------------------


def test_readme_links_resolve() -> None:
    readme = PAPER_DIR / "README.md"
    links = re.findall(r"\]\((outputs/[^)]+)\)", readme.read_text(encoding="utf-8"))
    assert links, "the README links no outputs"
    missing = [link for link in links if not (PAPER_DIR / link).is_file()]
    assert not missing


QUICK_CSVS = {
    "production": ("pld", "monte_carlo", "samples", "assumptions"),
    "multi_attribution": ("graph", "rows", "best"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUICK_CSVS))
def test_quick_mode_reproduces_the_committed_outputs(name: str, tmp_path: Path) -> None:
    """Rerun a quick mode (measured with 2 workers on the shared 2-core machine: production
    6 min, multi_attribution 10 min at a load of 1.6, 30 min at a load of 3-5) and compare
    its CSVs with the committed ones, numbers within RERUN_RTOL (paper/README.md says why)."""
    module = {"production": production, "multi_attribution": multi_attribution}[name]
    argv = ["--quick", "--output-dir", str(tmp_path), "--no-plot", "--workers", "2"]
    assert module.SCRIPT.main(argv) == 0  # the worker count does not change the numbers
    for part in QUICK_CSVS[name]:
        produced = read_csv(tmp_path / f"{name}_{part}.csv")
        committed = read_csv(OUTPUT_DIR / f"{name}_{part}.csv")
        assert csv_differences(produced, committed) == [], f"{name}_{part}.csv differs"


#: The stated subset of mse_comparison's quick grid rerun by the slow test: 4 of the 60 Monte
#: Carlo calibrations (b-min-sep, b in {16, 32, 64, 128}) and 3 exact rows: 5-6 min, not 39.
MSE_SUBSET = {"epsilons": (4.0,), "epoch_lengths": (128,), "bands": (16,)}
MSE_SUBSET_FAMILIES = ("poisson", "cyclic_poisson", "b_min_sep", "unamplified")


@pytest.mark.slow
def test_mse_comparison_subset_reproduces_the_committed_rows(tmp_path: Path) -> None:
    """Every row is calibrated with the run's seed whatever else the grid holds, so the subset's
    rows must equal the committed quick run's rows of the same (epsilon, |D|/B, family, bands,
    b), numbers within RERUN_RTOL."""
    settings = attrs.evolve(mse_comparison.QUICK, families=MSE_SUBSET_FAMILIES, **MSE_SUBSET)
    engine = mse_comparison.EngineOptions(seed=mse_comparison.DEFAULT_SEED, workers=2)
    written = mse_comparison.run_experiment(settings, engine, tmp_path, plots=False, mode="test")
    produced = read_csv(written["rows"])
    committed = [
        row
        for row in read_csv(OUTPUT_DIR / "mse_comparison_rows.csv")
        if float(row["epsilon_target"]) == 4.0
        and row["epoch_length"] == "128"
        and row["family"] in MSE_SUBSET_FAMILIES
        and (row["bands"] == "16" or row["family"] == "poisson")
    ]
    assert len(committed) == 7  # DP-SGD, cyclic Poisson, 4 b-min-sep, unamplified
    assert csv_differences(produced, committed) == []


def test_csv_differences_tolerates_drift_not_changes() -> None:
    old = [{"name": "a", "sigma": "0.366992", "eps": "inf"}]
    assert csv_differences([{"name": "a", "sigma": "0.366993", "eps": "inf"}], old) == []
    assert csv_differences([{"name": "a", "sigma": "0.368", "eps": "inf"}], old) == [
        "row 1 sigma: '0.368' produced, '0.366992' committed"
    ]
    assert len(csv_differences([{"name": "b", "sigma": "0.366992", "eps": "inf"}], old)) == 1
    assert len(csv_differences([{"name": "a", "sigma": "0.366992", "eps": "9"}], old)) == 1
    assert csv_differences([], old) == ["0 rows produced, 1 committed"]


# --- where runs go, what they record ------------------------------------------------------------


def test_runs_go_to_a_fresh_folder_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[Path] = []

    def experiment(settings: object, engine: object, output: Path, **_: object) -> dict[str, Path]:
        seen.append(output)
        return {"markdown": write_text(output / "x.md", "table")}

    args = build_parser().parse_args(["paper", "production", "--quick"])
    assert args.output_dir is None
    for _ in range(2):
        assert run_script(args, production.settings_from_args, experiment, "production") == 0
    first, second = seen
    assert first != second and first.parent == second.parent == Path("runs")
    assert first.name.startswith("paper-production-") and first.is_dir() and second.is_dir()
    assert OUTPUT_DIR not in (first, second)
    asked = build_parser().parse_args(["paper", "production", "--output", str(tmp_path / "o")])
    assert run_script(asked, production.settings_from_args, experiment, "production") == 0
    assert seen[-1] == tmp_path / "o"


def test_paper_json_records_versions_and_commit(tmp_path: Path) -> None:
    path = write_metadata(tmp_path / "m.json", {"mode": "test"}, {"wall_s": 1.0})
    data = json.loads(path.read_text(encoding="utf-8"))
    env = data["environment"]
    for key in ("minsep", "numpy", "scipy", "dp_accounting", "numba", "git_commit"):
        assert isinstance(env[key], str) and env[key]
    assert env["numpy"] == np.__version__
    assert data["settings"] == {"mode": "test"}
