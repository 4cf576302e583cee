"""Cross-scheme comparison: every scheme at one training setup, at equal expected batch size.

For one setup (n steps, participation rate p0 = E|B|/|D|, delta) and either a target epsilon (the
noise multiplier is calibrated per row) or a fixed sigma, :func:`compare` evaluates the rows every
registered scheme proposes through its ``compare_variants`` hook
(:class:`~minsep.framework.parameters.CompareVariant`): for the built-ins

- DP-SGD: Poisson sampling with the identity strategy (always, whatever the bands grid);
- cyclic Poisson BandMF with b = bands groups, for each bands value;
- balls-in-bins BandMF, for each bands value;
- b-min-sep BandMF for each bands value k and each min-sep b (default: the powers of two with
  k <= b <= 1/p0);
- unamplified BandMF: the Gaussian mechanism for one participation per epoch (min-sep
  floor(1/p0), at most ceil(n / min-sep) participations).

Strategies are a compared dimension: ``ComparisonSetup.strategies`` adds registered strategies
besides the bands grid (b-min-sep proposes rows for them at every feasible b, accounted by
docs/math.md §2.1 when they are not banded, and an unamplified row), and the table then names
the best strategy per scheme (:func:`best_strategies`).

A plugin scheme gets rows without any edit here (by default one per bands value, or one per
feasible min-sep when ``min_sep`` is its only required option).

Each row is accounted by the first registered accountant that can account it, in the order
:func:`~minsep.framework.setup.preference` (the sound registered accountants by declared kind
and rank; a row may fix its accountant, as the unamplified row does);
which accountant can is decided by the schemes' and accountants' hooks. Utility is the
prefix-sum MSE of docs/math.md §8, ``MSE = (1/n) ||A C^-1||_F^2 sigma^2`` (sigma already includes
the sensitivity for the unamplified row), reported with its ratio to the best row.

The library entry point is :func:`compare` (paper scripts call it); the ``minsep compare``
command (:mod:`minsep.framework.cli.compare_command`) is a thin wrapper printing a table,
``--json`` or ``--csv``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework.compare_output import (
    BASE_DELTA_FRACTION,
    COLUMNS,
    LEGEND,
    STRATEGY_COLUMN,
    best_strategies,
    empty_reason,
    format_csv,
    format_json,
    format_table,
    recommended_samples,
    sample_warnings,
)
from minsep.framework.compare_parallel import parallel_rows, row_processes
from minsep.framework.compare_plan import RowPlan, plan
from minsep.framework.compare_row import ComparisonRow
from minsep.framework.compare_setup import DEFAULT_EPSILON, ComparisonSetup, available_families
from minsep.framework.errors import CalibrationError, ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Accountant
from minsep.framework.montecarlo.precision import BEYOND_PRECISION
from minsep.framework.results import EXACT, UPPER_BOUND, CalibrationResult, EpsilonResult
from minsep.framework.setup import accountant_fields, build_accountant, strategy_bands

#: Called before each row and once at the end: ``(rows done, rows total, next row's label)``.
Progress = Callable[[int, int, str], None]


#: What a row that cannot be evaluated reports (one line) while the other rows still print.
ROW_ERRORS = (ConfigurationError, CalibrationError, NotAccountableError)


def _row_accountant(
    setup: ComparisonSetup, item: RowPlan, accountant: Accountant
) -> tuple[Accountant, str]:
    """``accountant`` with this row's samples (and route) chosen from the question at
    ``setup.precision`` and fitted to ``setup.max_seconds``, as ``minsep epsilon`` chooses
    them (:func:`~minsep.framework.cli.sample_choice.choose_samples`), and a note naming the
    route when it is not plain sampling. Unchanged without ``precision``, with ``samples``
    given, or for an accountant without samples. Raises ConfigurationError when the row
    cannot fit ``max_seconds``."""
    takes = "samples" in accountant_fields(type(accountant))
    if setup.precision is None or "samples" in setup.accountant_options or not takes:
        return accountant, ""
    from minsep.framework.cli.sample_choice import choose_samples  # the one choice path

    question = "calibrate" if setup.epsilon is not None else "epsilon"
    numbers: dict[str, float] = {"delta": setup.delta}
    if setup.epsilon is not None:
        numbers["epsilon"] = setup.epsilon
    else:
        assert setup.sigma is not None
        numbers["sigma"] = setup.sigma
    args = argparse.Namespace(
        precision=setup.precision, samples=None, max_seconds=setup.max_seconds
    )
    chosen, _ = choose_samples(args, accountant, item.scheme, item.strategy, question, numbers)
    proposal = getattr(chosen, "proposal", None)
    if proposal in (None, "auto", "plain"):
        return chosen, ""
    if BEYOND_PRECISION in (getattr(chosen, "routed", None) or ""):
        return chosen, (
            f"{proposal} route, the add direction by its bound: sigma {BEYOND_PRECISION}, "
            "plain add draws being over --max-seconds"
        )
    return chosen, f"{proposal} route"


def _evaluate(setup: ComparisonSetup, item: RowPlan, accountant: Accountant) -> ComparisonRow:
    """One row; a row that cannot be certified (ROW_ERRORS) keeps None values and says why
    in one line (with what its accountant had reported before the error)."""
    start = time.perf_counter()
    found: dict[str, Any] = {"method": "exact", "failure_probability": 0.0}
    try:
        accountant, route = _row_accountant(setup, item, accountant)
        account = _calibrated if setup.epsilon is not None else _at_sigma
        note = account(setup, item, accountant, found)
        unit = item.strategy.prefix_mse(setup.n_steps)
        low = found.get("sigma_low")
        found.update(mse=unit * found["sigma"] ** 2, mse_low=None if low is None else unit * low**2)
        found["note"] = "; ".join(n for n in (route, note) if n)
    except ROW_ERRORS as exc:
        found.update(sigma=None, epsilon=None, mse=None)
        found["note"] = "not certified: " + " ".join(str(exc).split())
    return ComparisonRow(
        family=item.family,
        label=item.label,
        scheme=item.scheme.name,
        bands=strategy_bands(item.strategy) or None,
        min_sep=item.scheme.min_separation,
        accountant=item.accountant,
        delta=setup.delta,
        seconds=time.perf_counter() - start,
        strategy=item.strategy_name,
        **found,
    )


def evaluate_row(setup: ComparisonSetup, item: RowPlan) -> ComparisonRow:
    """One row with its own accountant (a row of :func:`parallel_rows`)."""
    accountant = build_accountant(item.accountant, setup.accountant_options, strict=False)
    return _evaluate(setup, item, accountant)


def _calibrated(
    setup: ComparisonSetup, item: RowPlan, accountant: Accountant, found: dict[str, Any]
) -> str:
    """Calibrate the row's sigma to ``setup.epsilon``: its certified sigma and epsilon (the
    exact epsilon at that sigma for exact and proven accountants) into ``found``, step by
    step (an error keeps what was reported before it); returns the row's note."""
    scheme, strategy = item.scheme, item.strategy
    assert setup.epsilon is not None
    cal = accountant.calibrate(scheme, strategy, setup.epsilon, setup.delta)
    found.update(sigma=cal.sigma, sigma_low=_sigma_low(cal), **_reported(cal))
    if cal.method in (EXACT, UPPER_BOUND):
        answer = accountant.epsilon(scheme, strategy, cal.sigma, setup.delta)
        found["epsilon"] = answer.certified_epsilon
    else:
        found["epsilon"] = cal.epsilon
    if not cal.certified:
        return "calibration not certified"
    if len(cal.candidates) > 1 and cal.sigma <= min(cal.candidates):
        return "every candidate sigma passed: a smaller sigma may be certifiable"
    return ""


def _at_sigma(
    setup: ComparisonSetup, item: RowPlan, accountant: Accountant, found: dict[str, Any]
) -> str:
    """The row's certified epsilon at ``setup.sigma`` into ``found``; returns its note (none)."""
    assert setup.sigma is not None
    res = accountant.epsilon(item.scheme, item.strategy, setup.sigma, setup.delta)
    found.update(sigma=setup.sigma, epsilon=res.certified_epsilon, **_reported(res))
    return ""


def _reported(result: CalibrationResult | EpsilonResult) -> dict[str, Any]:
    """What a row shows of how its answer was reached: the method, the failure probability,
    and the base delta and samples of a Monte Carlo answer."""
    return {
        "method": result.method,
        "failure_probability": result.failure_probability,
        "base_delta": result.base_delta,
        "samples": result.samples,
    }


def _sigma_low(cal: CalibrationResult) -> float | None:
    """The lower end of a calibrated sigma's uncertainty (:class:`ComparisonRow`): the Monte
    Carlo point estimate's sigma, else the largest examined sigma below the returned one (the
    search found it failing the target: the bracket of an exact search); None when neither
    is known."""
    if cal.sigma_estimate is not None:
        return min(cal.sigma_estimate, cal.sigma)
    below = [c for c in cal.candidates if c < cal.sigma]
    return max(below) if below else None


def compare(setup: ComparisonSetup, progress: Progress | None = None) -> list[ComparisonRow]:
    """Evaluate every applicable (scheme, bands, min-sep) combination of ``setup``.

    Rows come in the schemes' ``compare_rank`` order, then in the order each scheme proposes
    them (by bands and min-sep for the built-ins); ``mse_ratio`` is each row's
    MSE over the smallest MSE of the table (1 for the best row).
    """
    made: dict[str, Accountant] = {}

    def accountant_for(name: str) -> Accountant:
        if name not in made:
            made[name] = build_accountant(name, setup.accountant_options, strict=False)
        return made[name]

    items = plan(setup, accountant_for)
    processes = row_processes(setup, items)
    results = (
        parallel_rows(setup, items, processes, evaluate_row)
        if processes > 1
        else (
            (i, _evaluate(setup, it, accountant_for(it.accountant))) for i, it in enumerate(items)
        )
    )
    done: dict[int, ComparisonRow] = {}
    for _ in items:
        if progress is not None:
            item = next(it for i, it in enumerate(items) if i not in done)
            label = f"{item.label} {item.strategy_name} b={item.scheme.min_separation}"
            progress(len(done), len(items), label)
        index, row = next(results)
        done[index] = row
    rows = [done[i] for i in range(len(items))]
    if progress is not None:
        progress(len(rows), len(items), "")
    finite = [r.mse for r in rows if r.mse is not None and math.isfinite(r.mse)]
    best = min(finite, default=None)
    if best is None or best <= 0:
        return rows
    return [attrs.evolve(r, mse_ratio=None if r.mse is None else r.mse / best) for r in rows]


__all__ = [
    "BASE_DELTA_FRACTION",
    "COLUMNS",
    "DEFAULT_EPSILON",
    "LEGEND",
    "ROW_ERRORS",
    "STRATEGY_COLUMN",
    "ComparisonRow",
    "ComparisonSetup",
    "Progress",
    "available_families",
    "best_strategies",
    "compare",
    "empty_reason",
    "format_csv",
    "format_json",
    "format_table",
    "plan",
    "recommended_samples",
    "sample_warnings",
]
