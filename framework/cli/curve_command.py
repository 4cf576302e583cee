"""``minsep curve``: the delta(eps) curve on a grid of epsilons, bounds that hold together.

Example::

    minsep curve --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 \\
        --sigma 1 --epsilons 0.5,1,2,4

For Monte Carlo the simultaneous certified curve (one verification sample, KL upper confidence
bounds holding on the whole grid except with ``--failure-probability``); for the deterministic
accountants (``pld``, ``gaussian``, ``rdp``) their exact or proven delta at each epsilon. Prints
a table, ``--csv`` (columns ``epsilon,delta,certified_delta,guaranteed_delta``: the last adds
the failure probability) or ``--json`` (the :class:`~minsep.framework.results.CurveResult`).
``--deltas 1e-5,1e-6`` adds the epsilon(delta) view: the certified epsilon at each delta, read
off the curve's dominating pair (so between grid points too), failure probability included.

To compose the certificate with other releases, load the JSON in Python and turn it into a
pessimistic dp_accounting PLD that carries its failure probability (docs/math.md §7.1)::

    from minsep.framework.results import CurveResult
    certified = CurveResult.from_json(text).certified_pld()   # a CertifiedPLD
    total = certified.compose(other_pld)                     # other_pld: a dp_accounting PLD
    total.get_epsilon_for_delta(1e-5)                        # failure probability included

Exit status 0 when some grid point certifies a delta below 1, ``common.EXIT_UNCERTIFIED`` (3)
when none does, 2 on an error.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from fractions import Fraction
from typing import Any

import attrs

from minsep.framework import setup
from minsep.framework.cli import common
from minsep.framework.cli.command import Command
from minsep.framework.cli.delta_command import refuse_delta
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import DEFAULT_CURVE_FAILURE, Accountant
from minsep.framework.montecarlo.planning import DEFAULT_MEMORY_BUDGET
from minsep.framework.results import CurveResult


def _number(text: str) -> float:
    try:
        return float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def parse_epsilons(text: str) -> tuple[float, ...]:
    """argparse type: a comma-separated list of epsilons, e.g. ``0.5,1,2,4``."""
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be e.g. 0.5,1,2,4")
    return tuple(_number(item) for item in items)


def parse_deltas(text: str) -> tuple[float, ...]:
    """argparse type: a comma-separated list of deltas in (0, 1), e.g. ``1e-5,1e-6``."""
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be e.g. 1e-5,1e-6")
    return tuple(common.probability(item) for item in items)


#: Memory a grid point costs a curve run, declared: 1.3 kB measured (``minsep curve
#: --accountant gaussian --epsilon-grid 0:8:20000 --json``: 26 MB above a 2-point grid's peak
#: RSS), doubled. A grid whose points exceed ``--memory-budget`` is refused before any work.
BYTES_PER_GRID_POINT = 2048


@attrs.frozen
class EpsilonGrid:
    """``--epsilon-grid LO:HI:N``, kept unexpanded until its size is checked."""

    text: str
    lo: float
    hi: float
    count: int

    def points(self) -> tuple[float, ...]:
        """The ``count`` evenly spaced epsilons from ``lo`` to ``hi`` inclusive."""
        lo, hi, count = self.lo, self.hi, self.count
        return tuple(lo + (hi - lo) * i / (count - 1) for i in range(count))

    def check_memory(self, budget: int) -> None:
        """Refuse a grid of more than ``budget`` bytes (:data:`BYTES_PER_GRID_POINT` each)."""
        need = self.count * BYTES_PER_GRID_POINT
        if need > budget:
            raise ConfigurationError(
                f"--epsilon-grid {self.text!r} is invalid: {self.count:,} points need about "
                f"{need / 2**30:.3g} GiB ({BYTES_PER_GRID_POINT} bytes each), more than the "
                f"memory budget of {budget / 2**30:.3g} GiB (--memory-budget): use at most "
                f"{budget // BYTES_PER_GRID_POINT:,} points"
            )


def parse_grid(text: str) -> tuple[float, ...]:
    """``LO:HI:N``, N >= 2 evenly spaced epsilons from LO to HI inclusive."""
    return parse_grid_spec(text).points()


def parse_grid_spec(text: str) -> EpsilonGrid:
    """argparse type: ``LO:HI:N`` as an :class:`EpsilonGrid` (expanded after its check)."""
    parts = text.split(":")
    try:
        if len(parts) != 3:
            raise ValueError
        lo, hi, count = _number(parts[0]), _number(parts[1]), int(parts[2])
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be LO:HI:N, e.g. 0:8:33"
        ) from None
    if not (0 <= lo < hi) or count < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must have 0 <= LO < HI and N >= 2")
    return EpsilonGrid(text, lo, hi, count)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_setup_arguments(parser)
    parser.set_defaults(delta=None)  # the curve fixes epsilons: --delta is refused
    common.add_sigma_argument(parser)
    grid = parser.add_mutually_exclusive_group(required=True)
    grid.add_argument(
        "--epsilons", type=parse_epsilons, metavar="E1,E2,...", help="increasing epsilons"
    )
    grid.add_argument(
        "--epsilon-grid",
        type=parse_grid_spec,
        metavar="LO:HI:N",
        help="N evenly spaced epsilons (at most --memory-budget / "
        f"{BYTES_PER_GRID_POINT} bytes of them)",
    )
    parser.add_argument(
        "--failure-probability",
        type=common.probability,
        default=None,
        help=f"Monte Carlo: the curve holds on the whole grid except with this probability "
        f"(default {DEFAULT_CURVE_FAILURE:g}); exact and proven accountants have none",
    )
    parser.add_argument(
        "--deltas",
        type=parse_deltas,
        metavar="D1,D2,...",
        help="also the epsilon(delta) view: the certified epsilon at each of these deltas, read "
        "off the curve's dominating pair (between grid points too), failure probability "
        "included (table and --json)",
    )
    parser.add_argument("--csv", action="store_true", help="CSV output of the delta(eps) table")
    common.add_accountant_argument(parser)


def format_curve(result: CurveResult) -> list[str]:
    """Human-readable lines for a curve: a table and the provenance."""
    beta = result.failure_probability
    lines = [f"{'epsilon':>10}  {'delta (estimate)':>18}  {'delta (certified)':>18}"]
    for eps, hat, upper in zip(result.epsilons, result.delta, result.certified_delta, strict=True):
        lines.append(f"{common.fmt(eps):>10}  {common.fmt(hat):>18}  {common.fmt(upper):>18}")
    floor = delta_floor(result)
    if result.target_deltas:
        lines.append(f"{'delta':>10}  {'epsilon (certified)':>18}")
        for delta, eps in zip(result.target_deltas, result.certified_epsilons, strict=True):
            mark = "  (below the delta floor)" if math.isinf(eps) and delta <= floor else ""
            lines.append(f"{common.fmt(delta):>10}  {common.fmt(eps):>18}{mark}")
    lines.append(f"sigma                {common.fmt(result.sigma)}")
    if result.samples is not None:
        lines.append(
            f"delta floor          {common.fmt(floor)}: no smaller delta is certified at any "
            f"epsilon (set by the {result.samples:,} samples; more --samples lower it)"
        )
    if beta > 0:
        lines.append(
            f"failure probability  {beta:.2g} for the whole curve (not folded in: the run is "
            "(epsilon, certified delta + failure probability)-DP)"
        )
    if result.samples is not None:
        lines.append(f"samples              {result.samples:,} verification per direction")
    lines.append(f"seconds              {result.seconds:.3f}")
    lines.extend(common.closing_lines(result))
    return lines


def delta_floor(result: CurveResult) -> float:
    """The smallest delta the curve certifies at any epsilon, failure probability included
    (a sampled curve cannot go lower: epsilon(delta) is inf below it)."""
    return min(result.guarantee(eps) for eps in result.epsilons)


def curve_csv(result: CurveResult) -> str:
    """The curve as CSV: ``epsilon,delta,certified_delta,guaranteed_delta``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["epsilon", "delta", "certified_delta", "guaranteed_delta"])
    for eps, hat, upper in zip(result.epsilons, result.delta, result.certified_delta, strict=True):
        writer.writerow([repr(eps), repr(hat), repr(upper), repr(result.guarantee(eps))])
    return out.getvalue()


def curve_samples(
    args: argparse.Namespace, accountant: Accountant, points: int
) -> tuple[Accountant, str | None]:
    """With ``--precision``: the samples planned for the smallest of ``--deltas`` (required:
    the target the precision refers to) over the grid's ``points`` claims, as ``minsep
    epsilon`` plans them (docs/math.md §7.3; a planning rule for the curve's simultaneous
    bounds, never part of their guarantee), and the line stating them."""
    precision = getattr(args, "precision", None)
    if precision is None:
        return accountant, None
    if getattr(args, "samples", None) is not None:
        raise ConfigurationError(
            f"--precision = {precision!r} is invalid with --samples: give one of them",
            parameter="precision",
        )
    if not args.deltas:
        raise ConfigurationError(
            f"--precision = {precision!r} is invalid without --deltas: the samples are "
            "planned for the smallest target delta; give --deltas or --samples",
            parameter="precision",
        )
    if "samples" not in setup.accountant_fields(type(accountant)):
        return accountant, None
    from minsep.framework.montecarlo.precision import samples_for_precision

    target = min(args.deltas)
    samples = samples_for_precision(target, float(precision), candidates=points)
    changes: dict[str, Any] = {"samples": samples}
    return attrs.evolve(accountant, **changes), (  # type: ignore[misc]
        f"samples: {samples:,} per direction, chosen for delta = {target:g} at "
        f"{float(precision):.3g} precision over {points} grid points (--precision, --samples)"
    )


def _run(args: argparse.Namespace) -> int:
    refuse_delta(args, "curve")
    if args.json and args.csv:
        raise ConfigurationError(
            "--csv is invalid with --json: choose one output format", parameter="csv"
        )
    if args.deltas and args.csv:
        raise ConfigurationError(
            f"--deltas = {args.deltas!r} is invalid with --csv (the CSV holds the delta(eps) "
            "table): use --json or the table for the epsilon(delta) view",
            parameter="deltas",
        )
    if args.epsilon_grid is not None:
        budget = getattr(args, "memory_budget", None)
        args.epsilon_grid.check_memory(DEFAULT_MEMORY_BUDGET if budget is None else int(budget))
    if getattr(args, "proposal", None) == "escort":
        raise ConfigurationError(
            "--proposal = 'escort' is invalid for minsep curve: the certified curve verifies "
            "the whole epsilon grid on one set of plain draws of the dominating pair; use "
            "minsep epsilon or delta for escort answers",
            parameter="proposal",
        )
    scheme = common.build_scheme(args)
    strategy = common.build_strategy(args)
    common.show_plans_unless_quiet(args)  # first: building the accountant logs --workers auto
    accountant, chosen = common.choose_accountant(args, scheme, strategy)
    epsilons = args.epsilons if args.epsilons is not None else args.epsilon_grid.points()
    accountant, stated = curve_samples(args, accountant, len(epsilons))
    if stated is not None:
        common.say(args, f"plan: {stated}")
    beta = DEFAULT_CURVE_FAILURE if args.failure_probability is None else args.failure_probability
    result = accountant.delta_curve(scheme, strategy, args.sigma, epsilons, beta)
    if args.failure_probability is not None and result.failure_probability != beta:
        common.warn(
            f"--failure-probability {beta:g} is not what accountant {result.accountant!r} "
            f"spends: its curve's failure probability is {result.failure_probability:g}"
        )
    if chosen is not None:
        result = attrs.evolve(result, notes=(*result.notes, chosen))
    if stated is not None:
        result = attrs.evolve(result, notes=(*result.notes, f"{stated}."))
    if args.deltas:
        result = result.with_epsilons(args.deltas)
    below = [d for d, e in zip(result.target_deltas, result.certified_epsilons, strict=True)
             if math.isinf(e)]  # fmt: skip
    if below and not common.quiet(args):
        common.warn(
            f"epsilon(delta) is inf at delta = {', '.join(common.fmt(d) for d in below)}: below "
            f"the curve's delta floor {common.fmt(delta_floor(result))}"
            + (" (set by the samples; more --samples lower it)" if result.samples else "")
        )
    if args.json:
        common.print_json(result)
    elif args.csv:
        print(curve_csv(result), end="")
    else:
        print("\n".join(format_curve(result)))
    if not any(d < 1.0 for d in result.certified_delta):
        common.warn("no grid point certifies a delta below 1; exit status 3")
        return common.EXIT_UNCERTIFIED
    return 0


command = Command(
    "curve",
    "delta(epsilon) on a grid of epsilons, certified together (composable, docs/math.md §7.1)",
    _add_arguments,
    _run,
    examples=(
        "minsep curve --scheme b_min_sep --min-sep 8 --bands 8 --steps 1024 --rate 1/256 "
        "--sigma 1 --epsilon-grid 0:8:33 --json",
        "minsep curve --scheme poisson --steps 1000 --rate 0.01 --sigma 1.1 --accountant pld "
        "--epsilon-grid 0:4:17",
    ),
)
