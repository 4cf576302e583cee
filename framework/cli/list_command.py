"""``minsep list``: the registered schemes, strategies and accountants."""

from __future__ import annotations

import argparse
import json
import re
import warnings
from typing import Any

from minsep.framework.cli.accountant_options import declared_options
from minsep.framework.cli.command import Command
from minsep.framework.cli.coverage import coverage, describe_coverage
from minsep.framework.errors import MinsepError
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.registry import Registry

_REGISTRIES: dict[str, Registry[Any]] = {
    "schemes": schemes,
    "strategies": strategies,
    "accountants": accountants,
}


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "what", nargs="?", choices=sorted(_REGISTRIES), help="list only this registry"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def plain(text: str) -> str:
    """Docstring text without reST markup: backticks (literals, roles) are dropped."""
    return re.sub(r":\w+:`([^`]*)`", r"\1", text).replace("`", "")


def _accountants_of(name: str) -> list[str]:
    """The accountants covering scheme ``name`` (at its example, :mod:`.coverage`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a conjecture warning while building a model
        try:
            found = coverage(name)
        except MinsepError as exc:
            return [f"unknown: its example could not be probed ({exc})"]
    return list(found)


def _run(args: argparse.Namespace) -> int:
    chosen = [args.what] if args.what else list(_REGISTRIES)
    listing: dict[str, Any] = {name: _REGISTRIES[name].names() for name in chosen}
    if args.json:
        if "schemes" in listing:
            listing["scheme_accountants"] = {n: _accountants_of(n) for n in listing["schemes"]}
        print(json.dumps(listing, indent=2))
        return 0
    for title, entries in listing.items():
        print(f"{title}:")
        if not entries:
            print("  (none registered)")
        width = max((len(n) for n in entries), default=0)
        for name, description in entries.items():
            print(f"  {name:<{width}}  {plain(description)}")
            if title == "accountants":
                cls = accountants.get(name)
                flags = [f"--{d.replace('_', '-')}" for d in declared_options(cls).values()]
                sound = "sound" if cls.sound else "not declared sound: never picked by auto"
                print(f"  {'':<{width}}    {cls.kind.value}, {sound}, rank {cls.rank}")
                print(f"  {'':<{width}}    options: {' '.join(flags) or 'none'}")
            if title == "strategies":
                for parameter in strategies.get(name).parameters():
                    print(f"  {'':<{width}}    {name}:{plain(parameter.describe())}")
            if title == "schemes":
                for parameter in schemes.get(name).parameters():
                    print(f"  {'':<{width}}    {parameter.flag} {plain(parameter.describe())}")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        text = describe_coverage(name)
                    except MinsepError as exc:
                        text = f"unknown: its example could not be probed ({exc})"
                print(f"  {'':<{width}}    accountants: {text}")
    if "schemes" in listing:
        print(
            "(accountants: those whose hooks accept the scheme's example with the identity and "
            "a banded strategy; 'minsep epsilon --accountant NAME' refuses a pair it cannot "
            "account, naming those that can)"
        )
    return 0


command = Command(
    "list",
    "list registered schemes (with their options and accountants), strategies and accountants",
    _add_arguments,
    _run,
    examples=("minsep list", "minsep list schemes", "minsep list accountants --json"),
)
