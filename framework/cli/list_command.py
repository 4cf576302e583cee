"""``minsep list``: the registered schemes, strategies and accountants."""

from __future__ import annotations

import argparse
import json
from typing import Any

from minsep.framework.cli.command import Command
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


def _run(args: argparse.Namespace) -> int:
    chosen = [args.what] if args.what else list(_REGISTRIES)
    listing = {name: _REGISTRIES[name].names() for name in chosen}
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for title, entries in listing.items():
        print(f"{title}:")
        if not entries:
            print("  (none registered)")
        width = max((len(n) for n in entries), default=0)
        for name, description in entries.items():
            print(f"  {name:<{width}}  {description.replace('``', '')}")
            if title == "schemes":
                for parameter in schemes.get(name).parameters():
                    print(f"  {'':<{width}}    {parameter.flag} {parameter.describe()}")
    return 0


command = Command(
    "list", "list registered schemes, strategies and accountants", _add_arguments, _run
)
