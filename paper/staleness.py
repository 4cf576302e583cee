"""Are the committed outputs current? ``python -m minsep.paper.staleness [--only NAME ...]``.

Reruns a stated subset of every paper script at HEAD and compares it with the committed quick
outputs in ``paper/outputs`` (:func:`~minsep.paper.common.csv_differences`: text exactly,
numbers within ``RERUN_RTOL``). Each subset is computed exactly as the quick mode computes
those rows (same settings, same seeds), so a difference means the committed output is stale:
regenerate it with the command printed. Exit status 0 when every subset agrees, 1 otherwise.
Sized for CI: a few minutes on 2 cores (the Monte Carlo-heavy parts of the quick modes are
left to the slow tests in ``tests/test_paper.py``).

Subsets:

* ``limits``: the whole quick run (n = 64, 50,000 samples per direction; its brackets depend on
  the whole sigma grid);
* ``production``: the exact PLD calibrations of DP-SGD and of untruncated cyclic Poisson
  (``production_pld.csv``) and the sample counts of a certified check
  (``production_samples.csv``);
* ``mse_comparison``: the exact rows (DP-SGD, cyclic Poisson, unamplified) at epsilon = 4,
  |D|/B = 128, 16 bands (``mse_comparison_rows.csv``);
* ``multi_attribution``: the synthetic co-authorship graph (``multi_attribution_graph.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from minsep.paper.common import OUTPUT_DIR, EngineOptions, csv_differences, read_csv

__all__ = ["CHECKS", "main", "stale"]

Rows = list[dict[str, str]]


def _text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Rows:
    """Rows as the CSV writer would format them (read back through a CSV round trip)."""
    import tempfile
    from pathlib import Path

    from minsep.paper.common import write_csv

    with tempfile.TemporaryDirectory() as folder:
        return read_csv(write_csv(Path(folder) / "rows.csv", columns, list(rows)))


def _limits() -> tuple[Rows, Rows]:
    from minsep.paper import limits

    produced = _text(limits.limit_rows(limits.QUICK), limits.COLUMNS)
    return produced, read_csv(OUTPUT_DIR / "limits.csv")


def _production() -> tuple[Rows, Rows]:
    from minsep.accountants.pld import PLDAccountant
    from minsep.paper import production
    from minsep.strategies import BandedToeplitz

    settings = production.QUICK
    banded = BandedToeplitz.optimal(settings.n_steps, settings.bands)
    wanted = ("DP-SGD (Poisson)", f"cyclic Poisson {settings.bands}-BandMF")
    cases = [c for c in production.pld_cases(settings, banded) if c.label in wanted]
    accountant = PLDAccountant(value_discretization_interval=settings.pld_interval)
    produced = _text(production.pld_rows(settings, cases, accountant), production.PLD_COLUMNS)
    committed = [r for r in read_csv(OUTPUT_DIR / "production_pld.csv")
                 if r["configuration"] in wanted]  # fmt: skip
    samples = production.sample_rows(settings)
    produced += _text(samples, list(samples[0]))
    committed += read_csv(OUTPUT_DIR / "production_samples.csv")
    return produced, committed


def _mse_comparison() -> tuple[Rows, Rows]:
    from minsep.paper import mse_comparison

    families = ("poisson", "cyclic_poisson", "unamplified")
    settings = attrs.evolve(
        mse_comparison.QUICK,
        families=families,
        epsilons=(4.0,),
        epoch_lengths=(128,),
        bands=(16,),
    )
    engine = EngineOptions(seed=mse_comparison.DEFAULT_SEED, workers=1)
    records, _ = mse_comparison.run_grid(settings, engine)
    produced = _text(mse_comparison.row_dicts(records), mse_comparison.ROW_COLUMNS)
    committed = [
        row
        for row in read_csv(OUTPUT_DIR / "mse_comparison_rows.csv")
        if float(row["epsilon_target"]) == 4.0
        and row["epoch_length"] == "128"
        and row["family"] in families
        and (row["bands"] == "16" or row["family"] == "poisson")
    ]
    return produced, committed


def _multi_attribution() -> tuple[Rows, Rows]:
    from minsep.paper import multi_attribution

    summary = multi_attribution.synthetic_coauthorship(multi_attribution.QUICK.graph)
    rows = [{"quantity": k, "value": v} for k, v in summary.statistics.items()]
    committed = [
        r
        for r in read_csv(OUTPUT_DIR / "multi_attribution_graph.csv")
        if r["quantity"] in summary.statistics
    ]
    return _text(rows, multi_attribution.GRAPH_COLUMNS), committed


#: name -> (what reruns, the command that regenerates the committed outputs).
CHECKS: dict[str, tuple[Callable[[], tuple[Rows, Rows]], str]] = {
    "limits": (_limits, "python -m minsep.paper.limits --quick --output paper/outputs"),
    "production": (_production, "minsep paper production --quick --output paper/outputs"),
    "mse_comparison": (
        _mse_comparison,
        "minsep paper mse_comparison --quick --output paper/outputs",
    ),
    "multi_attribution": (
        _multi_attribution,
        "minsep paper multi_attribution --quick --output paper/outputs",
    ),
}


def stale(name: str) -> list[str]:
    """The differences between check ``name``'s rerun and the committed rows ([]: current)."""
    produced, committed = CHECKS[name][0]()
    return csv_differences(produced, committed)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checks; one line per script on stdout; exit status 1 when any is stale."""
    parser = argparse.ArgumentParser(
        prog="python -m minsep.paper.staleness", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--only", choices=sorted(CHECKS), action="append", help="repeatable")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.only or list(CHECKS):
        start = time.perf_counter()
        differences = stale(name)
        seconds = time.perf_counter() - start
        if differences:
            failed += 1
            shown = "; ".join(differences[:3])
            more = f" (+{len(differences) - 3} more)" if len(differences) > 3 else ""
            print(f"{name}: STALE in {seconds:.0f} s: {shown}{more}; regenerate: "
                  f"{CHECKS[name][1]}")  # fmt: skip
        else:
            print(f"{name}: current ({seconds:.0f} s)")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
