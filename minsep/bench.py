"""Throughput of the Monte Carlo loss models: ``python -m minsep.bench [--quick] [--json]``.

Measures every registered loss model (REMOVE direction: the costlier one, it also draws the
participation pattern) at the two sizes of issue 7 (n = 1024 with k = b = 8 bands, n = 7200
with k = b = 256), in sample·steps per second. The models are found through the registries:
each registered scheme proposes its ``compare`` rows at the case's bands
(``compare_variants``), or, when it declares options ``compare`` does not fill, is built with
the bench values of :data:`OPTION_VALUES` for the options it declares; its
``loss_model(strategy)`` on a banded Toeplitz strategy is then timed, unless a model with the
same ``draw`` and ``log_ratio`` was timed already (a scheme without a Monte Carlo model at that
size is listed as skipped, with the reason). Per model:

* ``fresh``: ``model.draw`` then one ``model.log_ratio`` (a new sigma-free transcript per
  repetition), in this process;
* ``log-ratio``: ``model.log_ratio`` alone on the kept transcript (re-evaluating a new sigma
  during calibration);
* ``fused``: ``model.privacy_losses`` at one sigma (what the engine calls per chunk: the draw and
  the evaluation fused block by block where the model supports it);
* ``share_of_normals``: the fresh rate per CPU-second over numpy's raw ``standard_normal``
  rate (the host backend's SFC64 generator, into a reused buffer), timed right next to each
  repetition of each model so that the figures share the load;
* ``share_of_b_min_sep``: the fresh rate per CPU-second over b-min-sep's, measured in the same
  run.

``normals`` (per case): numpy's ``standard_normal`` and the compiled SFC64 kernel the models
draw their normals with (:mod:`minsep.schemes.kernels.sfc64`: the same numbers, faster),
alternated, per second and per CPU-second. ``share_of_normals`` stays relative to numpy's rate,
the fixed yardstick (a model can therefore run faster than numpy draws its normals);
``share_of_compiled_normals`` is the fresh rate over the compiled kernel's.

``engine``: the Monte Carlo engine (``minsep.framework.montecarlo.sample``) on warm b-min-sep,
on 1 process and on a ``ProcessExecutor`` of ``--workers`` processes, and the scaling between
them.

Every figure is the best and the median of ``--repeats`` repetitions, by wall clock and per
CPU-second actually used (this process, plus the pool's workers read from /proc): on a shared
machine the wall-clock figures measure the load as much as the code, the CPU-second ones much
less so; the shares are ratios of medians per CPU-second. ``--quick`` runs CI-sized problems
(seconds). A line on stderr announces each model and engine measurement (``--no-progress``:
none); ``--skip-models A,B`` leaves models out, ``--time-limit SECONDS`` starts no further
measurement once that time has passed (the rest are listed as skipped). ``--backend cupy``
times the same models on a GPU (normals then come from cupy's generator; no process pool).
``--docs docs/performance.md`` writes the figures with the machine, date, commit and each case's
correlation plan into that file's generated section (:mod:`minsep.bench_docs`): measured figures
live there, not in code comments.

The parts: :mod:`~minsep.bench_models` (the sizes and the models found through the registries),
:mod:`~minsep.bench_timing` (timed calls, rates, normals), :mod:`~minsep.bench_throughput` (per
model and case), :mod:`~minsep.bench_engine` (engine and pool) and :mod:`~minsep.bench_report`
(table and JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minsep import bench_docs
from minsep.bench_engine import measure_engine
from minsep.bench_models import FULL, QUICK, Case, bench_models, build_model
from minsep.bench_report import jsonable, load_average, report
from minsep.bench_throughput import measure_case
from minsep.framework.backend import Backend, get_backend
from minsep.framework.workers import parse_workers, resolve_workers
from minsep.schemes.kernels.jit import KERNEL_SETS, array_path_note


def _parser() -> argparse.ArgumentParser:
    """The options of ``python -m minsep.bench``."""
    parser = argparse.ArgumentParser(
        prog="python -m minsep.bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="CI-sized problems (seconds)")
    parser.add_argument(
        "--repeats", type=int, default=None, help="repetitions (default 5; 2 quick)"
    )
    parser.add_argument(
        "--workers", type=parse_workers, default=2, help="process-pool size (1: no pool; auto)"
    )
    parser.add_argument("--no-engine", action="store_true", help="skip the engine / pool figures")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy"))
    parser.add_argument("--sigma", type=float, default=1.0, help="noise multiplier")
    parser.add_argument("--case", choices=("small", "large"), action="append",
                        help="only this case (repeatable)")  # fmt: skip
    parser.add_argument(
        "--models",
        default=None,
        help="comma-separated labels of the models to time (default: every registered one)",
    )
    parser.add_argument(
        "--skip-models",
        default="",
        help="comma-separated labels of models not to time (listed as skipped)",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds after which no further model is started (the rest are listed as "
        "skipped; the engine figures are skipped too)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the figures, machine, date and commit into PATH's generated section "
        "(docs/performance.md)",
    )
    parser.add_argument(
        "--require-kernels",
        choices=KERNEL_SETS,
        default=None,
        help="exit with status 3 (before measuring) unless this kernel set runs (a CI check)",
    )
    return parser


def _kernels_refused(args: argparse.Namespace, kernels: str, backend: Backend) -> bool:
    """With ``--require-kernels``: True (and a line on stderr) unless that kernel set runs."""
    if args.require_kernels is None or kernels == args.require_kernels:
        return False
    print(
        f"minsep.bench: kernel set {kernels!r} is in use, {args.require_kernels!r} was "
        f"required ({array_path_note() if kernels == 'array' else 'backend ' + backend.name})",
        file=sys.stderr,
    )
    return True


def _engine_rows(
    args: argparse.Namespace,
    cases: Sequence[Case],
    backend: Backend,
    repeats: int,
    deadline: float | None,
) -> list[dict[str, Any]]:
    """The engine figures of every case (none with ``--no-engine``; none started once the
    ``--time-limit`` deadline has passed)."""
    engine_rows = []
    workers = resolve_workers(args.workers) if backend.name == "numpy" else 1  # one GPU: no pool
    for case in [] if args.no_engine else cases:
        if deadline is not None and time.monotonic() > deadline:
            break
        if not args.no_progress:
            print(f"minsep.bench: [{case.name}] engine, 1 and {workers} processes ...",
                  file=sys.stderr, flush=True)  # fmt: skip
        engine_rows.append(measure_engine(case, args.backend, workers, repeats, args.sigma))
    return engine_rows


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m minsep.bench``."""
    args = _parser().parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 5)
    cases = list(QUICK if args.quick else FULL)
    if args.case:
        cases = [c for c, key in zip(cases, ("small", "large"), strict=True) if key in args.case]
    backend = get_backend(args.backend)
    kernels = build_model(cases[0]).kernel_set(backend)
    if _kernels_refused(args, kernels, backend):
        return 3
    only = args.models.split(",") if args.models else None
    load_start, measured_commit = load_average(), bench_docs.commit()  # the code measured
    skip = [label for label in args.skip_models.split(",") if label]
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    model_rows = [
        measure_case(case, backend, repeats, args.sigma, only,
                     skip=skip, deadline=deadline, progress=not args.no_progress)
        for case in cases
    ]  # fmt: skip
    engine_rows = _engine_rows(args, cases, backend, repeats, deadline)
    result = {
        "command": "python -m minsep.bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "backend": backend.name,
        "kernels": kernels,
        "repeats": repeats,
        "machine": bench_docs.machine(),
        "versions": bench_docs.versions(),
        "commit": measured_commit,
        "load_start": load_start,
        "load_end": load_average(),
        "cases": model_rows,
        "engine": engine_rows,
    }
    if args.json:
        print(json.dumps(jsonable(result), indent=2))
    else:
        quick = ", quick" if args.quick else ""
        print(f"minsep.bench: backend {backend.name}, kernels {kernels}, {os.cpu_count()} CPUs "
              f"visible, repeats {repeats}{quick}, load average {load_start} at start")  # fmt: skip
        print(report(model_rows, engine_rows))
        print(f"\nload average {result['load_end']} at end (other processes share these CPUs)")
    if args.docs is not None:
        bench_docs.update(args.docs, bench_docs.render(jsonable(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["FULL", "QUICK", "bench_models", "build_model", "main"]
