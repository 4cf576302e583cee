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
    common.add_epsilon_argument(parser)
    common.add_accountant_argument(parser)


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
    if result.candidates and result.samples is not None:
        lines.append(
            f"sweep                {len(result.candidates)} sigmas from "
            f"{common.fmt(result.candidates[0], 5)} to {common.fmt(result.candidates[-1], 5)}"
        )
    elif result.candidates:
        below = [c for c in result.candidates if c < result.sigma]
        bracket = (
            f": the smallest sigma lies in ({common.fmt(max(below), 6)}, "
            f"{common.fmt(result.sigma, 6)}]"
            if below
            else ""
        )
        lines.append(
            f"search               bracketing, then bisection: {len(result.candidates)} sigmas "
            f"evaluated{bracket}"
        )
    if result.sigma_estimate is not None:
        lines.append(
            f"sigma (estimate)     {common.fmt(result.sigma_estimate)} (point estimate alone, no "
            "guarantee; more samples bring the certified sigma towards it)"
        )
    if result.samples is not None:
        text = f"{result.samples:,} verification"
        if result.pilot_samples:
            text += f" + {result.pilot_samples:,} pilot"
        lines.append(f"samples              {text} per direction")
    lines.append(f"seconds              {result.seconds:.3f}")
    if result.samples is not None and result.seconds > 0:
        n_steps = result.scheme.get("n_steps")
        drawn = 2 * (result.samples + (result.pilot_samples or 0))
        text = common.throughput(
            drawn, result.seconds, n_steps if isinstance(n_steps, int) else None
        )
        lines.append(f"throughput           {text} (both directions, pilot included)")
    lines.extend(common.closing_lines(result))
    return lines


def _run(args: argparse.Namespace) -> int:
    return common.answer(args, "calibrate", format_calibration)


command = Command(
    "calibrate",
    "smallest certified noise multiplier for a target (epsilon, delta)",
    _add_arguments,
    _run,
    examples=(
        "minsep calibrate --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 "
        "--epsilon 2 --delta 1e-3 --samples 200000 --seed 7",
        "minsep calibrate --scheme cyclic_poisson --min-sep 8 --bands 8 --steps 1024 "
        "--rate 1/256 "
        "--epsilon 2 --accountant pld",
    ),
)
