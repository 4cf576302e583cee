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
        examples: complete command lines shown under "examples:" by ``minsep COMMAND --help``.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    examples: tuple[str, ...] = ()

    def epilog(self) -> str | None:
        """The examples as the help's closing block (None when there are none)."""
        if not self.examples:
            return None
        return "examples:\n" + "\n".join(f"  {line}" for line in self.examples)
