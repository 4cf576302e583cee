"""``minsep delta`` and ``minsep curve`` (docs/math.md §7.1)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import numpy as np
import pytest

from minsep.framework.cli.curve_command import parse_grid
from minsep.framework.cli.main import main
from minsep.framework.interfaces import Question
from minsep.framework.registries import accountants, schemes
from minsep.framework.results import CurveResult, DeltaResult
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme

TOY = "mc_toy_curve_cli_test"
POISSON = ["--scheme", "poisson", "--steps", "16", "--rate", "1/8", "--sigma", "1"]


@pytest.fixture
def toy() -> Iterator[str]:
    schemes.register(TOY)(ToyScheme)
    yield TOY
    schemes.unregister(TOY)


def _toy(*extra: str) -> list[str]:
    return ["--scheme", TOY, "--steps", "1", "--rate", "3/10", "--sigma", "0.7",
            "--samples", "40000", "--seed", "5", "--chunk-size", "10000", *extra]  # fmt: skip


def test_delta_for_every_deterministic_accountant(capsys: pytest.CaptureFixture[str]) -> None:
    found = {}
    for name in ("pld", "rdp", "gaussian"):
        assert main(["delta", *POISSON, "--epsilon", "1", "--accountant", name, "--json"]) == 0
        result = DeltaResult.from_json(capsys.readouterr().out)
        assert result.accountant == name and result.epsilon == 1.0
        found[name] = result.certified_delta
    # Exact <= proven RDP bound <= unamplified Gaussian bound.
    assert found["pld"] <= found["rdp"] <= found["gaussian"] < 1


def test_delta_monte_carlo_text_and_json(toy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["delta", *_toy("--epsilon", "1", "--json")]) == 0
    result = DeltaResult.from_json(capsys.readouterr().out)
    assert result.certified_delta >= SubsampledGaussianToy(rate=0.3).exact_delta(1.0, 0.7)
    assert result.failure_probability > 0 and result.samples == 40000
    assert main(["delta", *_toy("--epsilon", "1")]) == 0
    out = capsys.readouterr().out
    for label in ("delta (estimate)", "delta (certified)", "folded in", "seed                 5"):
        assert label in out


def test_delta_refuses_a_target_delta(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["delta", *POISSON, "--epsilon", "1", "--delta", "1e-5", "--accountant", "pld"]
    assert main([*argv, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] == "--delta"


def test_uncertified_answers_exit_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cls = accountants.get("gaussian")
    monkeypatch.setattr(cls, "_delta", lambda self, q: Question.bound_delta(q, 1.0))
    assert main(["delta", *POISSON, "--epsilon", "1", "--accountant", "gaussian"]) == 3
    assert "NOT CERTIFIED" in capsys.readouterr().err
    argv = ["curve", *POISSON, "--epsilons", "1,2", "--accountant", "gaussian"]
    assert main(argv) == 3


def test_curve_table_csv_and_json_agree(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["curve", *POISSON, "--epsilons", "0.5,1,2", "--accountant", "pld"]
    assert main([*base, "--json"]) == 0
    result = CurveResult.from_json(capsys.readouterr().out)
    assert result.epsilons == (0.5, 1.0, 2.0) and result.failure_probability == 0.0
    assert list(result.certified_delta) == sorted(result.certified_delta, reverse=True)
    assert main([*base, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [float(r["certified_delta"]) for r in rows] == list(result.certified_delta)
    assert [float(r["guaranteed_delta"]) for r in rows] == list(result.certified_delta)
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "delta (certified)" in out and "pld (exact)" in out
    # The JSON is what other pipelines compose: a CertifiedPLD at dp_accounting's default grid.
    certified = result.certified_pld()
    assert certified.get_delta_for_epsilon(1.0) == pytest.approx(result.certified_delta[1])


def test_curve_monte_carlo_reports_its_failure_probability(
    toy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["curve", *_toy("--epsilon-grid", "0:2:5", "--failure-probability", "1e-4", "--json")]
    assert main(argv) == 0
    result = CurveResult.from_json(capsys.readouterr().out)
    assert result.epsilons == (0.0, 0.5, 1.0, 1.5, 2.0)
    assert result.failure_probability == 1e-4 and result.method == "monte_carlo"
    truth = SubsampledGaussianToy(rate=0.3)
    assert all(
        u >= truth.exact_delta(e, 0.7)
        for e, u in zip(result.epsilons, result.certified_delta, strict=True)
    )
    assert main(["curve", *_toy("--epsilons", "1,2", "--csv")]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for row in rows:
        assert float(row["guaranteed_delta"]) == pytest.approx(float(row["certified_delta"]) + 1e-6)


@pytest.mark.parametrize(
    "extra",
    [["--epsilons", "2,1"], ["--epsilons", "1,1"], ["--epsilons", "x"],
     ["--epsilon-grid", "2:1:3"], ["--epsilon-grid", "0:1:1"], ["--epsilon-grid", "0:1"],
     ["--epsilons", "1", "--epsilon-grid", "0:1:2"], [],
     ["--epsilons", "1", "--failure-probability", "0"], ["--epsilons", "1", "--delta", "0.1"]],
)  # fmt: skip
def test_curve_refuses_bad_grids(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:  # usage errors exit through argparse, refused values return; both with status 2
        status = main(["curve", *POISSON, "--accountant", "gaussian", *extra])
    except SystemExit as exc:
        status = int(exc.code or 0)
    assert status == 2
    assert "minsep curve: error:" in capsys.readouterr().err


def test_parse_grid_is_inclusive() -> None:
    np.testing.assert_allclose(parse_grid("0:8:33"), np.linspace(0, 8, 33))


def test_curve_gives_the_epsilon_of_delta_view(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["curve", *POISSON, "--epsilon-grid", "0:6:25", "--accountant", "pld"]
    assert main([*base, "--deltas", "1e-3,1e-5", "--json"]) == 0
    result = CurveResult.from_json(capsys.readouterr().out)
    assert result.target_deltas == (1e-3, 1e-5)
    assert result.certified_epsilons == tuple(result.certified_epsilon(d) for d in (1e-3, 1e-5))
    assert main([*base, "--deltas", "1e-3"]) == 0
    assert "epsilon (certified)" in capsys.readouterr().out
    assert main([*base, "--deltas", "1e-3", "--csv"]) == 2
    assert main([*base, "--csv", "--json"]) == 2
    capsys.readouterr()
    assert main([*base, "--failure-probability", "1e-3", "--csv"]) == 0
    assert "is not what accountant 'pld' spends" in capsys.readouterr().err


def test_curve_states_its_delta_floor_and_marks_epsilons_below_it(
    toy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, friction 6: a sampled curve certifies delta only down to a floor set by its
    samples; the table says so in a line, marks epsilon(delta) = inf rows below it, and stderr
    says why they are inf."""
    assert main(["curve", *_toy("--epsilon-grid", "0:4:9", "--deltas", "1e-2,1e-9")]) == 0
    captured = capsys.readouterr()
    floor_line = next(x for x in captured.out.splitlines() if x.startswith("delta floor"))
    floor = float(floor_line.split()[2].rstrip(":"))
    assert 1e-9 < floor < 1e-2 and "40,000 samples" in floor_line
    lines = captured.out.splitlines()
    start = next(i for i, x in enumerate(lines) if "epsilon (certified)" in x)
    coarse, fine = lines[start + 1], lines[start + 2]
    assert "inf" in fine and fine.endswith("(below the delta floor)")
    assert "inf" not in coarse and "below the delta floor" not in coarse
    assert "epsilon(delta) is inf at delta = 1e-09: below the curve's delta floor" in captured.err
