"""``minsep delta``: delta at a target epsilon for one setup.

Example::

    minsep delta --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 \\
        --sigma 1 --epsilon 2

prints the estimate, the certified delta (what to report; for Monte Carlo the failure
probability is folded in), the samples, the time and the throughput; ``--json`` prints the
:class:`~minsep.framework.results.DeltaResult`. Works with every accountant (``--accountant
pld|gaussian|rdp|monte_carlo``). Exit status 0 when a delta below 1 is certified,
``common.EXIT_UNCERTIFIED`` (3) when it is not (certified delta = 1; the note says why), 2 on an
error.
"""

from __future__ import annotations

import argparse

from minsep.framework.cli import common
from minsep.framework.cli.command import Command
from minsep.framework.errors import ConfigurationError
from minsep.framework.results import DeltaResult


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_setup_arguments(parser)
    parser.set_defaults(delta=None)  # the target is epsilon here: --delta is refused
    common.add_sigma_argument(parser)
    common.add_epsilon_argument(parser)
    common.add_accountant_argument(parser)


def refuse_delta(args: argparse.Namespace, command: str) -> None:
    """Refuse ``--delta`` for a command whose question fixes epsilon, not delta."""
    if getattr(args, "delta", None) is not None:
        raise ConfigurationError(
            f"--delta = {args.delta!r} is invalid for minsep {command}: it answers delta at "
            "--epsilon; use minsep epsilon for epsilon at a target delta",
            parameter="delta",
        )


def format_delta(result: DeltaResult) -> list[str]:
    """Human-readable lines for a delta result."""
    estimate = common.fmt(result.delta)
    if result.std_error is not None:
        estimate += f" ± {common.fmt(result.std_error, 2)}"
    certified = common.fmt(result.certified_delta)
    if result.failure_probability > 0:
        certified += f"   (failure probability {result.failure_probability:.2g}, folded in)"
    lines = [
        f"delta (estimate)     {estimate}",
        f"delta (certified)    {certified}",
        f"epsilon              {common.fmt(result.epsilon)}",
        f"sigma                {common.fmt(result.sigma)}",
    ]
    lines.extend(common.provenance_lines(result))
    return lines


def _run(args: argparse.Namespace) -> int:
    refuse_delta(args, "delta")
    return common.answer(args, "delta", format_delta, lambda result: result.certified_delta < 1)


command = Command(
    "delta",
    "delta at a target epsilon (estimate and certified bound)",
    _add_arguments,
    _run,
    examples=(
        "minsep delta --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 "
        "--sigma 1 --epsilon 2 --samples 100000 --seed 7",
        "minsep delta --scheme poisson --steps 1000 --rate 0.01 --sigma 1.1 --epsilon 2 "
        "--accountant pld",
    ),
)
