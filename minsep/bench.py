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
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep import bench_docs
from minsep.framework.backend import Backend, get_backend
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Direction, PrivacyLossModel, SamplingScheme
from minsep.framework.workers import parse_workers, resolve_workers
from minsep.schemes.kernels.jit import KERNEL_SETS, array_path_note
from minsep.schemes.losses import BMinSepLossModel


@attrs.frozen
class Case:
    """One benchmark size: n steps, k = b bands, rate p0, samples per repetition."""

    name: str
    n_steps: int
    bands: int
    samples: int
    engine_samples: int
    chunk_size: int

    @property
    def rate(self) -> float:
        """p0 = 1 / (2 b): half the largest rate b-min-sep allows."""
        return 1.0 / (2 * self.bands)


FULL = (
    Case("n=1024, k=b=8", 1024, 8, samples=16384, engine_samples=131072, chunk_size=8192),
    Case("n=7200, k=b=256", 7200, 256, samples=2048, engine_samples=16384, chunk_size=2048),
)
QUICK = (
    Case("n=1024, k=b=8", 1024, 8, samples=1024, engine_samples=8192, chunk_size=1024),
    Case("n=7200, k=b=256", 7200, 256, samples=128, engine_samples=1024, chunk_size=128),
)


def catalan_coefficients(bands: int) -> tuple[float, ...]:
    """``C(2j, j) / 4^j`` normalised to unit l2 norm (the usual BandMF starting point)."""
    values = [1.0]
    for j in range(1, bands):
        values.append(values[-1] * (2 * j - 1) / (2 * j))
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


def build_model(case: Case) -> BMinSepLossModel:
    """Warm-start b-min-sep with b = k at rate p0 = 1/(2b) (the reference of the shares)."""
    b, p0 = case.bands, case.rate
    return BMinSepLossModel(
        coefficients=catalan_coefficients(case.bands),
        n_steps=case.n_steps,
        min_sep=b,
        probability=p0 / (1.0 - p0 * (b - 1)),
        warm_start=True,
    )


#: The name of the reference model (its rate is the denominator of ``share_of_b_min_sep``).
REFERENCE = "b_min_sep"
#: Expected batch size of the truncated models' public dataset (|D| = BATCH / p0).
BATCH = 64


def option_values(case: Case) -> dict[str, Any]:
    """The bench value of every scheme option ``compare`` does not fill, by option name: b = k,
    k_u = 4 examples per user with holding-set probability p0, |D| = 64 / p0 (expected batch
    64) truncated at B_max = 80 (about two standard deviations above it)."""
    return {
        "min_sep": case.bands,
        "max_user_examples": 4,
        "probability": case.rate,
        "dataset_size": round(BATCH / case.rate),
        "max_batch_size": BATCH + 16,
        "warm_start": True,
    }


@attrs.frozen
class Entry:
    """A loss model to time (``model``), or a registered scheme skipped with ``reason``."""

    label: str
    model: PrivacyLossModel | None
    reason: str = ""


def _declared(cls: type[SamplingScheme]) -> set[str]:
    """The options ``cls.from_rate`` takes: its own and, for a wrapper with a ``base`` option,
    those of the default base."""
    from minsep.framework.registries import schemes

    names = {p.name for p in cls.parameters()}
    for parameter in cls.parameters():
        if parameter.name == "base" and isinstance(parameter.default, str):
            names |= {p.name for p in schemes.get(parameter.default).parameters()}
    return names


def _option_sets(cls: type[SamplingScheme], case: Case) -> list[tuple[str, dict[str, Any]]]:
    """``(label, options)`` to try for one registered scheme at ``case``: its Monte Carlo rows
    of ``compare`` at the case's bands, else the bench values of the options it declares."""
    from minsep.framework.parameters import CompareContext

    name = cls.registered_name()
    context = CompareContext(
        n_steps=case.n_steps,
        rate=case.rate,
        bands=(case.bands,),
        min_seps={case.bands: (case.bands,)},
    )
    rows = [
        (variant.family or name, dict(variant.options))
        for variant in cls.compare_variants(context)
        if variant.bands == case.bands and variant.accountant in (None, "monte_carlo")
    ]
    if rows:
        return rows
    values = option_values(case)
    return [(name, {k: v for k, v in values.items() if k in _declared(cls)})]


def _loss_model(scheme: SamplingScheme, strategy: Any) -> PrivacyLossModel:
    """``scheme.loss_model(strategy)``, silencing only the warning of conjectured models (not
    through :mod:`minsep.testing`, which needs pytest: the bench runs on a user's install)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*conjecture", category=UserWarning)
        return scheme.loss_model(strategy)


#: The methods that make a loss model what it is: two models sharing all of them are benched once
#: (the families on the one loss-model base share ``draw`` and ``log_ratio``).
_MODEL_HOOKS = ("draw", "log_ratio", "participation_draw", "ratio")


def bench_models(case: Case) -> list[Entry]:
    """Every registered scheme's loss model at ``case`` (banded Toeplitz strategy with
    :func:`catalan_coefficients`), one per distinct set of :data:`_MODEL_HOOKS`, in registry
    order; schemes without one at this size come back with the reason."""
    from minsep.framework.registries import schemes, strategies

    banded: Any = strategies.get("banded_toeplitz")
    strategy = banded(coefficients=catalan_coefficients(case.bands))
    entries: list[Entry] = []
    seen: set[tuple[Any, ...]] = set()
    for name in schemes.names():
        cls = schemes.get(name)
        for label, options in _option_sets(cls, case):
            try:
                scheme = cls.from_rate(case.n_steps, case.rate, **options)
                model = _loss_model(scheme, strategy)
            except (ConfigurationError, NotAccountableError) as exc:
                entries.append(Entry(label, None, str(exc).splitlines()[0]))
                continue
            key = tuple(getattr(type(model), hook, None) for hook in _MODEL_HOOKS)
            if key in seen:
                continue
            seen.add(key)
            entries.append(Entry(label, model))
    return entries


def _sync(backend: Backend) -> None:
    if backend.name == "cupy":  # pragma: no cover - needs a GPU
        import cupy

        cupy.cuda.Device().synchronize()


def _timed(fn: Callable[[], Any], backend: Backend) -> tuple[float, float, Any]:
    """``(wall seconds, CPU seconds of this process, result)``."""
    _sync(backend)
    cpu = time.process_time()
    start = time.perf_counter()
    result = fn()
    _sync(backend)
    return time.perf_counter() - start, time.process_time() - cpu, result


def _normals(
    elements: int, backend: Backend, seed: int, compiled: bool = False
) -> Callable[[], Any]:
    """Draw ``elements`` standard normals: into a reused 2^16 buffer on the host (by numpy's
    ``standard_normal``, or with ``compiled`` by the SFC64 kernel the models draw with:
    :func:`minsep.schemes.kernels.sfc64.fill`, the same numbers), one array on a GPU."""
    if backend.name == "cupy":  # pragma: no cover - needs a GPU
        source = backend.rng(np.random.SeedSequence(seed))
        return lambda: source.standard_normal((elements,))
    from minsep.schemes.kernels import sfc64

    generator = np.random.Generator(np.random.SFC64(seed))
    buffer = np.empty(1 << 16)

    def draw() -> None:
        left = elements
        while left > 0:
            size = min(left, buffer.size)
            if compiled:
                sfc64.fill(generator, "standard_normal", buffer[:size])
            else:
                generator.standard_normal(out=buffer[:size])
            left -= size

    return draw


def measure_normals(case: Case, backend: Backend, repeats: int) -> dict[str, Figure]:
    """Normals per second (wall, and per CPU-second) of numpy's ``standard_normal`` and of the
    compiled SFC64 kernel, alternated, ``case.samples * n`` per repetition."""
    work = float(case.samples * case.n_steps)
    seconds: dict[str, list[float]] = {"numpy": [], "compiled": []}
    spent: dict[str, list[float]] = {"numpy": [], "compiled": []}
    draws = {
        "numpy": _normals(case.samples * case.n_steps, backend, seed=98),
        "compiled": _normals(case.samples * case.n_steps, backend, seed=98, compiled=True),
    }
    draws["compiled"]()  # compiles or loads the kernel
    for _ in range(repeats):
        for key, draw in draws.items():
            wall, cpu, _ = _timed(draw, backend)
            seconds[key].append(wall)
            spent[key].append(cpu)
    return {
        **{key: Figure.of(work, values) for key, values in seconds.items()},
        **{f"{key}_cpu": Figure.of(work, values) for key, values in spent.items()},
    }


@attrs.frozen
class Figure:
    """Best and median of a rate (sample·steps or normals per second)."""

    best: float
    median: float

    @classmethod
    def of(cls, work: float, seconds: Sequence[float]) -> Figure:
        return cls(work / min(seconds), work / statistics.median(seconds))


def measure_model(
    case: Case, model: PrivacyLossModel, backend: Backend, repeats: int, sigma: float
) -> dict[str, Any]:
    """fresh / log-ratio / normals figures of one model at one case (in this process)."""
    work = float(case.samples * case.n_steps)
    normals = _normals(case.samples * case.n_steps, backend, seed=99)

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
        seconds, spent, _ = _timed(normals, backend)
        wall["normals"].append(seconds)
        cpu["normals"].append(spent)
        seconds, spent, kept = _timed(functools.partial(draw, r + 1), backend)
        more, more_cpu, _ = _timed(functools.partial(model.log_ratio, kept, sigma), backend)
        wall["fresh"].append(seconds + more)
        cpu["fresh"].append(spent + more_cpu)
        # a new sigma on the kept transcript (what a calibration sweep does)
        again = functools.partial(model.log_ratio, kept, 1.1 * sigma)
        seconds, spent, _ = _timed(again, backend)
        wall["log_ratio"].append(seconds)
        cpu["log_ratio"].append(spent)
        del kept
        seconds, spent, _ = _timed(functools.partial(fused, r + 1), backend)
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


def measure_engine(
    case: Case, backend_name: str, workers: int, repeats: int, sigma: float
) -> dict[str, Any]:
    """Engine throughput (REMOVE only, histogram on) with 1 process and with a process pool."""
    from minsep.framework.montecarlo import EngineConfig, LocalExecutor, ProcessExecutor, sample

    model = build_model(case)
    work = float(case.engine_samples * case.n_steps)
    figures: dict[str, Any] = {"case": case.name, "workers": workers}
    executors: list[tuple[str, Any]] = [("local", LocalExecutor())]
    if workers > 1:
        executors.append(("pool", ProcessExecutor(max_workers=workers)))
    for label, executor in executors:
        config = EngineConfig(
            chunk_size=case.chunk_size, backend=backend_name, executor=executor, progress=False
        )

        def run(seed: int, config: EngineConfig = config, size: int = case.engine_samples) -> None:
            sample(
                model,
                [sigma],
                n_samples=size,
                seed=seed,
                directions=(Direction.REMOVE,),
                checks=(1.0,),
                config=config,
            )

        run(0, size=case.chunk_size * max(1, workers))  # start workers, compile kernels
        device = get_backend(backend_name)
        seconds, cpu = [], []
        for r in range(repeats):
            before = _cpu_seconds(executor)
            seconds.append(_timed(functools.partial(run, r + 1), device)[0])
            after = _cpu_seconds(executor)
            if before is not None and after is not None:
                cpu.append(after - before)
        figures[label] = Figure.of(work, seconds)
        if cpu:
            figures[f"{label}_cpu"] = Figure.of(work, cpu)  # sample·steps per CPU-second
    if workers > 1:
        figures["capacity"] = parallel_capacity(executors[1][1], repeats)
        figures["scaling_best"] = figures["pool"].best / figures["local"].best
        figures["scaling_median"] = figures["pool"].median / figures["local"].median
        if "pool_cpu" in figures and "local_cpu" in figures:
            # CPU efficiency of the pool (1: no overhead); times workers = scaling on idle cores
            figures["efficiency"] = figures["pool_cpu"].median / figures["local_cpu"].median
    return figures


@attrs.frozen
class _NormalsTask:
    """A picklable CPU-bound task (numpy normals) for :func:`parallel_capacity`."""

    elements: int

    def __call__(self, index: int) -> int:
        generator = np.random.Generator(np.random.SFC64(index))
        buffer = np.empty(1 << 16)
        for _ in range(max(1, self.elements // buffer.size)):
            generator.standard_normal(out=buffer)
        return index


def parallel_capacity(executor: Any, repeats: int, elements: int = 1 << 24) -> float:
    """How many cores the pool can use right now: ``workers * t(1 task) / t(workers tasks)``
    for a plain CPU-bound task on the same pool (``workers`` on an idle machine, less when
    other processes hold cores). The engine's wall scaling is judged against it."""
    task = _NormalsTask(elements)
    workers = int(executor.workers)
    list(executor.map(task, range(workers)))  # every worker up
    one, many = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        list(executor.map(task, [0]))
        one.append(time.perf_counter() - start)
        start = time.perf_counter()
        list(executor.map(task, range(workers)))
        many.append(time.perf_counter() - start)
    return workers * statistics.median(one) / statistics.median(many)


def _cpu_seconds(executor: Any) -> float | None:
    """CPU seconds used so far by this process plus, for a process pool, its workers (read
    from /proc on Linux; None where unavailable). Lets the scaling be judged on a shared
    machine: wall-clock scaling needs idle cores, CPU cost per sample·step does not."""
    total = time.process_time()
    if getattr(executor, "workers", 1) == 1:
        return total
    try:
        from minsep.framework.montecarlo.executors import _default_start_method, _pool

        pool = _pool(executor.max_workers, executor.start_method or _default_start_method())
        tick = os.sysconf("SC_CLK_TCK")
        for pid in list(pool._processes or {}):
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    except (ImportError, AttributeError, OSError, ValueError, IndexError):
        return None
    return total


def _rate(figure: Figure) -> str:
    return f"{figure.best:9.3g} best  {figure.median:9.3g} median"


def report(case_rows: list[dict[str, Any]], engine_rows: list[dict[str, Any]]) -> str:
    """The human-readable table."""
    lines = ["every registered loss model, REMOVE; sample·steps per second (normals: per second)"]
    for case in case_rows:
        lines.append(f"\n[{case['case']}]  {case['samples']} samples per repetition")
        lines.append(
            f"  {'model':<28} {'kernels':<7} {'fresh/CPU-s':>11} {'log-ratio':>10} "
            f"{'x normals':>9} {'x compiled':>10} {'x b-min-sep':>11} {'fused x normals':>15}"
        )
        for label, row in case["models"].items():
            share = row.get("share_of_b_min_sep", math.nan)
            compiled = row.get("share_of_compiled_normals", math.nan)
            lines.append(
                f"  {label:<28} {row['kernels']:<7} {row['fresh_cpu'].median:11.3g} "
                f"{row['log_ratio_cpu'].median:10.3g} {row['share_of_normals']:9.2f} "
                f"{compiled:10.2f} {share:11.2f} {row['fused_share_of_normals']:15.2f}"
            )
        for label, reason in case["skipped"].items():
            lines.append(f"  {label:<28} skipped: {reason}")
        normals = case.get("normals")
        if normals:
            numpy_rate, compiled = normals["numpy_cpu"].median, normals["compiled_cpu"].median
            lines.append(
                f"  normals per CPU-second: numpy {numpy_rate:.3g}, compiled SFC64 (what the "
                f"models draw with, same numbers) {compiled:.3g} = {compiled / numpy_rate:.2f}x"
            )
        if case.get("correlation"):
            lines.append(f"  correlation: {case['correlation']}")
    for row in engine_rows:
        lines.append(f"\n[{row['case']}]  engine, warm b-min-sep, REMOVE only")
        lines.append(f"  1 process          {_rate(row['local'])}")
        if "local_cpu" in row:
            lines.append(f"    per CPU-second   {_rate(row['local_cpu'])}")
        if "pool" in row:
            lines.append(f"  {row['workers']} processes        {_rate(row['pool'])}")
            if "pool_cpu" in row:
                lines.append(f"    per CPU-second   {_rate(row['pool_cpu'])}")
            lines.append(
                f"  wall scaling       {row['scaling_best']:.2f} best  "
                f"{row['scaling_median']:.2f} median (of {row['workers']}; needs idle cores)"
            )
            lines.append(
                f"  control            {row['capacity']:.2f} cores usable now by the pool "
                "(numpy normals on the same workers)"
            )
            if "efficiency" in row:
                lines.append(
                    f"  CPU efficiency     {row['efficiency']:.2f} (pool vs 1 process, per "
                    f"CPU-second; x {row['workers']} = {row['workers'] * row['efficiency']:.2f}"
                    " on idle cores)"
                )
    lines.append(
        "\nfresh/CPU-s, log-ratio: medians per CPU-second; x normals, x compiled, x b-min-sep: "
        "the fresh rate over numpy's normal rate, the compiled SFC64 rate and b-min-sep's, all "
        "measured in this run"
    )
    return "\n".join(lines)


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover - platforms without it
        return "n/a"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Figure):
        return attrs.asdict(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m minsep.bench``."""
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
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 5)
    cases = list(QUICK if args.quick else FULL)
    if args.case:
        cases = [c for c, key in zip(cases, ("small", "large"), strict=True) if key in args.case]
    backend = get_backend(args.backend)
    kernels = build_model(cases[0]).kernel_set(backend)
    if args.require_kernels is not None and kernels != args.require_kernels:
        print(
            f"minsep.bench: kernel set {kernels!r} is in use, {args.require_kernels!r} was "
            f"required ({array_path_note() if kernels == 'array' else 'backend ' + backend.name})",
            file=sys.stderr,
        )
        return 3
    only = args.models.split(",") if args.models else None
    load_start, measured_commit = _load(), bench_docs.commit()  # the code measured
    skip = [label for label in args.skip_models.split(",") if label]
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    progress = not args.no_progress
    model_rows = [
        measure_case(case, backend, repeats, args.sigma, only,
                     skip=skip, deadline=deadline, progress=progress)
        for case in cases
    ]  # fmt: skip
    engine_rows = []
    workers = resolve_workers(args.workers) if backend.name == "numpy" else 1  # one GPU: no pool
    for case in [] if args.no_engine else cases:
        if deadline is not None and time.monotonic() > deadline:
            break
        if progress:
            print(f"minsep.bench: [{case.name}] engine, 1 and {workers} processes ...",
                  file=sys.stderr, flush=True)  # fmt: skip
        engine_rows.append(measure_engine(case, args.backend, workers, repeats, args.sigma))
    result = {
        "command": "python -m minsep.bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "backend": backend.name,
        "kernels": kernels,
        "repeats": repeats,
        "machine": bench_docs.machine(),
        "versions": bench_docs.versions(),
        "commit": measured_commit,
        "load_start": load_start,
        "load_end": _load(),
        "cases": model_rows,
        "engine": engine_rows,
    }
    if args.json:
        print(json.dumps(_jsonable(result), indent=2))
    else:
        quick = ", quick" if args.quick else ""
        print(f"minsep.bench: backend {backend.name}, kernels {kernels}, {os.cpu_count()} CPUs "
              f"visible, repeats {repeats}{quick}, load average {load_start} at start")  # fmt: skip
        print(report(model_rows, engine_rows))
        print(f"\nload average {result['load_end']} at end (other processes share these CPUs)")
    if args.docs is not None:
        bench_docs.update(args.docs, bench_docs.render(_jsonable(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
