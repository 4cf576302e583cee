"""``minsep compare``: the library function, its setup validation and the command end to end."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import attrs
import pytest

from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.pld import PLDAccountant
from minsep.framework import compare as cc
from minsep.framework.cli.main import main
from minsep.framework.compare import (
    ComparisonRow,
    ComparisonSetup,
    available_families,
    compare,
    format_csv,
    format_json,
    format_table,
)
from minsep.framework.compare_parallel import row_processes
from minsep.framework.compare_plan import plan
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import Accountant, Question
from minsep.framework.registries import schemes
from minsep.framework.results import CalibrationResult
from minsep.framework.setup import build_accountant, build_strategy

# A tiny setup: 32 steps at p0 = 1/8; exact families only unless a test asks for more.
EXACT = ("poisson", "cyclic_poisson", "unamplified")
TINY = {"n_steps": 32, "rate": 1 / 8, "delta": 1e-3, "bands": (1, 2, 4)}
MC_OPTIONS = {"samples": 6000, "seed": 7}


def tiny(**changes: Any) -> ComparisonSetup:
    values: dict[str, Any] = {**TINY, "epsilon": 2.0, "families": EXACT}
    values.update(changes)
    return ComparisonSetup(**values)


# --- setup --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "parameter"),
    [
        ({"epsilon": None}, "epsilon"),
        ({"sigma": 1.0}, "sigma"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": None, "sigma": 0.0}, "sigma"),
        ({"bands": ()}, "bands"),
        ({"bands": (0, 2)}, "bands"),
        ({"bands": "1,2"}, "bands"),
        ({"min_seps": (2, -1)}, "min_seps"),
        ({"families": ("poisson", "shuffling")}, "families"),
        ({"rate": 0.0}, "rate"),
        ({"delta": 1.0}, "delta"),
        ({"n_steps": 0}, "n_steps"),
    ],
)
def test_bad_setups_name_the_parameter(changes: dict[str, Any], parameter: str) -> None:
    with pytest.raises(ConfigurationError, match=parameter):
        tiny(**changes)


def test_min_sep_grid() -> None:
    setup = ComparisonSetup(n_steps=64, rate=1 / 16, epsilon=1.0)
    assert setup.min_seps_for(1) == (1, 2, 4, 8, 16)
    assert setup.min_seps_for(4) == (4, 8, 16)
    assert setup.min_seps_for(32) == ()
    explicit = attrs.evolve(setup, min_seps=(12, 3, 64, 8))
    assert explicit.min_seps_for(4) == (8, 12)
    # Epoch length 1/p0 need not be a power of two; b <= floor(1/p0).
    assert ComparisonSetup(rate=1 / 12, epsilon=1.0).min_seps_for(2) == (2, 4, 8)


# --- the library function -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def exact_rows() -> list[ComparisonRow]:
    return compare(tiny())


def test_rows_accountants_and_order(exact_rows: list[ComparisonRow]) -> None:
    rows = exact_rows
    keys = [(r.family, r.bands, r.min_sep, r.accountant) for r in rows]
    assert keys == [
        ("poisson", 1, 1, "pld"),
        ("cyclic_poisson", 2, 2, "pld"),
        ("cyclic_poisson", 4, 4, "pld"),
        ("unamplified", 1, 8, "gaussian"),
        ("unamplified", 2, 8, "gaussian"),
        ("unamplified", 4, 8, "gaussian"),
    ]


def test_calibrated_rows_match_the_accountants(exact_rows: list[ComparisonRow]) -> None:
    rows = {(r.family, r.bands): r for r in exact_rows}
    for (family, bands), row in rows.items():
        scheme_name = {"poisson": "poisson", "cyclic_poisson": "cyclic_poisson"}.get(
            family, "b_min_sep"
        )
        options = {"cyclic_poisson": {"min_sep": bands}, "unamplified": {"min_sep": 8}}
        scheme = schemes.get(scheme_name).from_rate(32, 1 / 8, **options.get(family, {}))
        strategy = build_strategy(32, bands)
        accountant: Accountant = (
            GaussianAccountant() if family == "unamplified" else PLDAccountant()
        )
        cal = accountant.calibrate(scheme, strategy, 2.0, 1e-3)
        assert row.sigma == cal.sigma
        assert row.mse == pytest.approx(strategy.prefix_mse(32) * cal.sigma**2, rel=1e-12)
        assert row.epsilon is not None and row.epsilon <= 2.0
        assert row.epsilon == accountant.epsilon(scheme, strategy, cal.sigma, 1e-3).epsilon
        assert row.method == "exact" and row.failure_probability == 0.0


def test_mse_ratio_is_relative_to_the_best_row(exact_rows: list[ComparisonRow]) -> None:
    rows = exact_rows
    best = min(r.mse for r in rows if r.mse is not None)
    assert min(r.mse_ratio for r in rows if r.mse_ratio is not None) == 1.0
    for row in rows:
        assert row.mse is not None and row.mse_ratio == pytest.approx(row.mse / best)
    # Amplification helps: cyclic Poisson with 4 bands beats unamplified BandMF with 4 bands.
    by = {(r.family, r.bands): r.mse for r in rows}
    assert by[("cyclic_poisson", 4)] < by[("unamplified", 4)]


def test_fixed_sigma_reports_certified_epsilon() -> None:
    rows = compare(tiny(epsilon=None, sigma=1.3))
    assert {r.sigma for r in rows} == {1.3}
    poisson = next(r for r in rows if r.family == "poisson")
    expected = PLDAccountant().epsilon(
        schemes.get("poisson")(n_steps=32, rate=1 / 8), build_strategy(32, 1), 1.3, 1e-3
    )
    assert poisson.epsilon == expected.certified_epsilon
    # More bands, same sigma: the unamplified sensitivity is the same (disjoint columns) but
    # the MSE falls.
    unamp = sorted((r for r in rows if r.family == "unamplified"), key=lambda r: r.bands)
    assert [r.epsilon for r in unamp] == pytest.approx([unamp[0].epsilon] * len(unamp))
    mses = [r.mse for r in unamp]
    assert mses == sorted(mses, reverse=True)


def test_dp_sgd_is_always_a_row() -> None:
    rows = compare(tiny(bands=(4,), families=("poisson", "cyclic_poisson")))
    assert [(r.family, r.bands) for r in rows] == [("poisson", 1), ("cyclic_poisson", 4)]


def test_progress_callback_sees_every_row() -> None:
    seen: list[tuple[int, int, str]] = []
    rows = compare(tiny(bands=(1, 2)), progress=lambda d, t, label: seen.append((d, t, label)))
    assert [d for d, _, _ in seen] == list(range(len(rows) + 1))
    assert {t for _, t, _ in seen} == {len(rows)}
    assert seen[0][2].startswith("DP-SGD") and seen[-1][2] == ""


def test_infeasible_combinations_are_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    # p0 = 1/3: cyclic Poisson with 4 groups is infeasible (4 p0 > 1); balls-in-bins has T = 3.
    setup = ComparisonSetup(
        n_steps=12, rate=1 / 3, epsilon=4.0, bands=(1, 4), families=("cyclic_poisson",)
    )
    assert compare(setup) == []
    assert "skipping cyclic Poisson with 4 bands" in capsys.readouterr().err


@attrs.frozen
class _Failing(Accountant):
    """Supports everything, certifies nothing."""

    def why_not(self, scheme: Any, strategy: Any) -> str | None:
        return None

    def _epsilon(self, question: Question) -> Any:
        raise CalibrationError("never")

    def _delta(self, question: Question) -> Any:
        raise CalibrationError("never")

    def _calibrate(self, question: Question) -> Any:
        raise CalibrationError("first sweep entry failed")


def test_uncertified_rows_are_kept_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cc.build_accountant

    def make(name: str, options: Any, strict: bool = True) -> Accountant:
        return _Failing() if name == "gaussian" else real(name, options, strict=strict)

    monkeypatch.setattr(cc, "build_accountant", make)
    setup = tiny(bands=(1, 2))
    rows = compare(setup)
    failed = [r for r in rows if r.family == "unamplified"]
    assert failed and all(r.sigma is None and r.mse is None and r.mse_ratio is None for r in failed)
    assert all("first sweep entry failed" in r.note for r in failed)
    assert min(r.mse_ratio for r in rows if r.mse_ratio is not None) == 1.0
    table = format_table(setup, rows)
    assert "notes:" in table and "first sweep entry failed" in table
    json.loads(format_json(setup, rows))  # None, not NaN, for the missing values


@attrs.frozen
class _Bottom(_Failing):
    """Calibrates to the smallest sigma it examined."""

    def _calibrate(self, question: Question) -> Any:
        return CalibrationResult(
            accountant="gaussian",
            method="monte_carlo",
            sigma=1.0,
            epsilon=question.epsilon,
            delta=question.delta,
            candidates=(1.2, 1.1, 1.0),
            failure_probability=1e-5,
        )


def test_a_sweep_that_never_failed_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cc.build_accountant
    monkeypatch.setattr(
        cc,
        "build_accountant",
        lambda n, o, strict=True: _Bottom() if n == "gaussian" else real(n, o, strict=strict),
    )
    rows = compare(tiny(bands=(2,), families=("unamplified",)))
    assert len(rows) == 1 and rows[0].sigma == 1.0 and rows[0].epsilon == 2.0
    assert rows[0].failure_probability == 1e-5 and rows[0].method == "monte_carlo"
    assert "smaller sigma may be certifiable" in rows[0].note


def test_outputs_round_trip() -> None:
    setup = tiny(bands=(1, 2))
    rows = compare(setup)
    data = json.loads(format_json(setup, rows))
    assert data["setup"]["n_steps"] == 32 and data["setup"]["epsilon"] == 2.0
    for row, data_row in zip(rows, data["rows"], strict=True):
        assert data_row.pop("accounted_delta") == row.accounted_delta
    assert [ComparisonRow(**r) for r in data["rows"]] == rows
    parsed = list(csv.DictReader(io.StringIO(format_csv(rows))))
    assert [float(r["sigma"]) for r in parsed] == [r.sigma for r in rows]
    assert [int(r["min_sep"]) for r in parsed] == [r.min_sep for r in rows]
    table = format_table(setup, rows).splitlines()
    assert table[0] == "n = 32, p0 = 0.125 (|D|/B = 8), delta = 0.001, target eps = 2"
    assert table[1].split() == [
        "scheme", "bands", "b", "sigma", "sigma", "low", "cert.", "eps", "delta", "used",
        "samples", "MSE", "MSE/best", "accountant"
    ]  # fmt: skip
    assert table[3 + len(rows)].startswith("sigma low: ")


def test_monte_carlo_families_at_a_tiny_setup() -> None:
    setup = tiny(
        families=("balls_in_bins", "b_min_sep"),
        bands=(1, 2),
        min_seps=(2, 8),
        accountant_options=MC_OPTIONS,
        epsilon=4.0,
        delta=1e-2,
    )
    rows = compare(setup)
    assert [(r.family, r.bands, r.min_sep) for r in rows] == [
        ("balls_in_bins", 1, 8),
        ("balls_in_bins", 2, 8),
        ("b_min_sep", 1, 2),
        ("b_min_sep", 1, 8),
        ("b_min_sep", 2, 2),
        ("b_min_sep", 2, 8),
    ]
    assert {r.accountant for r in rows} == {"monte_carlo"}
    for row in rows:
        assert row.method == "monte_carlo"
        if row.sigma is not None:
            assert row.epsilon == 4.0 and 0 < row.failure_probability < 1


def test_rows_on_two_processes_equal_the_serial_rows() -> None:
    """framework/compare_parallel.py: rows run two at a time (each accountant on one worker)
    give the serial table, in table order, with the progress callback still called per row."""
    setup = tiny(
        families=("poisson", "balls_in_bins", "b_min_sep"),
        bands=(1, 2),
        min_seps=(2, 8),
        epsilon=4.0,
        delta=1e-2,
    )
    serial = compare(attrs.evolve(setup, accountant_options={**MC_OPTIONS, "workers": 1}))
    two = attrs.evolve(setup, accountant_options={**MC_OPTIONS, "workers": 2})
    assert row_processes(two, plan(two, lambda name: build_accountant(name, {}))) == 2
    seen: list[int] = []
    parallel = compare(two, progress=lambda done, total, label: seen.append(done))
    assert seen == list(range(len(parallel) + 1))

    def table(rows: list[ComparisonRow]) -> list[tuple[Any, ...]]:
        return [(r.family, r.bands, r.min_sep, r.sigma, r.epsilon, r.samples) for r in rows]

    assert table(parallel) == table(serial)
    assert sum(r.accountant == "monte_carlo" for r in serial) >= 2


# --- the command --------------------------------------------------------------------------------

ARGS = ["compare", "--steps", "32", "--rate", "1/8", "--bands", "1,2", "--schemes", ",".join(EXACT)]


def test_command_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--epsilon", "2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["rows"]
    expected = [r.to_dict() for r in compare(tiny(bands=(1, 2)))]
    for row in (*got, *expected):
        row.pop("seconds")
    assert got == expected


def test_command_csv_with_batch_and_dataset_size(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--steps", "32", "--batch-size", "50", "--dataset-size", "400"]
    assert main([*args, "--bands", "1", "--schemes", "poisson", "--sigma", "1.5", "--csv"]) == 0
    parsed = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(parsed) == 1 and parsed[0]["label"] == "DP-SGD (Poisson)"
    assert float(parsed[0]["sigma"]) == 1.5
    expected = compare(tiny(epsilon=None, sigma=1.5, bands=(1,), families=("poisson",)))
    assert float(parsed[0]["epsilon"]) == expected[0].epsilon


def test_command_table_default_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "target eps = 2" in out and "DP-SGD (Poisson)" in out and "unamplified BandMF" in out


def test_command_progress_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--progress", "--csv"]) == 0
    captured = capsys.readouterr()
    assert "compare" in captured.err and "100%" in captured.err
    assert captured.out.startswith("family,")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch-size", "10"], "--dataset-size"),
        (["--batch-size", "10", "--dataset-size", "100", "--rate", "1/8"], "one of them"),
        (["--batch-size", "10", "--dataset-size", "5"], "batch-size / dataset-size"),
        (["--schemes", "poisson,shuffling"], "families"),
    ],
)
def test_command_errors(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--steps", "8", *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_command_refuses_epsilon_with_sigma() -> None:
    with pytest.raises(SystemExit):
        main([*ARGS, "--epsilon", "1", "--sigma", "1"])


def test_registered_families_in_table_order() -> None:
    families = available_families(ComparisonSetup(epsilon=2.0))
    assert families == (
        "poisson",
        "cyclic_poisson",
        "cyclic_poisson_random_phase",
        "balls_in_bins",
        "b_min_sep",
        "unamplified",
    )
    assert math.isclose(ComparisonSetup(epsilon=2.0).epoch_length, 256.0)


def test_a_scheme_without_rows_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    setup = tiny(families=("multi_attribution",))
    assert compare(setup) == []
    err = capsys.readouterr().err
    assert "'multi_attribution' proposes no rows" in err and "--max-user-examples" in err


@pytest.mark.parametrize("options", [{"samples": -5}, {"backend": "nope"}, {"seed": -1}])
def test_bad_accountant_options_are_refused_not_skipped(options: dict[str, object]) -> None:
    """An accountant that cannot be built from the given options is an error, not an
    accountant "unable" to account the row (which would silently fall to the next one)."""
    from minsep.framework.compare import ComparisonSetup, compare
    from minsep.framework.errors import ConfigurationError

    setup = ComparisonSetup(
        n_steps=8,
        rate=0.25,
        sigma=1.0,
        bands=(1,),
        families=("b_min_sep",),
        min_seps=(2,),
        accountant_options=options,
    )
    with pytest.raises(ConfigurationError, match=next(iter(options))):
        compare(setup)
