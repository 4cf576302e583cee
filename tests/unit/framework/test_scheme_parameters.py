"""Schemes declare their options (parameters), and the CLI and setup path are built from them."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

from minsep.framework import setup
from minsep.framework.cli.main import main
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter, attribute_docs, parameters_of
from minsep.framework.registries import schemes


@attrs.frozen
class _Documented:
    """A class with an Attributes section.

    Attributes:
        n_steps: steps.
        rate: the rate.
        width (int): how wide ``it`` is,
            over two lines.
        flag: a switch.

    Trailing prose that is not an attribute.
    """

    n_steps: int
    rate: float
    width: int
    flag: bool = True
    derived: float = 0.5
    label: ClassVar[str] = "ignored"


def test_attribute_docs_parse_google_style_and_strip_backticks() -> None:
    docs = attribute_docs(_Documented)
    assert docs["width"] == "how wide it is, over two lines."
    assert docs["flag"] == "a switch."
    assert "Trailing" not in " ".join(docs.values())


def test_parameters_of_skips_positional_and_derived_fields() -> None:
    params = parameters_of(_Documented, derived=("derived",))
    assert [p.name for p in params] == ["width", "flag"]
    width, flag = params
    assert width == Parameter("width", "int", True, None, "how wide it is, over two lines.")
    assert flag.kind == "bool" and not flag.required and flag.default is True
    assert width.flag == "--width" and "required" in width.describe()


@pytest.mark.parametrize("name", sorted(schemes.names()))
def test_every_registered_scheme_declares_its_from_rate_options(name: str) -> None:
    cls = schemes.get(name)
    params = cls.parameters()
    assert all(isinstance(p, Parameter) for p in params)
    assert len({p.name for p in params}) == len(params)
    assert not {"n_steps", "rate"} & {p.name for p in params}
    # A missing required option is named, with its flag, before any TypeError can happen.
    required = [p for p in params if p.required]
    if required:
        with pytest.raises(ConfigurationError, match=required[0].name):
            cls.from_rate(16, 1 / 16)
    with pytest.raises(ConfigurationError, match="no_such_option"):
        cls.from_rate(16, 1 / 16, no_such_option=1)


def test_missing_min_sep_names_the_parameter_and_the_cli_names_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ConfigurationError, match=r"min_sep = <missing>.*'min_sep'") as info:
        schemes.get("b_min_sep").from_rate(256, 1 / 64)
    assert info.value.parameter == "min_sep"
    status, _, err = _run(["epsilon", *COMMON], capsys)
    assert status == 2 and "--min-sep" in err and "Traceback" not in err


def test_build_accountant_refuses_options_it_does_not_take_when_strict() -> None:
    with pytest.raises(ConfigurationError, match=r"'pld' does not take .*--samples.*--seed"):
        setup.build_accountant("pld", {"samples": 10, "seed": 3})
    lenient = setup.build_accountant("pld", {"samples": 10, "seed": 3}, strict=False)
    assert lenient.registry_name == "pld"
    mc = setup.build_accountant("monte_carlo", {"samples": 1000, "seed": None})
    assert mc.samples == 1000 and mc.seed is None  # type: ignore[attr-defined]


def test_select_accountant_auto_follows_the_preference() -> None:
    scheme = schemes.get("poisson").from_rate(8, 0.25)
    assert setup.select_accountant("auto", scheme, setup.build_strategy(8, 1)).registry_name == (
        "pld"
    )
    bmin = schemes.get("b_min_sep").from_rate(8, 0.25, min_sep=2)
    chosen = setup.select_accountant("auto", bmin, setup.build_strategy(8, 2))
    assert chosen.registry_name == "monte_carlo"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out = capsys.readouterr()
    return status, out.out, out.err


COMMON = ["--steps", "8", "--rate", "1/4", "--sigma", "2", "--delta", "1e-3"]


def test_cli_refuses_monte_carlo_flags_for_an_exact_accountant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["epsilon", "--scheme", "poisson", *COMMON, "--accountant", "pld"]
    status, _, err = _run([*argv, "--samples", "10", "--seed", "3", "--workers", "7"], capsys)
    assert status == 2 and "--samples, --seed, --workers" in err


def test_cli_param_and_generated_flags(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["epsilon", "--scheme", "cyclic_poisson", *COMMON, "--accountant", "pld"]
    flag = _run([*base, "--min-sep", "2"], capsys)
    param = _run([*base, "--param", "min_sep=2"], capsys)
    assert flag[0] == param[0] == 0

    def answer(out: str) -> list[str]:  # the accounting lines, not the timing ones
        return [line for line in out.splitlines() if not line.startswith("seconds")]

    assert answer(flag[1]) == answer(param[1]) and "epsilon (certified)" in flag[1]
    other = _run([*base, "--min-sep", "4"], capsys)
    assert answer(other[1]) != answer(flag[1])  # the option reached the scheme
    status, _, err = _run([*base, "--min-sep", "2", "--param", "min_sep=2"], capsys)
    assert status == 2 and "already given" in err
    status, _, err = _run([*base, "--param", "min_sep"], capsys)
    assert status == 2 and "KEY=VALUE" in err
    status, _, err = _run([*base, "--param", "bogus=1", "--min-sep", "2"], capsys)
    assert status == 2 and "'bogus'" in err


def test_cli_reaches_every_option_of_truncated_and_multi_attribution(
    capsys: pytest.CaptureFixture[str],
) -> None:
    truncated = [
        "epsilon",
        "--scheme",
        "truncated",
        *COMMON,
        "--base",
        "poisson",
        "--dataset-size",
        "40",
        "--max-batch-size",
        "20",
        "--accountant",
        "gaussian",
    ]
    status, _, err = _run(truncated, capsys)
    assert status == 0, err
    multi = [
        "epsilon",
        "--scheme",
        "multi_attribution",
        *COMMON,
        "--min-sep",
        "2",
        "--max-user-examples",
        "3",
        "--probability",
        "0.25",
        "--accountant",
        "gaussian",
    ]
    status, _, err = _run(multi, capsys)
    assert status == 0, err


def test_list_shows_each_schemes_options(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(["list", "schemes"], capsys)
    assert status == 0
    assert "--min-sep min_sep (int, required)" in out
    assert "--max-batch-size" in out and "``" not in out


def test_help_lists_generated_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["epsilon", "--help"])
    out = capsys.readouterr().out
    for flag in ("--min-sep", "--warm-start", "--max-user-examples", "--base", "--param"):
        assert flag in out
