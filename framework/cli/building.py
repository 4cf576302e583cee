"""The objects of one accounting question, built from the parsed command line.

:func:`build_scheme`, :func:`build_strategy` and :func:`build_accountant` go through
:mod:`minsep.framework.setup`, the one setup path; :func:`choose_accountant` resolves
``--accountant auto``. Only options the user actually gave are forwarded to ``from_rate``, so a
family that does not take an option is only asked about it when the user set it, and then
refuses it by name; the accountant likewise refuses Monte Carlo options it does not take
instead of ignoring them.
"""

from __future__ import annotations

import argparse
from typing import Any

from minsep.framework import setup
from minsep.framework.cli import accountant_options as accountant_options_of
from minsep.framework.cli import strategy_options
from minsep.framework.cli.argtypes import literal
from minsep.framework.cli.output import quiet
from minsep.framework.cli.setup_arguments import scheme_parameters
from minsep.framework.errors import ConfigurationError
from minsep.framework.format import warn
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registries import accountants
from minsep.framework.workers import AUTO

__all__ = [
    "accountant_options",
    "build_accountant",
    "build_scheme",
    "build_strategy",
    "choose_accountant",
    "default_workers",
    "given_accountant_options",
    "scheme_options",
    "skipped_names",
]


def scheme_options(args: argparse.Namespace) -> dict[str, Any]:
    """The scheme options the user gave (flags and ``--param``), as ``from_rate`` keywords."""
    options: dict[str, Any] = {}
    for name in scheme_parameters():
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    for item in getattr(args, "param", None) or []:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise ConfigurationError(
                f"--param {item!r} is invalid: must be KEY=VALUE, e.g. --param min_sep=8"
            )
        if key in options:
            raise ConfigurationError(
                f"--param {item!r} is invalid: option {key!r} is already given"
            )
        options[key] = literal(text)
    return options


def build_scheme(args: argparse.Namespace, name: str | None = None) -> SamplingScheme:
    """The scheme ``name`` (default ``--scheme``) at ``--steps`` and ``--rate`` with the
    options given."""
    return setup.build_scheme(name or args.scheme, args.steps, args.rate, scheme_options(args))


def build_strategy(args: argparse.Namespace) -> Strategy:
    """``--strategy`` with its options, else the identity for ``--bands 1`` (the default) and
    the MSE-optimal banded Toeplitz with k bands for ``--bands k``
    (:mod:`~minsep.framework.cli.strategy_options`)."""
    return strategy_options.build_strategy(args)


def given_accountant_options(args: argparse.Namespace) -> dict[str, Any]:
    """The accountant options the user gave, as accountant field names (the dests and fields
    the accountants declare, :mod:`~minsep.framework.cli.accountant_options`)."""
    options = accountant_options_of.given_options(args)
    if quiet(args) and "progress" not in options:
        options["progress"] = False
    return options


def accountant_options(cls: type[Accountant], args: argparse.Namespace) -> dict[str, Any]:
    """The Monte Carlo options the user gave that ``cls`` takes."""
    fields = set(setup.accountant_fields(cls))
    return {k: v for k, v in given_accountant_options(args).items() if k in fields}


def build_accountant(
    args: argparse.Namespace, name: str | None = None, *, strict: bool = True
) -> Accountant:
    """The accountant ``name`` (default ``--accountant``, else ``monte_carlo``) configured from
    the Monte Carlo options given; with ``strict`` an option it does not take is refused."""
    chosen = name if name is not None else getattr(args, "accountant", None)
    if chosen is None:
        chosen = "monte_carlo"  # an empty --accountant "" is looked up (and refused), not replaced
    options = given_accountant_options(args)
    if chosen in accountants.names():
        cls = accountants.get(chosen)
        if getattr(args, "progress", None) is None and "progress" not in set(
            setup.accountant_fields(cls)
        ):
            options.pop("progress", None)  # implied by --quiet, not given: nothing to refuse
        options = default_workers(options, cls)
    return setup.build_accountant(chosen, options, strict=strict)


def default_workers(options: dict[str, Any], cls: type[Accountant]) -> dict[str, Any]:
    """``options`` with ``workers = "auto"`` added when ``cls`` takes workers and the user set
    none of ``--workers``, ``--scheduler`` (a remote cluster sizes itself) or ``--executor
    local`` (one process by definition). See :mod:`minsep.framework.workers` for why the CLI
    defaults to auto while the API defaults to 1."""
    if "workers" in options or "scheduler" in options or options.get("executor") == "local":
        return options
    if "workers" not in setup.accountant_fields(cls):
        return options
    return {**options, "workers": AUTO}


def choose_accountant(
    args: argparse.Namespace, scheme: SamplingScheme, strategy: Strategy
) -> tuple[Accountant, str | None]:
    """The accountant of ``--accountant`` for the pair, and for ``auto`` a note saying which
    was chosen and why.

    ``auto`` (the default) takes the first of :func:`~minsep.framework.setup.preference`
    that supports the pair (exact PLD where the scheme has an exact event, else Monte Carlo),
    through :func:`~minsep.framework.setup.select_accountant`; the options given apply to it
    when it takes them, and those it does not take are named in a warning. A named accountant
    refuses options it does not take (:func:`build_accountant`).
    """
    name = getattr(args, "accountant", None)
    if name is None:
        name = setup.AUTO  # an empty --accountant "" is looked up (and refused), not replaced
    if name != setup.AUTO:
        accountant = build_accountant(args, name)
        accountant.require(scheme, strategy)
        return accountant, None
    given = given_accountant_options(args)
    accountant = setup.select_accountant(
        setup.AUTO,
        scheme,
        strategy,
        # the CLI's --workers auto default applies to whichever accountant auto picks
        factory=lambda n: setup.build_accountant(
            n, default_workers(given, accountants.get(n)), strict=False
        ),
    )
    chosen = str(accountant.registry_name)
    order = setup.preference()
    skipped = [
        f"{n}: {reason}"
        for n in order[: order.index(chosen)]
        if n in accountants
        and (reason := setup.build_accountant(n, strict=False).why_not(scheme, strategy))
    ]
    typed = {k for k in given if k != "progress" or getattr(args, "progress", None) is not None}
    ignored = sorted(typed - set(setup.accountant_fields(type(accountant))))
    if ignored:
        flags = ", ".join("--" + o.replace("_", "-") for o in ignored)
        warn(f"accountant auto chose {chosen!r}, which does not take {flags}: ignored")
    if "monte_carlo" in skipped_names(skipped):
        warn(
            f"accountant auto chose {chosen!r}: Monte Carlo cannot account this pair, so the "
            "bound is deterministic (looser); see the note, or name --accountant"
        )
    why = f" ({'; '.join(skipped)})" if skipped else ""
    return accountant, f"accountant {chosen!r} chosen by --accountant auto{why}."


def skipped_names(reasons: list[str]) -> set[str]:
    """The accountant names of ``name: reason`` entries."""
    return {reason.partition(":")[0] for reason in reasons}
