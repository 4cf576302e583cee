"""A command-line flag for a declared option (a scheme's, strategy's or accountant's).

Schemes, strategies and accountants declare their options as
:class:`~minsep.framework.parameters.Parameter` s; the commands turn each into one flag whose
default is None (not given): ``--x/--no-x`` for a bool, else a value read by the option kind's
parser (:data:`~minsep.framework.cli.argtypes.OPTION_PARSERS`) with the kind as its metavar.
"""

from __future__ import annotations

import argparse
from typing import Any

from minsep.framework.cli.argtypes import OPTION_PARSERS
from minsep.framework.parameters import Parameter

__all__ = ["add_option_flag", "taken_flags"]


def add_option_flag(
    group: Any, parameter: Parameter, dest: str, text: str, flag: str | None = None
) -> None:
    """Add ``flag`` (default ``parameter.flag``) for ``parameter`` to ``group`` (a parser or
    an argument group), stored under ``dest`` with the help ``text``."""
    if parameter.kind == "bool":
        group.add_argument(
            flag or parameter.flag,
            dest=dest,
            action=argparse.BooleanOptionalAction,
            default=None,
            help=text,
        )
    else:
        group.add_argument(
            flag or parameter.flag,
            dest=dest,
            type=OPTION_PARSERS[parameter.kind],
            default=None,
            metavar=parameter.kind.upper(),
            help=text,
        )


def taken_flags(parser: argparse.ArgumentParser, *, dests: bool = True) -> set[str]:
    """The option strings ``parser`` has already (and, with ``dests``, their dests): a
    generated flag never shadows one of the command's own."""
    flags = {flag for action in parser._actions for flag in action.option_strings}
    return flags | {action.dest for action in parser._actions} if dests else flags
