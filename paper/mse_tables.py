"""The tables of paper §7.1 (:mod:`minsep.paper.mse_comparison`) from the calibrated rows:
all rows, the best MSE per scheme, the ratios of Fig. 2 and 3 and the best row per strategy."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import attrs

from minsep.framework.compare import ComparisonRow
from minsep.paper.mse_grid import Record
from minsep.paper.mse_settings import MSESettings

#: The columns that say which row it is: setup, scheme, strategy, bands and b.
KEY_COLUMNS = ("epsilon_target", "epoch_length", "family", "strategy", "bands", "min_sep")

ROW_COLUMNS = (*KEY_COLUMNS, "accountant", "sigma", "epsilon", "mse", "failure_probability", "note")


def row_dicts(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Plain rows for the all-rows CSV."""
    out = []
    for record in records:
        r = record.row
        out.append(
            {
                "epsilon_target": record.epsilon_target,
                "epoch_length": record.epoch_length,
                "family": r.family,
                "strategy": r.strategy,
                "bands": r.bands,
                "min_sep": r.min_sep,
                "accountant": r.accountant,
                "sigma": r.sigma,
                "epsilon": r.epsilon,
                "mse": r.mse,
                "failure_probability": r.failure_probability,
                "note": r.note,
            }
        )
    return out


#: Note of a balls-in-bins row taken from the b-min-sep calibration at b = |D|/B.
AS_B_MIN_SEP = "b-min-sep at b = |D|/B (p = 1): same loss model and draws"


def balls_in_bins_as_b_min_sep(records: Sequence[Record]) -> list[Record]:
    """``records`` with each balls-in-bins row replaced by the b-min-sep row of the same setup
    and bands at b = |D|/B, relabelled as balls-in-bins.

    Warm b-min-sep at b = 1/p0 samples with p = 1 and *is* balls-in-bins (docs/math.md §3), and
    that row is calibrated on the same draws as every other b of its setup, so "b-min-sep is
    never worse than balls-in-bins" holds exactly: the balls-in-bins candidates are a subset of
    the b-min-sep ones. A balls-in-bins row without such a twin (bands > |D|/B) is kept as
    accounted by its own loss model.
    """
    twins = {
        (rec.epsilon_target, rec.epoch_length, rec.row.bands): rec.row
        for rec in records
        if rec.row.family == "b_min_sep" and rec.row.min_sep == rec.epoch_length
    }
    out = []
    for rec in records:
        twin = twins.get((rec.epsilon_target, rec.epoch_length, rec.row.bands))
        if rec.row.family == "balls_in_bins" and twin is not None:
            row = attrs.evolve(twin, family=rec.row.family, label=rec.row.label, note=AS_B_MIN_SEP)
            rec = Record(rec.epsilon_target, rec.epoch_length, row)
        out.append(rec)
    return out


K = TypeVar("K", bound=Hashable)


def _smallest_mse(records: Sequence[Record], key: Callable[[Record], K]) -> dict[K, ComparisonRow]:
    """The smallest-MSE certified row (finite MSE) per ``key``; keys in order of appearance,
    ties to the first row."""
    best: dict[K, ComparisonRow] = {}
    for record in records:
        r = record.row
        if r.mse is None or not math.isfinite(r.mse):
            continue
        k = key(record)
        if k not in best or r.mse < (best[k].mse or math.inf):
            best[k] = r
    return best


def best_rows(records: Sequence[Record]) -> dict[tuple[float, int, str], ComparisonRow]:
    """The smallest-MSE certified row per (epsilon, epoch length, family)."""
    return _smallest_mse(
        records, lambda rec: (rec.epsilon_target, rec.epoch_length, rec.row.family)
    )


BEST_COLUMNS = (*KEY_COLUMNS, "sigma", "mse")

RATIO_COLUMNS = (
    "epsilon_target",
    "epoch_length",
    "b_min_sep_mse",
    "b_min_sep_bands",
    "b_min_sep_b",
    "cyclic_poisson_mse",
    "cyclic_poisson_bands",
    "balls_in_bins_mse",
    "balls_in_bins_bands",
    "dp_sgd_mse",
    "ratio_vs_cyclic_poisson",
    "ratio_vs_balls_in_bins",
)


def ratio_rows(
    settings: MSESettings, best: dict[tuple[float, int, str], ComparisonRow]
) -> list[dict[str, Any]]:
    """Per setup: the best MSE of each scheme and the two ratios of Fig. 2 and 3."""

    def ratio(a: ComparisonRow | None, b: ComparisonRow | None) -> float | None:
        if a is None or b is None or a.mse is None or not b.mse:
            return None
        return float(a.mse) / float(b.mse)

    out = []
    for epsilon in settings.epsilons:
        for length in settings.epoch_lengths:
            bms = best.get((epsilon, length, "b_min_sep"))
            cyc = best.get((epsilon, length, "cyclic_poisson"))
            bib = best.get((epsilon, length, "balls_in_bins"))
            sgd = best.get((epsilon, length, "poisson"))
            out.append(
                {
                    "epsilon_target": epsilon,
                    "epoch_length": length,
                    "b_min_sep_mse": bms and bms.mse,
                    "b_min_sep_bands": bms and bms.bands,
                    "b_min_sep_b": bms and bms.min_sep,
                    "cyclic_poisson_mse": cyc and cyc.mse,
                    "cyclic_poisson_bands": cyc and cyc.bands,
                    "balls_in_bins_mse": bib and bib.mse,
                    "balls_in_bins_bands": bib and bib.bands,
                    "dp_sgd_mse": sgd and sgd.mse,
                    "ratio_vs_cyclic_poisson": ratio(bms, cyc),
                    "ratio_vs_balls_in_bins": ratio(bms, bib),
                }
            )
    return out


def ratio_grid(
    settings: MSESettings, ratios: Sequence[dict[str, Any]], key: str
) -> tuple[tuple[float | None, ...], ...]:
    """``key`` as a grid: rows epsilons, columns epoch lengths."""
    table = {(r["epsilon_target"], r["epoch_length"]): r[key] for r in ratios}
    return tuple(
        tuple(table.get((e, length)) for length in settings.epoch_lengths)
        for e in settings.epsilons
    )


def strategy_rows(settings: MSESettings, records: Sequence[Record]) -> list[dict[str, Any]]:
    """Per setup, scheme family and strategy: the best certified row of that strategy (over
    bands and b) and its MSE over the family's best; the winner has ratio 1."""
    best = _smallest_mse(
        records,
        lambda rec: (rec.epsilon_target, rec.epoch_length, rec.row.family, _strategy_kind(rec.row)),
    )
    top: dict[tuple[float, int, str], float] = {}
    for (e, length, family, _), r in best.items():
        assert r.mse is not None
        top[(e, length, family)] = min(top.get((e, length, family), math.inf), r.mse)
    return [
        {
            "epsilon_target": e,
            "epoch_length": length,
            "family": family,
            "strategy": kind,
            "bands": r.bands,
            "min_sep": r.min_sep,
            "sigma": r.sigma,
            "mse": r.mse,
            "mse_over_best": (r.mse or math.nan) / top[(e, length, family)],
        }
        for (e, length, family, kind), r in sorted(best.items(), key=lambda kv: kv[0])
    ]


def _strategy_kind(row: ComparisonRow) -> str:
    """The strategy a row compares: the bands grid's rows are one kind (MSE-optimal banded
    Toeplitz, any k; the identity for DP-SGD), each extra spec another."""
    if row.strategy.startswith("banded_toeplitz/") or row.strategy.startswith("identity"):
        return "banded_toeplitz (grid)" if row.strategy.startswith("banded") else "identity"
    return row.strategy


STRATEGY_COLUMNS = (*BEST_COLUMNS, "mse_over_best")


__all__ = [
    "AS_B_MIN_SEP",
    "BEST_COLUMNS",
    "RATIO_COLUMNS",
    "ROW_COLUMNS",
    "STRATEGY_COLUMNS",
    "balls_in_bins_as_b_min_sep",
    "best_rows",
    "ratio_grid",
    "ratio_rows",
    "row_dicts",
    "strategy_rows",
]
