"""The CLI's help and ``minsep list`` (issue 19, item 3): help with defaults and examples that
parse, and a plain ``minsep list`` (and its JSON) with each scheme's options and accountants."""

from __future__ import annotations

import argparse
import json
import shlex

import pytest

from minsep.framework.cli.coverage import coverage
from minsep.framework.cli.main import build_parser, commands, main
from minsep.framework.registries import accountants, schemes


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.mark.parametrize("name", ["list", "compare", "epsilon", "calibrate", "delta", "curve"])
def test_help_shows_defaults_and_examples(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([name, "--help"])
    out = capsys.readouterr().out
    assert "\nexamples:\n  minsep " + name in out
    if name != "list":
        assert "--steps STEPS" in out and "(default: 1024)" in out
        assert "(default: None)" not in out and "(default: )" not in out


def test_every_example_parses() -> None:
    parser = build_parser()
    found = 0
    for name, sub in _subparsers(parser).items():
        epilog = sub.epilog or ""
        for line in epilog.splitlines()[1:]:
            words = shlex.split(line, comments=True)
            assert words[:2] == ["minsep", name]
            args = parser.parse_args(words[1:])
            assert args.command == name
            found += 1
    assert found >= len(commands())


def test_list_is_plain_text_with_options_and_accountants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "schemes"]) == 0
    out = capsys.readouterr().out
    assert "`" not in out
    lines = out.splitlines()
    for name in schemes.names():
        (start,) = [i for i, line in enumerate(lines) if line.startswith(f"  {name} ")]
        block = []
        for line in lines[start + 1 :]:
            if not line.startswith("    "):
                break
            block.append(line.strip())
        assert block[-1].startswith("accountants: ")
        for parameter in schemes.get(name).parameters():
            assert any(b.startswith(parameter.flag + " ") for b in block)
    poisson = next(line for line in lines if line.startswith("  poisson "))
    after = lines[lines.index(poisson) + 1].strip()
    assert after.startswith("accountants: ") and "pld" in after and "monte_carlo" in after


def test_list_json_carries_the_accountants_the_hooks_accept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list", "schemes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["scheme_accountants"]) == set(data["schemes"])
    example = schemes.get("cyclic_poisson").example()
    from minsep.framework.setup import build_strategy

    identity = build_strategy(example.n_steps, 1)
    expected = [e.name for e in accountants.entries() if e.cls().supports(example, identity)]
    assert data["scheme_accountants"]["cyclic_poisson"] == expected
    assert "rdp" not in coverage("cyclic_poisson") and "rdp" in coverage("b_min_sep")
