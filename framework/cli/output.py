"""What the accounting commands print: result lines, JSON, and the ``minsep:`` lines on stderr.

Results go to stdout (lines or ``--json``); the first answer, the plan, the samples chosen and
the cache lines go to stderr as ``minsep: ...`` lines, none of them with ``--quiet`` (errors and
warnings still show, :func:`~minsep.framework.format.warn`).
"""

from __future__ import annotations

import argparse
import logging
import sys

from minsep.framework.results import DeltaResult, EpsilonResult, Result

__all__ = [
    "closing_lines",
    "hide_plans",
    "print_json",
    "provenance_lines",
    "quiet",
    "sample_lines",
    "say",
    "show_plans",
    "show_plans_unless_quiet",
    "throughput",
]


def quiet(args: argparse.Namespace) -> bool:
    """True when ``--quiet`` asks for a silent stderr (errors and warnings excepted)."""
    return bool(getattr(args, "quiet", False))


def say(args: argparse.Namespace, text: str) -> None:
    """Print ``minsep: text`` on stderr, unless ``--quiet``."""
    if not quiet(args):
        print(f"minsep: {text}", file=sys.stderr, flush=True)


def show_plans_unless_quiet(args: argparse.Namespace) -> None:
    """Show the plan lines on stderr, or keep them off with ``--quiet``."""
    if quiet(args):
        hide_plans()
    else:
        show_plans()


def show_plans() -> None:
    """Print the Monte Carlo engine's plans and time estimates (logger ``minsep.plan``) on
    stderr, one ``minsep: plan: ...`` line each, before a run starts."""
    log = logging.getLogger("minsep.plan")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("minsep: %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def hide_plans() -> None:
    """Keep the plan lines off stderr (``--quiet``); the plan's warnings still show."""
    show_plans()
    logging.getLogger("minsep.plan").setLevel(logging.WARNING)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of the record (not at creation)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def print_json(result: Result) -> None:
    """Print ``result`` as indented JSON on stdout."""
    print(result.to_json(indent=2))


def sample_lines(
    samples: int | None, pilot: int | None, seconds: float, n_steps: int | None = None
) -> list[str]:
    """Samples, seconds and throughput lines of a result (Monte Carlo figures when given)."""
    lines = []
    if samples is not None:
        text = f"{samples:,} verification"
        if pilot:
            text += f" + {pilot:,} pilot"
        lines.append(f"samples              {text} per direction")
    lines.append(f"seconds              {seconds:.3f}")
    if samples is not None and seconds > 0:
        drawn = 2 * (samples + (pilot or 0))
        text = throughput(drawn, seconds, n_steps, "both directions, pilot included")
        lines.append(f"throughput           {text}")
    return lines


def throughput(samples: int, seconds: float, n_steps: int | None, detail: str = "") -> str:
    """``samples`` loss samples of ``n_steps`` steps in ``seconds``, in the one unit every
    command reports: sample·steps/s (samples/s when the step count is unknown); ``detail``
    is appended inside the parentheses."""
    rate = samples / seconds
    extra = f", {detail}" if detail else ""
    if n_steps:
        per = f"{samples:,} loss samples of {n_steps} steps{extra}"
        return f"{rate * n_steps:.3g} sample·steps/s ({per})"
    return f"{rate:.3g} samples/s ({samples:,} loss samples{extra})"


def provenance_lines(result: EpsilonResult | DeltaResult) -> list[str]:
    """The lines every point answer ends with: samples and throughput, seed, accountant,
    notes."""
    n_steps = result.scheme.get("n_steps")
    lines = sample_lines(
        result.samples,
        result.pilot_samples,
        result.seconds,
        n_steps if isinstance(n_steps, int) else None,
    )
    lines.extend(closing_lines(result))
    return lines


def closing_lines(result: Result) -> list[str]:
    """The lines every answer ends with: the seed (when known), the accountant and its
    method, and the notes."""
    seed = getattr(result, "seed", None)
    lines = [] if seed is None else [f"seed                 {seed}"]
    lines.append(f"accountant           {result.accountant} ({result.method})")
    lines.extend(f"note: {note}" for note in result.notes)
    return lines
