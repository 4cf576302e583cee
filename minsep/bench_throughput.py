"""Per-model throughput of the bench (:mod:`minsep.bench`): fresh draws, log-ratio
re-evaluation and the fused path of one model, and every model of one case with its shares of
numpy's normals, the compiled normals and b-min-sep."""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from minsep.bench_models import REFERENCE, Case, bench_models, catalan_coefficients
from minsep.bench_timing import Figure, measure_normals, normal_draws, timed
from minsep.framework.backend import Backend
from minsep.framework.interfaces import Direction, PrivacyLossModel


def measure_model(
    case: Case, model: PrivacyLossModel, backend: Backend, repeats: int, sigma: float
) -> dict[str, Any]:
    """fresh / log-ratio / normals figures of one model at one case (in this process)."""
    work = float(case.samples * case.n_steps)
    normals = normal_draws(case.samples * case.n_steps, backend, seed=99)

    def draw(seed: int) -> Any:
        rng = backend.rng(np.random.SeedSequence(seed))
        return model.draw(case.samples, Direction.REMOVE, rng, backend)

    warm = draw(0)  # compiles kernels, warms caches
    model.log_ratio(warm, sigma)
    del warm
    wall: dict[str, list[float]] = {"normals": [], "fresh": [], "log_ratio": [], "fused": []}
    cpu: dict[str, list[float]] = {"normals": [], "fresh": [], "log_ratio": [], "fused": []}

    def fused(seed: int) -> Any:
        rng = backend.rng(np.random.SeedSequence(seed))
        return model.privacy_losses(case.samples, Direction.REMOVE, rng, backend, [sigma])

    for r in range(repeats):
        seconds, spent, _ = timed(normals, backend)
        wall["normals"].append(seconds)
        cpu["normals"].append(spent)
        seconds, spent, kept = timed(functools.partial(draw, r + 1), backend)
        more, more_cpu, _ = timed(functools.partial(model.log_ratio, kept, sigma), backend)
        wall["fresh"].append(seconds + more)
        cpu["fresh"].append(spent + more_cpu)
        # a new sigma on the kept transcript (what a calibration sweep does)
        again = functools.partial(model.log_ratio, kept, 1.1 * sigma)
        seconds, spent, _ = timed(again, backend)
        wall["log_ratio"].append(seconds)
        cpu["log_ratio"].append(spent)
        del kept
        seconds, spent, _ = timed(functools.partial(fused, r + 1), backend)
        wall["fused"].append(seconds)
        cpu["fused"].append(spent)
    row: dict[str, Any] = {
        "case": case.name,
        "model": type(model).__name__,
        "kernels": model.kernel_set(backend),
        "samples": case.samples,
    }
    for key in wall:
        row[key] = Figure.of(work, wall[key])
        row[f"{key}_cpu"] = Figure.of(work, cpu[key])
    row["ratio_best"] = min(wall["log_ratio"]) / min(wall["fresh"])
    row["ratio_median"] = statistics.median(wall["log_ratio"]) / statistics.median(wall["fresh"])
    row["ratio_cpu"] = statistics.median(cpu["log_ratio"]) / statistics.median(cpu["fresh"])
    row["share_of_normals"] = statistics.median(cpu["normals"]) / statistics.median(cpu["fresh"])
    row["fused_share_of_normals"] = statistics.median(cpu["normals"]) / statistics.median(
        cpu["fused"]
    )
    bytes_of = getattr(model, "transcript_bytes", None)
    if bytes_of is not None:
        row["transcript_bytes"] = bytes_of(case.samples, Direction.REMOVE, backend)
    return row


def measure_case(
    case: Case,
    backend: Backend,
    repeats: int,
    sigma: float,
    only: Sequence[str] | None = None,
    *,
    skip: Sequence[str] = (),
    deadline: float | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Every registered model at ``case`` (or those labelled in ``only``, less those in
    ``skip``), with each one's share of the reference model's rate per CPU-second (medians,
    measured in this run). Once ``time.monotonic()`` passes ``deadline`` the models not yet
    measured are listed as skipped; ``progress`` prints a line on stderr per model."""
    entries = [e for e in bench_models(case) if only is None or e.label in only]
    rows: dict[str, dict[str, Any]] = {}
    skipped = {}
    for number, entry in enumerate(entries, 1):
        if entry.model is None:
            skipped[entry.label] = entry.reason
        elif entry.label in skip:
            skipped[entry.label] = "--skip-models"
        elif deadline is not None and time.monotonic() > deadline:
            skipped[entry.label] = "--time-limit reached"
        else:
            if progress:
                print(f"minsep.bench: [{case.name}] model {number}/{len(entries)} "
                      f"{entry.label} ...", file=sys.stderr, flush=True)  # fmt: skip
            rows[entry.label] = measure_model(case, entry.model, backend, repeats, sigma)
    reference = rows.get(REFERENCE)
    for row in rows.values():
        if reference is not None:
            row["share_of_b_min_sep"] = row["fresh_cpu"].median / reference["fresh_cpu"].median
            row["log_ratio_share_of_b_min_sep"] = (
                row["log_ratio_cpu"].median / reference["log_ratio_cpu"].median
            )
    normals = measure_normals(case, backend, repeats) if backend.name != "cupy" else {}
    if normals:
        for row in rows.values():
            row["share_of_compiled_normals"] = (
                row["fresh_cpu"].median / normals["compiled_cpu"].median
            )
    return {"case": case.name, "n_steps": case.n_steps, "bands": case.bands,
            "samples": case.samples, "models": rows, "skipped": skipped,
            "normals": normals,
            "correlation": correlation_of(case) if backend.name == "numpy" else None}  # fmt: skip


def correlation_of(case: Case) -> str:
    """How the host kernels correlate the noise at ``case`` (this machine's plan, as results
    record it): method, FFT length and engine (a GPU backend records None instead)."""
    from minsep.schemes.kernels.blocks import effective_coefficients
    from minsep.schemes.kernels.fused import noise_plan

    bands = int(effective_coefficients(catalan_coefficients(case.bands), case.n_steps).size)
    plan = noise_plan(case.n_steps, bands)
    if plan.method == "direct":
        return "direct sums"
    return f"{plan.method}, FFT length {plan.length}, {plan.engine}"


__all__ = ["correlation_of", "measure_case", "measure_model"]
