"""``minsep compare`` chooses each Monte Carlo row's samples and route from the question and
keeps printing the other rows when one cannot be certified (issue: tiny-delta commands)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from minsep.framework import compare as cc
from minsep.framework.cli.compare_command import setup_from_args
from minsep.framework.cli.main import build_parser, main
from minsep.framework.compare import ComparisonSetup, compare, format_table
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant, Question
from minsep.framework.montecarlo.precision import samples_for_precision

TINY: dict[str, Any] = {"n_steps": 32, "rate": 1 / 8, "delta": 1e-2, "epsilon": 4.0}


@attrs.frozen
class _Refusing(Accountant):
    """Supports everything; every question is refused with a two-line configuration error."""

    def why_not(self, scheme: Any, strategy: Any) -> str | None:
        return None

    def _calibrate(self, question: Question) -> Any:
        raise ConfigurationError("samples = 5 is invalid:\n  need samples >= 45459597")

    _epsilon = _delta = _calibrate


def test_a_refused_row_says_why_in_one_line_and_the_others_print(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = cc.build_accountant

    def make(name: str, options: Any, strict: bool = True) -> Accountant:
        return _Refusing() if name == "gaussian" else real(name, options, strict=strict)

    monkeypatch.setattr(cc, "build_accountant", make)
    setup = ComparisonSetup(**{**TINY, "delta": 1e-3, "epsilon": 2.0}, bands=(1, 2),
                            families=("poisson", "unamplified"))  # fmt: skip
    rows = compare(setup)
    refused = [r for r in rows if r.family == "unamplified"]
    certified = [r for r in rows if r.family == "poisson"]
    assert refused and all(r.sigma is None for r in refused)
    assert all(r.note == "not certified: samples = 5 is invalid: need samples >= 45459597"
               for r in refused)  # fmt: skip
    assert certified and all(r.sigma is not None for r in certified)
    notes = format_table(setup, rows).split("notes:")[1].strip().splitlines()
    assert len(notes) == len(refused)


def _rows(**changes: Any) -> list[cc.ComparisonRow]:
    values = {**TINY, "bands": (2,), "families": ("balls_in_bins",)}
    values.update(changes)
    return compare(ComparisonSetup(**values))


def test_monte_carlo_rows_choose_their_samples_from_the_precision() -> None:
    rows = _rows(precision=0.2, accountant_options={"seed": 3})
    assert rows and all(r.samples == samples_for_precision(1e-2, 0.2) for r in rows)
    assert all(r.sigma is not None for r in rows)
    kept = _rows(accountant_options={"seed": 3, "samples": 5000})  # no precision: as given
    assert [r.samples for r in kept] == [5000]


def test_a_row_over_the_time_limit_is_reported_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from minsep.accountants.monte_carlo import MonteCarloAccountant

    real = MonteCarloAccountant.plan

    def slow(self: MonteCarloAccountant, *args: Any, **kwargs: Any) -> Any:
        found = real(self, *args, **kwargs, measure=False)
        return attrs.evolve(found, draw_seconds=1.0, eval_seconds=0.0)  # 1 s per sample

    monkeypatch.setattr(MonteCarloAccountant, "plan", slow)
    rows = _rows(  # plain rows (balls-in-bins would take its escort, whose rate is not patched)
        precision=0.05, max_seconds=60.0, families=("poisson", "balls_in_bins"),
        accountant_options={"proposal": "plain"},
    )  # fmt: skip
    slow_rows = [r for r in rows if r.family == "balls_in_bins"]
    assert slow_rows and all(r.sigma is None for r in slow_rows)
    assert all("--max-seconds = 60 is too small" in r.note for r in slow_rows)
    assert all(r.sigma is not None for r in rows if r.family == "poisson")


def test_the_command_takes_precision_proposal_and_max_seconds() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["compare", "--precision", "0.1", "--proposal", "plain", "--max-seconds", "30"]
    )
    setup = setup_from_args(args)
    assert setup.precision == 0.1 and setup.max_seconds == 30.0
    assert setup.accountant_options["proposal"] == "plain"
    default = setup_from_args(parser.parse_args(["compare"]))
    assert default.precision == 0.05 and default.max_seconds == 600.0
    given = setup_from_args(parser.parse_args(["compare", "--samples", "2000"]))
    assert given.precision is None and given.accountant_options["max_seconds"] == 600.0


def test_the_command_refuses_precision_with_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--steps", "8", "--samples", "2000", "--precision", "0.1"]) == 2
    assert "--precision = 0.1 is invalid with --samples" in capsys.readouterr().err


def _row(samples: int, base: float) -> cc.ComparisonRow:
    return cc.ComparisonRow(
        family="b_min_sep", label="b-min-sep", scheme="b_min_sep", bands=2, min_sep=4,
        accountant="monte_carlo", method="monte_carlo", delta=1e-8, sigma=0.9, epsilon=3.0,
        mse=1.0, samples=samples, base_delta=base,
    )  # fmt: skip


def test_escort_rows_that_kept_the_base_delta_are_not_warned() -> None:
    setup = ComparisonSetup(n_steps=64, rate=1 / 64, delta=1e-8, epsilon=3.0)
    assert cc.sample_warnings(setup, [_row(200_247, 5.8e-9)]) == []  # an escort row
    warned = cc.sample_warnings(setup, [_row(200_247, 1e-10)])  # a plain row, far below
    assert len(warned) == 1 and "200,247 samples" in warned[0]


def test_unwalked_sweep_entries_do_not_pass_the_estimate() -> None:
    from minsep.accountants.monte_carlo_notes import estimate_index as _estimate_index

    nan = float("nan")
    assert _estimate_index((1e-9, 2e-9, nan, nan), 1e-8) == 1
    assert _estimate_index((1e-9, 2e-8, 1e-9), 1e-8) == 0


def test_random_phase_rows_take_the_escort_route() -> None:
    """Random-phase cyclic Poisson has an escort law (docs/rdp-escort.md §10.6), so at a small
    delta its Monte Carlo row is verified on escort draws, far fewer than plain sampling needs."""
    rows = compare(ComparisonSetup(n_steps=32, rate=1 / 8, delta=1e-6, sigma=1.0, bands=(2,),
                                   families=("cyclic_poisson_random_phase",), precision=0.05,
                                   accountant_options={"seed": 3}))  # fmt: skip
    assert [r.note for r in rows] == ["escort route"]
    assert rows[0].epsilon is not None and rows[0].samples is not None
    assert rows[0].samples < samples_for_precision(1e-6, 0.05) / 100


@pytest.mark.parametrize(
    ("routed", "expected"),
    [
        ("escort (...; add direction bounded (§10, §10.1))", "escort route"),
        (
            "escort (...; add direction bounded (§10, §10.1) from sigma 1.486, beyond the "
            "precision asked for (...): plain add draws, 9,000,000 per walked entry, ...)",
            "escort route, the add direction by its bound: sigma beyond the precision asked "
            "for, plain add draws being over --max-seconds",
        ),
    ],
)
def test_a_row_whose_add_bound_overshoots_the_precision_says_so(
    monkeypatch: pytest.MonkeyPatch, routed: str, expected: str
) -> None:
    """A route that traded the precision for the time limit (docs/rdp-escort.md §8, where the
    add bound binds) is named in the row's note: its sigma is certified but looser than the
    precision promises, and "sigma low" does not show it."""

    @attrs.frozen
    class Routed:
        proposal: str = "escort"
        routed: str = ""

    from minsep.accountants.monte_carlo import MonteCarloAccountant
    from minsep.framework.cli import sample_choice

    chosen = Routed(routed=routed)
    monkeypatch.setattr(sample_choice, "choose_samples", lambda *args: (chosen, None))
    setup = ComparisonSetup(**TINY, bands=(2,), families=("b_min_sep",), precision=0.05)
    item = cc.plan(setup, lambda name: MonteCarloAccountant())[0]
    _, note = cc._row_accountant(setup, item, MonteCarloAccountant())
    assert note == expected
