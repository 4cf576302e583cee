"""Monte Carlo sample counts chosen from the question, stated, and bounded by ``--max-seconds``.

Without ``--samples``, ``epsilon`` and ``calibrate`` verify on the fewest samples that reach
``--precision`` (default 5 %) at the question's delta
(:func:`~minsep.framework.montecarlo.precision.samples_for_precision`, docs/math.md §7.3),
instead of a fixed million. With ``--max-seconds`` the run is first timed (the plan's probe):
when the estimate exceeds the limit, the samples are cut to fit and the precision this leaves
is stated, down to :data:`~minsep.framework.montecarlo.precision.LOOSEST_PRECISION`; a run
that does not fit even then is refused, naming the time it needs. An explicit
``--samples`` is used as given (and refused over ``--max-seconds`` as before).

The choice applies to whichever accountant takes a ``samples`` option (decided by its fields,
not its type). ``delta`` has no target delta: without ``--precision`` it keeps the accountant's
default and says so; with it the samples are planned for the deterministic first answer's
delta (:func:`delta_samples`). ``curve`` plans from its smallest ``--deltas``
(``curve_command.curve_samples``). For ``epsilon`` and ``calibrate`` an accountant that
chooses its own route (plain or escort) does so here (:mod:`.route_choice`).
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from minsep.framework import setup
from minsep.framework.cli.route_choice import choose_route
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.montecarlo.evr import DEFAULT_LADDER
from minsep.framework.montecarlo.precision import (
    DEFAULT_PRECISION,
    LOOSEST_PRECISION,
    precision_of_samples,
    samples_for_precision,
)
from minsep.framework.option_groups import configure

__all__ = ["choose_samples", "delta_samples"]

#: Claims verified per question (the union bound of docs/math.md §7): the epsilon ladder, or
#: one for Algorithm 5.
_CANDIDATES = {"epsilon": len(DEFAULT_LADDER), "calibrate": 1}


def choose_samples(
    args: argparse.Namespace,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    question: str,
    numbers: dict[str, float],
    default_precision: float = DEFAULT_PRECISION,
) -> tuple[Accountant, str | None]:
    """``accountant`` with its samples chosen for the question (``default_precision`` when
    ``--precision`` is not given), and the line that states them (None for an accountant
    without samples)."""
    precision = getattr(args, "precision", None)
    takes_samples = "samples" in setup.accountant_fields(type(accountant))
    _check_precision(args, question)
    if precision is not None and question == "delta":  # planned from its first answer
        if not takes_samples:
            return accountant, None
        return delta_samples(args, accountant, scheme, strategy, numbers, float(precision))
    if not takes_samples:
        return accountant, None
    samples = int(getattr(accountant, "samples"))  # noqa: B009 - a field found by name
    if getattr(args, "samples", None) is not None:
        return accountant, f"samples: {samples:,} per direction (--samples)"
    if question not in _CANDIDATES:
        return accountant, (
            f"samples: {samples:,} per direction (the default; --samples to change: a "
            f"{question} question has no target delta to choose them from)"
        )
    delta, candidates = float(numbers["delta"]), _CANDIDATES[question]
    target = default_precision if precision is None else float(precision)
    samples = _samples_for(delta, target, candidates, default_precision)
    routed, said = choose_route(args, accountant, scheme, strategy, question, numbers, target)
    if routed is not None:  # the accountant chose the escort route
        return routed, said
    why = f"; {said}" if said else ""  # why plain sampling, when the escort was considered
    accountant = _with_samples(accountant, samples, target)
    text = (
        f"samples: {samples:,} per direction, chosen for delta = {delta:g} at {target:.3g} "
        "precision (certified answer within about that fraction of the estimate; "
        "--precision, --samples)"
    )
    limit = getattr(args, "max_seconds", None)
    if limit is None:
        return accountant, text
    plan = getattr(accountant, "plan", None)
    if plan is None:
        return accountant, text
    estimate = plan(scheme, strategy, question, numbers.get("sigma", 1.0)).estimated_seconds
    if estimate is None or estimate <= limit:
        return accountant, text
    fitted = int(samples * limit / estimate)
    fewest = samples_for_precision(delta, LOOSEST_PRECISION, candidates=candidates)
    if fitted < fewest:
        need = estimate * fewest / samples
        raise ConfigurationError(
            f"--max-seconds = {limit:g} is too small: even at precision {LOOSEST_PRECISION:g} "
            f"({fewest:,} samples per direction) the run is estimated at {need:.3g} s; must be "
            f">= {need:.3g} (or use more workers, or an exact or deterministic accountant)"
            f"{why}",
            parameter="max_seconds",
        )
    reached = precision_of_samples(fitted, delta, candidates=candidates)
    return _with_samples(accountant, fitted, reached), (
        f"samples: {fitted:,} per direction to fit --max-seconds {limit:g} (estimated "
        f"{estimate:.3g} s for {samples:,}): precision {reached:.3g} instead of {target:.3g}"
    )


def _check_precision(args: argparse.Namespace, question: str) -> None:
    """Refuse ``--precision`` with ``--samples``, or for a question it cannot size samples for
    (one without a target delta, other than ``delta``)."""
    precision = getattr(args, "precision", None)
    if precision is None:
        return
    if getattr(args, "samples", None) is not None:
        raise ConfigurationError(
            f"--precision = {precision!r} is invalid with --samples: give one of them",
            parameter="precision",
        )
    if question != "delta" and question not in _CANDIDATES:
        raise ConfigurationError(
            f"--precision = {precision!r} is invalid for minsep {question}: it sets the samples "
            "from a target delta (epsilon, calibrate, compare; delta from its first answer, "
            "curve from --deltas); use --samples",
            parameter="precision",
        )


def _samples_for(delta: float, target: float, candidates: int, default: float) -> int:
    """The verification samples reaching precision ``target`` at ``delta`` over ``candidates``
    claims; refused by name when no feasible run does (``default``: the precision the command
    uses when none is given)."""
    try:
        return samples_for_precision(delta, target, candidates=candidates)
    except ConfigurationError:
        raise ConfigurationError(
            f"--precision = {target!r} is invalid at delta = {delta!r}: it needs more than "
            f"2^62 verification samples (no feasible run); use a larger --precision (default "
            f"{default:g}) or give --samples",
            parameter="precision",
        ) from None


def _with_samples(
    accountant: Accountant, samples: int, precision: float | None = None
) -> Accountant:
    """``accountant`` with ``samples``, and the ``precision`` they were sized for when it takes
    one (the escort then verifies on fewer draws where they reach it)."""
    changes: dict[str, Any] = {"samples": samples}
    if precision is not None and "precision" in setup.accountant_fields(type(accountant)):
        changes["precision"] = precision
    return attrs.evolve(accountant, **changes)  # type: ignore[misc]


def delta_samples(
    args: argparse.Namespace,
    accountant: Accountant,
    scheme: SamplingScheme,
    strategy: Strategy,
    numbers: dict[str, float],
    precision: float,
) -> tuple[Accountant, str]:
    """``minsep delta --precision``: the samples planned for the deterministic first answer's
    delta (an upper bound on the true delta, so the plan may give too few samples for the
    precision when the bound is loose: the certified delta is then looser, never wrong);
    refused when no first answer is below 1."""
    from minsep.framework.cli.first_answer import first_answer
    from minsep.framework.montecarlo.evr import DEFAULT_FACTORS

    early = first_answer("delta", scheme, strategy, numbers, accountant)
    if early is None or not 0.0 < early.value < 1.0:
        raise ConfigurationError(
            f"--precision = {precision!r} is invalid here: no deterministic bound on delta "
            "below 1 to choose the samples from; use --samples",
            parameter="precision",
        )
    reference = float(early.value)
    samples = samples_for_precision(reference, precision, candidates=len(DEFAULT_FACTORS))
    limit = getattr(args, "max_seconds", None)
    if limit is not None:
        accountant = configure(accountant, max_seconds=limit)
    return _with_samples(accountant, samples), (
        f"samples: {samples:,} per direction, chosen for the first answer's delta <= "
        f"{reference:.3g} (by {early.accountant}) at {precision:.3g} precision (--precision, "
        "--samples)"
    )
