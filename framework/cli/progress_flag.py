"""The ``--progress`` / ``--no-progress`` flag, one definition for the commands and the paper
scripts (each states its own default in ``text``)."""

from __future__ import annotations

import argparse

__all__ = ["add_progress_flag"]


def add_progress_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, text: str
) -> argparse.Action:
    """Add ``--progress/--no-progress`` to ``parser`` (or one of its groups): ``args.progress``
    is True, False, or None when neither is given (the caller decides, usually by whether
    stderr is a terminal)."""
    return parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help=text
    )
