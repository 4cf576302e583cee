"""The accountants' command-line options, from what each accountant declares.

Every registered accountant (plugins included) declares the options the command line sets
(``Accountant.command_line_options``: ``{field: flag dest}``, by default its attrs init fields of
a command-line kind under their own names). The commands forward a given flag to the field of
the accountant that answers; a declared option that no command flag has yet gets a generated
flag (``--dest-with-dashes``), so a plugin accountant's options work with no edit here.
"""

from __future__ import annotations

import argparse
from typing import Any

from minsep.framework.cli.option_flags import add_option_flag, taken_flags
from minsep.framework.interfaces import Accountant
from minsep.framework.option_groups import flat_parameters
from minsep.framework.parameters import CLI_KINDS, Parameter
from minsep.framework.registries import accountants


def declared_options(cls: type[Accountant]) -> dict[str, str]:
    """``{field: flag dest}`` of the options ``cls`` lets the command line set."""
    declared = cls.command_line_options
    if declared is not None:
        return dict(declared)
    return {p.name: p.name for p in flat_parameters(cls) if p.kind in CLI_KINDS}


def option_fields() -> dict[str, str]:
    """``{flag dest: field}`` over every registered accountant (first declaration wins)."""
    found: dict[str, str] = {}
    for entry in accountants.entries():
        for field, dest in declared_options(entry.cls).items():
            found.setdefault(dest, field)
    return found


def _parameters() -> dict[str, tuple[Parameter, str]]:
    """``{flag dest: (parameter, users)}`` of the declared options of a command-line kind."""
    found: dict[str, tuple[Parameter, list[str]]] = {}
    for entry in accountants.entries():
        by_field = {p.name: p for p in flat_parameters(entry.cls) if p.kind in CLI_KINDS}
        for field, dest in declared_options(entry.cls).items():
            if field in by_field:
                found.setdefault(dest, (by_field[field], []))[1].append(entry.name)
    return {dest: (p, ", ".join(users)) for dest, (p, users) in found.items()}


def add_accountant_arguments(parser: argparse.ArgumentParser) -> None:
    """A flag for every declared accountant option that ``parser`` has no flag for yet."""
    taken = taken_flags(parser)
    group = None
    for dest, (parameter, users) in _parameters().items():
        flag = "--" + dest.replace("_", "-")
        if dest in taken or flag in taken:
            continue
        group = group or parser.add_argument_group("accountant options (of the registered ones)")
        add_option_flag(group, parameter, dest, f"{parameter.help} [{users}]".strip(), flag)


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The accountant options given on the command line, as accountant field names."""
    return {
        field: getattr(args, dest)
        for dest, field in option_fields().items()
        if getattr(args, dest, None) is not None
    }
