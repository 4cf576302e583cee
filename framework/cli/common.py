"""Argument handling shared by the accounting commands (``epsilon``, ``calibrate``, ``compare``).

:func:`add_setup_arguments` adds the options that describe one accounting question (scheme,
steps, rate, strategy bands, delta, backend, samples, seed, ``--json``); :func:`build_scheme`,
:func:`build_strategy` and :func:`build_accountant` turn the parsed arguments into objects
through the registries, so every registered implementation is reachable by name and the CLI
never imports ``schemes``, ``strategies`` or ``accountants`` directly.

Only options the user actually gave are forwarded to ``from_rate`` (``min_sep``,
``warm_start``, ``dataset_size``, ``max_batch_size``), so a family that does not take an option
is only asked about it when the user set it, and then refuses it by name.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import attrs

from minsep.framework.backend import BACKEND_NAMES
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.results import Result

#: Registered strategy used for ``--bands k`` with k >= 2 (MSE-optimal BandMF).
BANDED_STRATEGY = "banded_toeplitz"
#: Registered strategy used for ``--bands 1`` (DP-SGD).
IDENTITY_STRATEGY = "identity"

#: ``--option`` destination -> ``from_rate`` keyword of the scheme family.
_SCHEME_OPTIONS = {
    "min_sep": "min_sep",
    "dataset_size": "dataset_size",
    "max_batch_size": "max_batch_size",
}

#: ``--executor`` choices: ``montecarlo.executors.EXECUTOR_KINDS``, spelled out so that the CLI
#: starts without importing the engine (a test keeps the two equal).
EXECUTOR_CHOICES = ("local", "processes", "dask")

#: ``--option`` destination -> accountant field, forwarded when the accountant has the field.
_ACCOUNTANT_OPTIONS = {
    "samples": "samples",
    "pilot_samples": "pilot_samples",
    "seed": "seed",
    "backend": "backend",
    "workers": "workers",
    "executor": "executor",
    "scheduler": "scheduler",
    "checkpoint": "checkpoint",
    "checkpoint_interval": "checkpoint_interval",
    "chunk_size": "chunk_size",
    "progress": "progress",
    "pld_interval": "value_discretization_interval",
    "pld_memory_gib": "max_memory_gib",
}


def parse_rate(text: str) -> float:
    """A participation rate in (0, 1]: a decimal (``0.004``) or a fraction (``1/256``)."""
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(
            f"rate = {text!r} is invalid: must be a number or fraction in (0, 1], e.g. 1/256"
        ) from None
    if not (0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(f"rate = {text!r} is invalid: must be in (0, 1]")
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``, with a message naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{text!r} is invalid: must be an integer >= {minimum}"
            )
        return value

    return parse


#: argparse types for counts (>= 1) and seeds (>= 0).
positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)


def _probability(text: str) -> float:
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be in (0, 1)") from None
    if not (0.0 < value < 1.0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be in (0, 1)")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (fractions accepted)."""
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a finite number > 0")
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a number >= 0") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be a finite number >= 0")
    return value


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options describing one accounting setup (shared by epsilon/calibrate/compare).

    Scheme: ``--scheme --steps --rate --min-sep --cold-start --dataset-size --max-batch-size``;
    strategy: ``--bands`` (1 = identity, k >= 2 = MSE-optimal banded Toeplitz); question:
    ``--delta``; Monte Carlo: ``--backend --samples --pilot-samples --seed --workers
    --executor --scheduler --checkpoint --checkpoint-interval --chunk-size
    --progress/--no-progress``; output: ``--json``.
    """
    setup = parser.add_argument_group("setup")
    setup.add_argument("--scheme", default="b_min_sep", help="registered scheme name")
    setup.add_argument(
        "--steps", type=positive_int, default=1024, help="number of training steps n"
    )
    setup.add_argument(
        "--rate",
        type=parse_rate,
        default=1 / 256,
        help="participation rate p0 = expected batch size / dataset size (e.g. 1/256)",
    )
    setup.add_argument("--min-sep", type=positive_int, help="minimum separation b")
    setup.add_argument(
        "--bands",
        type=positive_int,
        default=1,
        help="bands k of the MSE-optimal banded Toeplitz strategy (1 = identity, DP-SGD)",
    )
    setup.add_argument(
        "--cold-start",
        action="store_true",
        help="start the sampler cold (Algorithm 1) instead of warm (Algorithm 2)",
    )
    setup.add_argument(
        "--dataset-size", type=positive_int, help="public dataset size (truncated schemes)"
    )
    setup.add_argument("--max-batch-size", type=positive_int, help="truncate batches to this size")
    setup.add_argument(
        "--delta", type=_probability, default=1e-3, help="target delta (default 1e-3)"
    )
    mc = parser.add_argument_group("Monte Carlo")
    mc.add_argument("--backend", choices=list(BACKEND_NAMES), default=None, help="array backend")
    mc.add_argument("--samples", type=positive_int, help="verification samples m")
    mc.add_argument("--pilot-samples", type=positive_int, help="pilot (estimate) samples")
    mc.add_argument(
        "--seed",
        type=nonnegative_int,
        help="seed of the sampling streams (default: fresh entropy, reported in the result)",
    )
    mc.add_argument("--workers", type=positive_int, help="worker processes")
    mc.add_argument(
        "--executor",
        choices=list(EXECUTOR_CHOICES),
        help="where chunks run: local (in-process), processes (a process pool of --workers), "
        "dask (a Dask LocalCluster of --workers processes, or the cluster at --scheduler); "
        "default: local for 1 worker, else processes",
    )
    mc.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="Dask scheduler address (tcp://host:8786) or scheduler file (*.json); "
        "implies --executor dask",
    )
    mc.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="save the sampling progress to PATH and resume from it when rerun with the "
        "same parameters (one file per question; other parameters are refused)",
    )
    mc.add_argument(
        "--checkpoint-interval",
        type=nonnegative_float,
        metavar="SECONDS",
        help="seconds between checkpoint saves (default 60; 0 = after every chunk)",
    )
    mc.add_argument("--chunk-size", type=positive_int, help="samples per chunk")
    mc.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: only on a terminal)",
    )
    add_pld_arguments(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_pld_arguments(parser: argparse.ArgumentParser) -> None:
    """The exact (PLD) accountant's options: its grid step and memory budget."""
    pld = parser.add_argument_group("exact (PLD)")
    pld.add_argument(
        "--pld-interval",
        type=positive_float,
        metavar="STEP",
        help="PLD value discretisation interval (default: the accountant's, 5e-4); coarser is "
        "faster and looser, never optimistic",
    )
    pld.add_argument(
        "--pld-memory-gib",
        type=positive_float,
        metavar="GIB",
        help="refuse a PLD whose estimated memory exceeds this (default 1)",
    )


def scheme_options(args: argparse.Namespace) -> dict[str, Any]:
    """The scheme options the user gave, as ``from_rate`` keywords."""
    options: dict[str, Any] = {}
    for dest, keyword in _SCHEME_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            options[keyword] = value
    if getattr(args, "cold_start", False):
        options["warm_start"] = False
    return options


def build_scheme(args: argparse.Namespace, name: str | None = None) -> SamplingScheme:
    """``schemes.get(name).from_rate(steps, rate, **options given)``; ``name`` defaults to
    ``--scheme``."""
    cls = schemes.get(name or args.scheme)
    return cls.from_rate(args.steps, args.rate, **scheme_options(args))


def build_strategy(args: argparse.Namespace) -> Strategy:
    """The identity for ``--bands 1``, else the MSE-optimal banded Toeplitz with k bands."""
    bands = int(getattr(args, "bands", 1) or 1)
    if bands == 1:
        return strategies.get(IDENTITY_STRATEGY).for_steps(args.steps)
    return strategies.get(BANDED_STRATEGY).for_steps(args.steps, bands=bands)


def accountant_options(cls: type[Accountant], args: argparse.Namespace) -> dict[str, Any]:
    """The Monte Carlo options the user gave that ``cls`` has as attrs fields."""
    fields = {f.name for f in attrs.fields(cls)} if attrs.has(cls) else set()
    options: dict[str, Any] = {}
    for dest, field in _ACCOUNTANT_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None and field in fields:
            options[field] = value
    return options


def build_accountant(args: argparse.Namespace, name: str | None = None) -> Accountant:
    """The accountant ``name`` (default ``--accountant``, else ``monte_carlo``) configured from
    the Monte Carlo options it takes; options it does not take are ignored."""
    chosen = name or getattr(args, "accountant", None) or "monte_carlo"
    cls = accountants.get(chosen)
    return cls(**accountant_options(cls, args))


def print_json(result: Result) -> None:
    """Print ``result`` as indented JSON on stdout."""
    print(result.to_json(indent=2))


def fmt(value: float | None, digits: int = 6) -> str:
    """A float for humans: ``inf``/``-`` aware, ``digits`` significant digits."""
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


def warn(message: str) -> None:
    """One line on stderr."""
    print(f"minsep: {message}", file=sys.stderr)
