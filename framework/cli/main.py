"""Entry point of the ``minsep`` command."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from minsep.framework.cli.command import Command
from minsep.framework.errors import MinsepError

#: Modules (each exposing ``command``) that make up the built-in subcommands.
BUILTIN: tuple[str, ...] = (
    "minsep.framework.cli.list_command",
    "minsep.framework.cli.compare_command",
    "minsep.framework.cli.epsilon_command",
    "minsep.framework.cli.calibrate_command",
)


def _version() -> str:
    try:
        return importlib.metadata.version("minsep")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def commands() -> dict[str, Command]:
    """Built-in commands plus those registered under the ``minsep.commands`` entry points."""
    found: dict[str, Command] = {}
    for module in BUILTIN:
        cmd = importlib.import_module(module).command
        found[cmd.name] = cmd
    for ep in importlib.metadata.entry_points(group="minsep.commands"):
        try:
            cmd = ep.load()
        except (ImportError, AttributeError) as exc:  # a broken plugin must not break the CLI
            print(f"minsep: skipping command plugin {ep.name!r}: {exc}", file=sys.stderr)
            continue
        if isinstance(cmd, Command):
            found.setdefault(cmd.name, cmd)
    return dict(sorted(found.items()))


def build_parser() -> argparse.ArgumentParser:
    """The full argparse tree."""
    parser = argparse.ArgumentParser(
        prog="minsep",
        description="Privacy accounting for DP training with correlated noise (BandMF) and "
        "b-min-sep subsampling.",
    )
    parser.add_argument("--version", action="version", version=f"minsep {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in commands().values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; errors of minsep print one line and exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args))
    except MinsepError as exc:
        print(f"minsep {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
