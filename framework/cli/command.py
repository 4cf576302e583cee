"""The subcommand contract of the ``minsep`` CLI."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import attrs


@attrs.frozen
class Command:
    """A ``minsep`` subcommand.

    Attributes:
        name: the word typed after ``minsep``.
        help: one line shown by ``minsep --help``.
        add_arguments: fills the subcommand's argparse parser.
        run: executes the parsed arguments and returns the exit status.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
