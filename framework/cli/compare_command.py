"""``minsep compare``: the command-line wrapper of :mod:`minsep.framework.compare`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from minsep.framework.cli.accountant_options import given_options
from minsep.framework.cli.command import Command
from minsep.framework.cli.common import (
    add_pld_arguments,
    noise_multiplier,
    parse_rate,
    positive_float,
    positive_int,
)
from minsep.framework.compare import (
    DEFAULT_EPSILON,
    ComparisonRow,
    ComparisonSetup,
    Progress,
    compare,
    format_csv,
    format_json,
    format_table,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range
from minsep.framework.workers import AUTO, parse_workers

#: ``--max-seconds`` default: the estimated time one Monte Carlo row of the table may take.
DEFAULT_ROW_SECONDS = 600.0


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be comma-separated integers >= 1, e.g. 1,4,8"
        ) from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be comma-separated integers >= 1, e.g. 1,4,8"
        )
    return values


def _delta(text: str) -> float:
    value = positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be in (0, 1)")
    return value


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_setup_arguments(parser.add_argument_group("setup"))
    _add_grid_arguments(parser.add_argument_group("grid"))
    _add_monte_carlo_arguments(parser.add_argument_group("Monte Carlo"))
    add_pld_arguments(parser)
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--csv", action="store_true", help="print CSV")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: only on a terminal)",
    )


def _add_setup_arguments(setup: argparse._ArgumentGroup) -> None:
    """The training setup: steps, rate (or batch and dataset size), delta, target."""
    setup.add_argument("--steps", type=positive_int, default=1024, help="training steps n")
    setup.add_argument(
        "--rate",
        type=parse_rate,
        help="participation rate p0 = expected batch size / dataset size (default 1/256)",
    )
    setup.add_argument("--batch-size", type=positive_float, help="expected batch size B")
    setup.add_argument(
        "--dataset-size", type=positive_int, help="dataset size |D| (with --batch-size: p0 = B/|D|)"
    )
    setup.add_argument("--delta", type=_delta, default=1e-3, help="target delta")
    target = setup.add_mutually_exclusive_group()
    target.add_argument(
        "--epsilon",
        type=positive_float,
        help="target epsilon: calibrate sigma per row (default: 2 unless --sigma is given)",
    )
    target.add_argument("--sigma", type=noise_multiplier, help="a fixed noise multiplier")


def _add_grid_arguments(grid: argparse._ArgumentGroup) -> None:
    """What is compared: bands, min-seps, extra strategies, row families."""
    grid.add_argument(
        "--bands", type=_int_list, default=(1, 4, 8), help="bands values k, comma-separated"
    )
    grid.add_argument(
        "--min-seps",
        type=_int_list,
        help="b-min-sep values b (default: powers of two from bands to |D|/B)",
    )
    grid.add_argument(
        "--strategies",
        type=lambda t: tuple(s.strip() for s in t.split(",") if s.strip()),
        default=(),
        help="extra strategies to compare besides the bands grid, as name or "
        "name:key=value:..., e.g. blt,banded_toeplitz:bands=4:objective=max (the table then "
        "shows the best strategy per scheme)",
    )
    grid.add_argument(
        "--schemes",
        type=lambda t: tuple(s.strip() for s in t.split(",") if s.strip()),
        default=None,
        help="row families to include, e.g. poisson,b_min_sep,unamplified (default: every "
        "registered scheme's rows)",
    )


def _add_monte_carlo_arguments(mc: argparse._ArgumentGroup) -> None:
    """The Monte Carlo rows' samples, route, time limit, seed, backend and workers."""
    mc.add_argument(
        "--samples",
        type=positive_int,
        help="Monte Carlo verification samples per row (default: the accountant's own)",
    )
    mc.add_argument(
        "--precision",
        type=positive_float,
        metavar="FRACTION",
        help="without --samples: the relative gap between each Monte Carlo row's certified "
        "answer and its estimate, from which the row's samples and route are chosen (default "
        "0.05; docs/math.md §7.3)",
    )
    mc.add_argument(
        "--proposal",
        choices=["auto", "plain", "escort"],
        help="what Monte Carlo rows sample from: auto (default: per row, the cheaper sound "
        "route: plain, or the escort where the scheme has one), plain or escort",
    )
    mc.add_argument(
        "--max-seconds",
        type=positive_float,
        metavar="SECONDS",
        default=DEFAULT_ROW_SECONDS,
        help="estimated time a Monte Carlo row may take (default %(default)g): chosen samples "
        "are cut to fit, down to precision 0.3; a row that still does not fit is reported "
        "uncertified with what it needs, and the other rows still print",
    )
    mc.add_argument("--seed", type=int, help="seed of the Monte Carlo sampling streams")
    mc.add_argument("--backend", help="array backend of the Monte Carlo accountant")
    mc.add_argument(
        "--workers",
        type=parse_workers,
        help="worker processes, or auto (default: the CPUs free now); with two or more and "
        "several Monte Carlo rows, that many rows run at once, one worker each (the same "
        "table as one worker)",
    )


def _rate(args: argparse.Namespace) -> float:
    if args.batch_size is not None:
        if args.rate is not None:
            raise ConfigurationError(
                "compare --rate and --batch-size are invalid together: give one of them"
            )
        if args.dataset_size is None:
            raise ConfigurationError(
                "compare --batch-size is invalid without --dataset-size: p0 = B / |D|"
            )
        rate = args.batch_size / args.dataset_size
        check_range("compare", "batch-size / dataset-size", rate, low=0.0, high=1.0, low_open=True)
        return float(rate)
    return float(args.rate) if args.rate is not None else 1 / 256


def setup_from_args(args: argparse.Namespace) -> ComparisonSetup:
    """The :class:`ComparisonSetup` of parsed ``compare`` arguments."""
    from minsep.framework.montecarlo.precision import DEFAULT_PRECISION  # lazy: the engine

    if args.schemes == ():  # e.g. --schemes "" or ","
        raise ConfigurationError(
            "--schemes is invalid: it names no row family; give e.g. --schemes "
            "poisson,b_min_sep, or leave it out for every family"
        )
    if args.precision is not None and args.samples is not None:
        raise ConfigurationError(
            f"--precision = {args.precision!r} is invalid with --samples: give one of them",
            parameter="precision",
        )
    options = given_options(args)  # the flags the accountants declare, as their fields
    if args.samples is None:
        options.pop("max_seconds", None)  # samples chosen per row: the route fits the limit
    options.setdefault("workers", AUTO)  # accountants without workers drop it (not strict)
    options["progress"] = False  # one bar: the table's
    epsilon = args.epsilon
    if epsilon is None and args.sigma is None:
        epsilon = DEFAULT_EPSILON
    return ComparisonSetup(
        n_steps=args.steps,
        rate=_rate(args),
        delta=args.delta,
        epsilon=epsilon,
        sigma=args.sigma,
        bands=args.bands,
        min_seps=args.min_seps,
        families=args.schemes,
        strategies=args.strategies,
        accountant_options=options,
        precision=None if args.samples is not None else (args.precision or DEFAULT_PRECISION),
        max_seconds=args.max_seconds,
    )


def _run(args: argparse.Namespace) -> int:
    setup = setup_from_args(args)
    show = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    bar: Any = None
    callback: Progress | None = None
    if show:
        from tqdm.auto import tqdm

        def callback(done: int, total: int, label: str) -> None:
            nonlocal bar
            if bar is None:
                bar = tqdm(total=total, desc="compare", unit="row", file=sys.stderr)
            bar.update(done - bar.n)
            bar.set_postfix_str(label)

    try:
        rows = compare(setup, progress=callback)
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(format_json(setup, rows))
    elif args.csv:
        print(format_csv(rows), end="")
    else:
        print(format_table(setup, rows))
    return 0


command = Command(
    "compare",
    "compare every registered sampling scheme (DP-SGD, cyclic Poisson, balls-in-bins, "
    "b-min-sep, unamplified, plugins) at one setup",
    _add_arguments,
    _run,
    examples=(
        "minsep compare --steps 1024 --rate 1/256 --epsilon 2 --bands 4,8 --samples 75000",
        "minsep compare --steps 1024 --batch-size 256 --dataset-size 65536 --sigma 1.2 "
        "--schemes poisson,cyclic_poisson --json",
    ),
)

# The library names are re-exported for callers of the former location.
__all__ = ["ComparisonRow", "ComparisonSetup", "command", "compare", "setup_from_args"]
