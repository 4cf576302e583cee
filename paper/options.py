"""The paper scripts' options: the Monte Carlo engine's settings, the common command-line
arguments, grid overrides and the validators of the settings classes."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from minsep.framework.cli.common import nonnegative_int, positive_int
from minsep.framework.cli.progress_flag import add_progress_flag
from minsep.framework.montecarlo import min_samples
from minsep.framework.validation import Validator, fail
from minsep.framework.workers import parse_workers, resolve_workers
from minsep.paper.output import RUNS_DIR


def paper_samples(delta: float) -> int:
    """``min_samples(delta/2, delta)``: the verification samples that certify ``delta`` when
    checking at base delta ``delta/2`` (75,013 at delta = 1e-3), the paper's "estimate epsilon
    at delta/2" (§7.1)."""
    return min_samples(delta / 2.0, delta)


def tuple_of(validator: Validator) -> Validator:
    """attrs validator: a non-empty tuple whose every item passes ``validator``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, tuple) or not value:
            raise fail(instance, attribute.name, value, "a non-empty tuple")
        for item in value:
            validator(instance, attribute, item)

    return validate


@attrs.frozen(kw_only=True)
class EngineOptions:
    """How the Monte Carlo work runs (never what it computes, except ``seed``).

    Attributes:
        seed: root seed of every Monte Carlo stream (results are reproducible given it).
        workers: worker processes (results do not depend on it).
        backend: ``"numpy"`` or ``"cupy"`` (a GPU; same random streams, same results up to
            rounding).
        scheduler: address or scheduler file of a running Dask cluster (implies Dask).
        progress: show progress lines on stderr.
    """

    seed: int
    workers: int = 1
    backend: str = "numpy"
    scheduler: str | None = None
    progress: bool = False

    def accountant_options(self, samples: int) -> dict[str, Any]:
        """Options for :class:`~minsep.accountants.monte_carlo.MonteCarloAccountant`, flat
        (:func:`~minsep.framework.setup.build_accountant` groups them into its records)."""
        options: dict[str, Any] = {
            "samples": samples,
            "seed": self.seed,
            "workers": self.workers,
            "backend": self.backend,
            "progress": False,
        }
        if self.scheduler is not None:
            options["scheduler"] = self.scheduler
        return options

    def record(self) -> dict[str, Any]:
        """The parts that determine the numbers (for the settings record)."""
        return {"seed": self.seed, "backend": self.backend}


def float_list(text: str) -> tuple[float, ...]:
    """Comma-separated positive finite numbers (an argparse type)."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(not (v > 0 and math.isfinite(v)) for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be positive numbers, e.g. 1,2")
    return values


def int_list(text: str) -> tuple[int, ...]:
    """Comma-separated integers >= 1 (an argparse type)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be integers >= 1, e.g. 4,16")
    return values


def add_common_arguments(parser: argparse.ArgumentParser, default_seed: int) -> None:
    """``--quick``, ``--output-dir``, ``--samples``, ``--seed``, ``--workers``, ``--backend``,
    ``--scheduler``, ``--no-plot``, ``--progress``."""
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the reduced grid whose outputs are committed (wall times: paper/README.md)",
    )
    parser.add_argument(
        "--output-dir",
        "--output",
        type=Path,
        default=None,
        help="folder for the CSV, JSON, markdown and PNG outputs (default: a fresh "
        f"{RUNS_DIR}/paper-NAME-<UTC time>/; '--output paper/outputs' overwrites the committed "
        "results)",
    )
    parser.add_argument(
        "--samples",
        type=positive_int,
        help="Monte Carlo verification samples per direction (default: the mode's own)",
    )
    parser.add_argument(
        "--seed",
        type=nonnegative_int,
        default=default_seed,
        help=f"root seed of the Monte Carlo streams (default {default_seed})",
    )
    parser.add_argument(
        "--workers",
        type=parse_workers,
        default=1,
        help="Monte Carlo worker processes, or auto (the CPUs free now; default 1)",
    )
    parser.add_argument(
        "--backend",
        default="numpy",
        choices=("numpy", "cupy", "auto"),
        help="array backend of the Monte Carlo engine (cupy: a CUDA GPU)",
    )
    parser.add_argument(
        "--scheduler",
        help="a running Dask scheduler (tcp://host:8786 or a scheduler file) for the Monte "
        "Carlo chunks",
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG figures")
    add_progress_flag(parser, "progress lines on stderr (default: only on a terminal)")


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """The :class:`EngineOptions` of parsed common arguments."""
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    return EngineOptions(
        seed=args.seed,
        workers=resolve_workers(args.workers, "paper", "--workers"),
        backend=args.backend,
        scheduler=args.scheduler,
        progress=progress,
    )


def add_grid_overrides(
    parser: argparse.ArgumentParser, *, epsilons: str, bands: str, epoch_lengths: bool = False
) -> argparse._ArgumentGroup:
    """The group "grid overrides": ``--epsilons`` (an example list ``epsilons`` in its help),
    ``--epoch-lengths`` when ``epoch_lengths``, and ``--bands`` (help ``bands``); returned for
    the script's own overrides."""
    grid = parser.add_argument_group("grid overrides")
    grid.add_argument("--epsilons", type=float_list, help=f"target epsilons, e.g. {epsilons}")
    if epoch_lengths:
        grid.add_argument("--epoch-lengths", type=int_list, help="|D|/B values, e.g. 128,256")
    grid.add_argument("--bands", type=int_list, help=bands)
    return grid


S = TypeVar("S")


def settings_with_overrides(
    args: argparse.Namespace, quick: S, full: S, grid_keys: Sequence[str]
) -> tuple[S, str]:
    """The quick or full settings with ``--samples`` and grid overrides applied, and the mode's
    name (``"(modified)"`` once the grid differs from the documented one)."""
    settings, mode = (quick, "quick") if args.quick else (full, "full")
    changes: dict[str, Any] = {}
    if args.samples is not None:
        changes["samples"] = args.samples
    for key in grid_keys:
        if getattr(args, key, None) is not None:
            changes[key] = getattr(args, key)
    if changes:
        settings = attrs.evolve(settings, **changes)  # type: ignore[misc]
        if set(changes) - {"samples"}:
            mode = f"{mode} (modified)"
    return settings, mode


__all__ = [
    "EngineOptions",
    "add_common_arguments",
    "add_grid_overrides",
    "engine_options",
    "float_list",
    "int_list",
    "paper_samples",
    "settings_with_overrides",
    "tuple_of",
]
