"""Entry point of the ``minsep`` command."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from minsep.framework.cli.command import Command
from minsep.framework.errors import MinsepError, Terminated
from minsep.framework.interrupts import sigterm_as_interrupt

#: Modules (each exposing ``command``) that make up the built-in subcommands.
BUILTIN: tuple[str, ...] = (
    "minsep.framework.cli.list_command",
    "minsep.framework.cli.compare_command",
    "minsep.framework.cli.epsilon_command",
    "minsep.framework.cli.calibrate_command",
    "minsep.framework.cli.delta_command",
    "minsep.framework.cli.curve_command",
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


#: Exit status of a refused or failed command (argparse uses it for usage errors too).
EXIT_ERROR = 2
#: Exit status after Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: Exit status after SIGTERM (128 + SIGTERM), handled like Ctrl-C.
EXIT_TERMINATED = 143


class _UsageExit(SystemExit):
    """argparse's usage error (status 2), keeping the message for ``--json``."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_ERROR)
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, printing usage errors as usual but keeping their message (for ``--json``)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise _UsageExit(message)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with each option's default (when it has one its help does not already state)
    and the examples block kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        empty = (
            default is None
            or default is False
            or default is argparse.SUPPRESS
            or (isinstance(default, str | tuple | list) and not default)
        )
        if empty or not action.option_strings or "default" in text or "%(default)" in text:
            return text
        if isinstance(default, tuple | list):
            default = ",".join(map(str, default))
        return f"{text} (default: {default})"


def build_parser() -> argparse.ArgumentParser:
    """The full argparse tree."""
    parser = _Parser(
        prog="minsep",
        description="Privacy accounting for DP training with correlated noise (BandMF) and "
        "b-min-sep subsampling.",
        epilog="Run 'minsep COMMAND --help' for a command's options, defaults and examples. "
        "After 'make', the command is .venv/bin/minsep ('source .venv/bin/activate' puts it on "
        "PATH).",
    )
    parser.add_argument("--version", action="version", version=f"minsep {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in commands().values():
        p = sub.add_parser(
            cmd.name,
            help=cmd.help,
            description=cmd.help,
            epilog=cmd.epilog(),
            formatter_class=HelpFormatter,
        )
        cmd.add_arguments(p)
        options = {a.dest: a.option_strings[-1] for a in p._actions if a.option_strings}
        p.set_defaults(_run=cmd.run, _options=options)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def conflicting_option(
    parser: argparse.ArgumentParser, command: str, argv: Sequence[str]
) -> str | None:
    """The refusal of a single-valued option given twice with different values, else None.

    argparse keeps the last value silently, so ``--sigma 1 --sigma 2`` would answer a
    question the user may not have meant. Repeating the same value is harmless and accepted;
    repeatable options (``--param``) and flags are not concerned.
    """
    sub = _subparser(parser, command)
    if sub is None:
        return None
    single = {
        flag: action
        for action in sub._actions
        if isinstance(action, argparse._StoreAction) and action.nargs is None
        for flag in action.option_strings
        if flag.startswith("--")
    }
    seen: dict[str, tuple[str, object]] = {}  # dest -> (text, value) of its first occurrence
    tokens = list(argv)
    for i, token in enumerate(tokens):
        if token == "--":
            break
        if not token.startswith("--"):
            continue
        flag, has_value, text = token.partition("=")
        matches = [f for f in single if f == flag] or [f for f in single if f.startswith(flag)]
        if len(matches) != 1:
            continue
        if not has_value:
            if i + 1 >= len(tokens):
                continue
            text = tokens[i + 1]
        action = single[matches[0]]
        try:
            value = action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            value = text
        if action.dest in seen:
            first_text, first_value = seen[action.dest]
            if first_value != value:
                name = action.option_strings[-1]
                return (
                    f"{name} is given twice with different values ({first_text!r} and "
                    f"{text!r}): give it once"
                )
        else:
            seen[action.dest] = (text, value)
    return None


def contradicting_flags(
    parser: argparse.ArgumentParser, command: str, argv: Sequence[str]
) -> str | None:
    """The refusal of two flags that set one option to different values (``--warm-start
    --cold-start``, ``--progress --no-progress``), else None: argparse keeps the last one
    silently."""
    sub = _subparser(parser, command)
    if sub is None:
        return None
    flags: dict[str, tuple[str, object]] = {}  # flag -> (dest, value it sets)
    for action in sub._actions:
        for flag in action.option_strings:
            if isinstance(action, argparse.BooleanOptionalAction):
                flags[flag] = (action.dest, not flag.startswith("--no-"))
            elif isinstance(action, argparse._StoreConstAction):
                flags[flag] = (action.dest, action.const)
    seen: dict[str, tuple[str, object]] = {}  # dest -> (flag, value) of its first occurrence
    for token in argv:
        if token == "--":
            break
        matches = [f for f in flags if f == token] or [f for f in flags if f.startswith(token)]
        if not token.startswith("--") or len(matches) != 1:
            continue
        dest, value = flags[matches[0]]
        first = seen.setdefault(dest, (matches[0], value))
        if first[1] != value:
            return f"{first[0]} and {matches[0]} contradict each other: give one of them"
    return None


def _check_environment() -> None:
    """Refuse an invalid setting of the environment (``MINSEP_KERNELS``) before any work."""
    from minsep.framework.backend import requested_kernels

    requested_kernels()


def _option(args: argparse.Namespace, exc: BaseException) -> str | None:
    """The command-line option of the parameter a ConfigurationError names, if any."""
    parameter = getattr(exc, "parameter", None)
    options: dict[str, str] = getattr(args, "_options", None) or {}
    return options.get(str(parameter)) if parameter is not None else None


def _report(
    args: argparse.Namespace | None,
    as_json: bool,
    kind: str,
    message: str,
    status: int,
    exc: BaseException | None = None,
) -> int:
    """One line on stderr and, with ``--json``, an error object on stdout; return ``status``."""
    command = getattr(args, "command", None)
    option = _option(args, exc) if args is not None and exc is not None else None
    line = message if option is None else f"{message} (command-line option {option})"
    print(f"minsep{f' {command}' if command else ''}: {kind}: {line}", file=sys.stderr)
    if as_json:
        error = {
            "type": type(exc).__name__ if exc is not None else kind,
            "message": message,
            "parameter": getattr(exc, "parameter", None),
            "option": option,
            "exit_code": status,
        }
        print(json.dumps({"error": error}, indent=2))
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI.

    Exit statuses: 0 success; 2 a usage error, an error of minsep (one line naming the
    problem), an operating-system error or memory exhaustion, lost workers; 130 interrupted by
    Ctrl-C, 143 by SIGTERM (the Monte Carlo engine first saves its checkpoint, when one is
    set, and the pool's workers are stopped). With ``--json`` every
    error is also printed on stdout as ``{"error": {"type", "message", "parameter",
    "option", "exit_code"}}``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageExit as exc:
        if as_json:
            print(json.dumps({"error": _usage_error(exc)}, indent=2))
        raise
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    conflict = conflicting_option(parser, args.command, argv) or contradicting_flags(
        parser, args.command, argv
    )
    if conflict:
        return _report(args, as_json, "error", conflict, EXIT_ERROR)
    try:
        _check_environment()
        with sigterm_as_interrupt():
            return int(args._run(args))
    except KeyboardInterrupt as exc:
        _stop_workers()  # the checkpoint is saved: chunks still running are not needed
        saved = getattr(args, "checkpoint", None)
        note = f"; progress is saved in {saved}: rerun the same command to resume" if saved else ""
        by, status = (
            ("SIGTERM", EXIT_TERMINATED)
            if isinstance(exc, Terminated)
            else ("Ctrl-C", EXIT_INTERRUPTED)
        )
        return _report(args, as_json, "interrupted", f"stopped by {by}{note}", status)
    except MemoryError as exc:
        detail = f" ({exc})" if str(exc) else ""
        message = (
            f"out of memory{detail}: lower --chunk-size or --workers, or run on a machine with "
            "more memory"
        )
        return _report(args, as_json, "error", message, EXIT_ERROR, exc)
    except MinsepError as exc:
        return _report(args, as_json, "error", str(exc), EXIT_ERROR, exc)
    except OSError as exc:
        return _report(args, as_json, "error", str(exc), EXIT_ERROR, exc)


def _stop_workers() -> None:
    """Stop the process pools' workers, if the engine started any (imported only then)."""
    executors = sys.modules.get("minsep.framework.montecarlo.executors")
    if executors is not None:
        executors.terminate_pools()


def _usage_error(exc: _UsageExit) -> dict[str, object]:
    return {
        "type": "UsageError",
        "message": exc.message,
        "parameter": None,
        "option": None,
        "exit_code": EXIT_ERROR,
    }


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
