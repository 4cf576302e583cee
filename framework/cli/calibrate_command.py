"""``minsep calibrate``: the smallest certified noise multiplier for a target (epsilon, delta).

Example::

    minsep calibrate --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 \\
        --epsilon 8 --delta 1e-3

prints the certified sigma (Algorithm 5), the sweep, samples, time and throughput; ``--json``
prints the :class:`~minsep.framework.results.CalibrationResult`.
"""

from __future__ import annotations

import argparse

from minsep.framework.cli import common
from minsep.framework.cli.command import Command
from minsep.framework.results import CalibrationResult


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_setup_arguments(parser)
    parser.add_argument(
        "--epsilon", type=common.nonnegative_float, required=True, help="target epsilon"
    )
    parser.add_argument(
        "--accountant",
        default="auto",
        help="registered accountant, or auto (default): exact pld where the scheme has an "
        "exact event, else monte_carlo; the output names the one that answered",
    )


def format_calibration(result: CalibrationResult) -> list[str]:
    """Human-readable lines for a calibration result."""
    lines = [
        f"sigma (certified)    {common.fmt(result.sigma)}",
        f"epsilon, delta       {common.fmt(result.epsilon)}, {common.fmt(result.delta)}",
    ]
    if result.base_delta is not None:
        lines.append(f"base delta           {common.fmt(result.base_delta, 4)}")
    if result.failure_probability > 0:
        lines.append(f"failure probability  {result.failure_probability:.2g} (folded into delta)")
    if result.candidates:
        lines.append(
            f"sweep                {len(result.candidates)} sigmas from "
            f"{common.fmt(result.candidates[0], 5)} to {common.fmt(result.candidates[-1], 5)}"
        )
    if result.samples is not None:
        text = f"{result.samples:,} verification"
        if result.pilot_samples:
            text += f" + {result.pilot_samples:,} pilot"
        lines.append(f"samples              {text} per direction")
    lines.append(f"seconds              {result.seconds:.3f}")
    if result.samples is not None and result.seconds > 0:
        evaluations = 2 * result.samples * max(len(result.candidates), 1)
        lines.append(
            f"throughput           {evaluations / result.seconds:,.0f} loss evaluations/s "
            "(verification sweep over total time)"
        )
    if result.seed is not None:
        lines.append(f"seed                 {result.seed}")
    lines.append(f"accountant           {result.accountant} ({result.method})")
    lines.extend(f"note: {note}" for note in result.notes)
    return lines


def _run(args: argparse.Namespace) -> int:
    return common.answer(
        args,
        lambda accountant, scheme, strategy: accountant.calibrate(
            scheme, strategy, args.epsilon, args.delta
        ),
        format_calibration,
        question="calibrate",
        numbers={"epsilon": args.epsilon, "delta": args.delta},
    )


command = Command(
    "calibrate",
    "smallest certified noise multiplier for a target (epsilon, delta)",
    _add_arguments,
    _run,
)
