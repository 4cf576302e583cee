"""``--strategy NAME[:key=value,...]`` on epsilon, delta, calibrate, curve and train, with the
strategy's options as flags, for built-in strategies and one registered by a separate package."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from minsep.framework import validation as v
from minsep.framework.cli import strategy_options
from minsep.framework.cli.main import main
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter, parameters_of
from minsep.framework.registries import strategies
from minsep.framework.setup import parse_strategy_spec
from minsep.strategies.banded_toeplitz import BandedToeplitz

SETUP = ["--scheme", "b_min_sep", "--min-sep", "2", "--steps", "12", "--rate", "0.2",
         "--samples", "4000", "--seed", "0", "--quiet"]  # fmt: skip
QUESTIONS = {
    "epsilon": ["--sigma", "2", "--delta", "0.1", "--json"],
    "delta": ["--sigma", "2", "--epsilon", "1", "--json"],
    "calibrate": ["--epsilon", "4", "--delta", "0.1", "--json"],
    "curve": ["--sigma", "2", "--epsilons", "1,2", "--json"],
}


@attrs.frozen
class GeometricBands(BandedToeplitz):
    """A plugin strategy: ``c_j`` proportional to ``decay^j`` over ``span`` bands.

    Attributes:
        decay: ratio of consecutive coefficients.
        span: number of bands.
    """

    decay: float = attrs.field(default=0.5, validator=v.probability())
    span: int = attrs.field(default=2, validator=v.positive_int())

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """Generated from its fields (the built-in base declares its own options)."""
        return parameters_of(cls)

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> GeometricBands:
        fields = {"decay": 0.5, "span": 2, **options}
        column = fields["decay"] ** np.arange(fields["span"])
        return cls(coefficients=column, **fields)


@pytest.fixture
def plugin_strategy() -> Iterator[str]:
    strategies.register("geometric_probe")(GeometricBands)
    yield "geometric_probe"
    strategies.unregister("geometric_probe")


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize("command", sorted(QUESTIONS))
def test_every_question_takes_strategy_blt(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, *SETUP, "--strategy", "blt", *QUESTIONS[command]]) == 0
    record = json.dumps(_json(capsys))
    assert '"strategy": "blt"' in record


def test_train_takes_strategy_blt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.json"
    args = ["train", *SETUP, "--strategy", "blt", "--data", "synthetic", "--epsilon", "4"]
    args += ["--delta", "0.1"]
    assert main([*args, "--no-progress", "--output", str(path)]) == 0
    assert "strategy blt" in capsys.readouterr().out
    assert json.loads(path.read_text())["run"]["strategy"]["strategy"] == "blt"


def test_a_plugin_strategy_takes_its_field_options_as_flags_and_in_the_spec(
    plugin_strategy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for given in (["--strategy", f"{plugin_strategy}:decay=0.25,span=3"],
                  ["--strategy", plugin_strategy, "--decay", "0.25", "--span", "3"]):  # fmt: skip
        assert main(["epsilon", *SETUP, *given, *QUESTIONS["epsilon"]]) == 0
        strategy = _json(capsys)["strategy"]
        assert strategy["strategy"] == plugin_strategy and strategy["bands"] == 3
        np.testing.assert_allclose(
            strategy["coefficients"], np.array([1, 0.25, 0.0625]) / np.sqrt(1 + 0.25**2 + 0.25**4)
        )
    assert main(["list", "strategies"]) == 0
    listing = capsys.readouterr().out
    assert f"{plugin_strategy}:decay (float, default 0.5)" in listing


def test_bands_is_the_shorthand_and_sets_bands_of_a_strategy_that_takes_it() -> None:
    def build(*argv: str) -> Any:
        args = argparse.Namespace(steps=16, strategy=None, bands=None)
        for flag, value in zip(argv[::2], argv[1::2], strict=True):
            setattr(args, flag, value)
        return strategy_options.build_strategy(args)

    assert build().strategy_name == "identity"
    assert build("bands", 4).bands == 4
    assert build("strategy", "banded_toeplitz", "bands", 3).bands == 3
    assert build("strategy", "banded_toeplitz:bands=2,objective=max").bands == 2
    with pytest.raises(ConfigurationError, match="'blt' does not take bands"):
        build("strategy", "blt", "bands", 3)
    with pytest.raises(ConfigurationError, match="given twice"):
        build("strategy", "banded_toeplitz:bands=2", "bands", 3)


def test_the_spec_reads_commas_colons_and_values_with_colons() -> None:
    assert parse_strategy_spec("blt:workload=momentum:0.9,buffers=3") == (
        "blt",
        {"workload": "momentum:0.9", "buffers": 3},
    )
    assert parse_strategy_spec("banded_toeplitz:bands=4:objective=max") == (
        "banded_toeplitz",
        {"bands": 4, "objective": "max"},
    )
    with pytest.raises(ConfigurationError, match="is not key=value"):
        parse_strategy_spec("blt:oops")
