"""``--strategy NAME[:key=value,...]`` and the registered strategies' options as flags.

Every registered strategy (plugins included) is reachable from ``epsilon``, ``delta``,
``calibrate``, ``curve`` and ``train``: ``--strategy blt``, ``--strategy blt:buffers=3`` or
``--strategy blt --buffers 3``. The options are the strategy's ``parameters()`` (its attrs fields
unless it declares others), so a new strategy's options work with no edit here. ``--bands k``
stays the shorthand for the identity (k = 1) or the MSE-optimal banded Toeplitz (k >= 2), and
sets ``bands`` of a ``--strategy`` that takes it.
"""

from __future__ import annotations

import argparse
from typing import Any

from minsep.framework import setup
from minsep.framework.cli.option_flags import add_option_flag, taken_flags
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Strategy
from minsep.framework.parameters import CLI_KINDS, Parameter
from minsep.framework.registries import strategies
from minsep.framework.registry import Registry

#: The ``argparse`` dest of a strategy option's flag (kept apart from the scheme options').
_DEST = "strategy_option_{}"


def cli_parameters(registry: Registry[Any]) -> dict[str, Parameter]:
    """Every command-line settable option of ``registry``'s classes (schemes or strategies),
    by name (first declaration wins; the class's own validator checks the value)."""
    found: dict[str, Parameter] = {}
    for entry in registry.entries():
        for parameter in entry.cls.parameters():
            if parameter.kind in CLI_KINDS and parameter.name not in found:
                found[parameter.name] = parameter
    return found


def users_of(registry: Registry[Any], name: str) -> str:
    """The names of ``registry``'s classes that declare the option ``name``, for help texts."""
    return ", ".join(
        e.name for e in registry.entries() if any(p.name == name for p in e.cls.parameters())
    )


def strategy_parameters() -> dict[str, Parameter]:
    """Every command-line settable option of the registered strategies, by name."""
    return cli_parameters(strategies)


def add_strategy_arguments(parser: argparse.ArgumentParser) -> None:
    """``--strategy`` and one flag per strategy option that no other flag of ``parser`` has
    (the command's and the schemes' flags win; ``--strategy NAME:key=value`` reaches it)."""
    group = parser.add_argument_group("strategy options (of the registered strategies)")
    group.add_argument(
        "--strategy",
        metavar="NAME[:key=value,...]",
        help="registered strategy with its options (e.g. blt, blt:buffers=3, "
        "banded_toeplitz:bands=4,objective=max); default: --bands",
    )
    taken = taken_flags(parser, dests=False)
    for name, parameter in strategy_parameters().items():
        if parameter.flag in taken:
            continue
        text = f"{parameter.help} [{users_of(strategies, name)}]".strip()
        add_option_flag(group, parameter, _DEST.format(name), text)


def _flag_options(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """The options of strategy ``name`` given as flags (``--bands`` included)."""
    taken = {p.name for p in strategies.get(name).parameters()}
    given = {
        option: getattr(args, _DEST.format(option), None)
        for option in strategy_parameters()
        if getattr(args, _DEST.format(option), None) is not None
    }
    bands = getattr(args, "bands", None)
    if bands is not None:
        given["bands"] = bands
    other = sorted(set(given) - taken)
    if other:
        flag = "--" + other[0].replace("_", "-")
        raise ConfigurationError(
            f"{flag} = {given[other[0]]!r} is invalid: strategy {name!r} does not take "
            f"{other[0]} (it takes {', '.join(sorted(taken)) or 'no options'})",
            parameter=other[0],
        )
    return given


def build_strategy(args: argparse.Namespace) -> Strategy:
    """The strategy of ``--strategy`` with its options (spec and flags) for ``--steps``, else
    the ``--bands`` shorthand (default 1: the identity)."""
    spec = getattr(args, "strategy", None)
    if spec is None:
        return setup.build_strategy(args.steps, int(getattr(args, "bands", None) or 1))
    name, options = setup.parse_strategy_spec(spec, owner="--strategy")
    for option, value in _flag_options(args, name).items():
        if option in options:
            raise ConfigurationError(
                f"--strategy = {spec!r} is invalid: option {option!r} is given twice "
                "(in the spec and as a flag)",
                parameter=option,
            )
        options[option] = value
    return strategies.get(name).for_steps(args.steps, **options)
