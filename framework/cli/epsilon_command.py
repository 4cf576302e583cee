"""``minsep epsilon``: epsilon at a target delta for one setup.

Example::

    minsep epsilon --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 \\
        --sigma 1 --delta 1e-3

prints the point estimate, the certified bound (what to report), the samples used, the time
and the throughput; ``--json`` prints the :class:`~minsep.framework.results.EpsilonResult`.
Exit status 0 when the epsilon is certified, ``common.EXIT_UNCERTIFIED`` (3) when it is not
(certified epsilon = inf; the note says why), 2 on an error.
"""

from __future__ import annotations

import argparse
import math

from minsep.framework.cli import common
from minsep.framework.cli.command import Command
from minsep.framework.results import EpsilonResult


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_setup_arguments(parser)
    common.add_sigma_argument(parser)
    common.add_accountant_argument(parser)


def format_epsilon(result: EpsilonResult) -> list[str]:
    """Human-readable lines for an epsilon result."""
    lines = []
    estimate = common.fmt(result.epsilon)
    if result.std_error is not None:
        estimate += f" ± {common.fmt(result.std_error, 2)}"
    lines.append(f"epsilon (estimate)   {estimate}")
    certified = common.fmt(result.certified_epsilon)
    if result.failure_probability > 0:
        certified += f"   (failure probability {result.failure_probability:.2g}, folded into delta)"
    lines.append(f"epsilon (certified)  {certified}")
    delta = common.fmt(result.delta)
    if result.base_delta is not None:
        delta += f"   (verified at base delta {common.fmt(result.base_delta, 4)})"
    lines.append(f"delta                {delta}")
    lines.append(f"sigma                {common.fmt(result.sigma)}")
    lines.extend(common.provenance_lines(result))
    return lines


def _certified(result: EpsilonResult) -> bool:
    return math.isfinite(result.certified_epsilon)


def _run(args: argparse.Namespace) -> int:
    return common.answer(args, "epsilon", format_epsilon, _certified)


command = Command(
    "epsilon",
    "epsilon at a target delta (estimate and certified bound)",
    _add_arguments,
    _run,
    examples=(
        "minsep epsilon --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 "
        "--sigma 1 --delta 1e-3 --samples 100000 --seed 7",
        "minsep epsilon --scheme poisson --steps 1000 --rate 0.01 --sigma 1.1 --accountant pld",
    ),
)
