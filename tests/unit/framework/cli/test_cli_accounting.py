"""``minsep epsilon``, ``minsep calibrate`` and the shared argument handling."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

import attrs
import pytest

from minsep.framework.cli import common
from minsep.framework.cli.main import main
from minsep.framework.registries import accountants, schemes
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme

TOY = "mc_toy_cli_test"


@pytest.fixture
def toy() -> Iterator[str]:
    schemes.register(TOY)(ToyScheme)
    yield TOY
    schemes.unregister(TOY)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    common.add_setup_arguments(parser)
    return parser.parse_args(argv)


def test_parse_rate_accepts_fractions_and_refuses_nonsense() -> None:
    assert common.parse_rate("1/256") == 1 / 256
    assert common.parse_rate("0.25") == 0.25
    for bad in ["0", "1.5", "abc", "1/0", "-1/4"]:
        with pytest.raises(argparse.ArgumentTypeError, match="rate"):
            common.parse_rate(bad)


def test_only_given_scheme_options_are_forwarded() -> None:
    assert common.scheme_options(_parse([])) == {}
    args = _parse(["--min-sep", "8", "--cold-start", "--dataset-size", "1000"])
    assert common.scheme_options(args) == {"min_sep": 8, "warm_start": False, "dataset_size": 1000}
    assert args.rate == 1 / 256 and args.steps == 1024 and args.delta == 1e-3
    with pytest.raises(SystemExit):
        _parse(["--delta", "2"])


def test_accountant_options_follow_the_accountant_fields() -> None:
    args = _parse(["--samples", "5000", "--seed", "3", "--workers", "2", "--backend", "numpy"])
    mc = accountants.get("monte_carlo")
    assert common.accountant_options(mc, args) == {
        "samples": 5000,
        "seed": 3,
        "workers": 2,
        "backend": "numpy",
    }

    @attrs.frozen
    class Exactish:
        seed: int = 0

    assert common.accountant_options(Exactish, args) == {"seed": 3}  # type: ignore[arg-type]
    built = common.build_accountant(args)
    assert built.samples == 5000 and built.seed == 3  # type: ignore[attr-defined]


def test_build_strategy_identity_and_banded() -> None:
    assert common.build_strategy(_parse(["--steps", "16"])).bands == 1
    banded = common.build_strategy(_parse(["--steps", "16", "--bands", "3"]))
    assert banded.bands == 3


def _toy_args(*extra: str) -> list[str]:
    return [
        "--scheme", TOY, "--steps", "1", "--rate", "3/10", "--samples", "40000",
        "--pilot-samples", "10000", "--seed", "3", "--chunk-size", "10000", *extra,
    ]  # fmt: skip


def test_epsilon_json(toy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", *_toy_args("--sigma", "0.7", "--delta", "1e-3", "--json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "epsilon" and data["method"] == "monte_carlo"
    truth = SubsampledGaussianToy(rate=0.3).exact_epsilon(1e-3, 0.7)
    assert data["certified_epsilon"] >= truth
    record = data["monte_carlo"]
    assert record["samples"] == 40000 and record["seed"] == 3 and record["pilot_samples"] == 10000


def test_epsilon_text(toy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", *_toy_args("--sigma", "0.7", "--delta", "1e-3")]) == 0
    out = capsys.readouterr().out
    for label in ["epsilon (estimate)", "epsilon (certified)", "40,000 verification",
                  "throughput", "seconds", "seed                 3"]:  # fmt: skip
        assert label in out


def test_calibrate_json_and_text(toy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", *_toy_args("--epsilon", "2", "--delta", "1e-3", "--json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "calibration"
    assert SubsampledGaussianToy(rate=0.3).exact_delta(2.0, data["sigma"]) <= 1e-3
    assert main(["calibrate", *_toy_args("--epsilon", "2", "--delta", "1e-3")]) == 0
    out = capsys.readouterr().out
    assert "sigma (certified)" in out and "sweep" in out


def test_errors_are_one_line_with_status_2(toy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", "--scheme", "no_such_scheme", "--sigma", "1"]) == 2
    assert "unknown scheme" in capsys.readouterr().err
    code = main(["epsilon", *_toy_args("--sigma", "1", "--delta", "1e-7")])
    assert code == 2
    assert "need --samples >=" in capsys.readouterr().err


def test_epsilon_on_the_real_b_min_sep_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps",
            "32", "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "20000",
            "--seed", "1", "--json"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scheme"]["scheme"] == "b_min_sep"
    assert data["strategy"]["bands"] == 4
    assert 0 < data["epsilon"] <= data["certified_epsilon"] < float("inf")
