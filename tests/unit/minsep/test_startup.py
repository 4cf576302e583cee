"""Start-up cost: what importing minsep pulls in, numba's on-disk cache, warm pool workers."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from minsep.framework.montecarlo import EngineConfig, LocalExecutor, ProcessExecutor, sample
from minsep.framework.montecarlo.executors import _preload_modules, prepare_executor
from minsep.framework.montecarlo.warmup import WarmUp, start_workers
from tests.unit.montecarlo_toys import SubsampledGaussianToy

#: Modules that cost from a tenth to most of a second each to import and that neither importing
#: the registries and the engine nor ``minsep <command> --help`` needs.
HEAVY = (
    "scipy.stats",
    "scipy.optimize",
    "scipy.signal",
    "scipy.integrate",
    "scipy.special",
    "dp_accounting",
)

_PROBE = """
import json, sys
import minsep.schemes, minsep.strategies, minsep.accountants, minsep.framework.montecarlo
from minsep.framework.cli.main import build_parser
build_parser()
print(json.dumps(sorted(m for m in sys.modules if m in {heavy!r} or m == "numba")))
"""


def test_importing_the_package_and_building_the_cli_stays_light() -> None:
    """A fresh interpreter that imports every registry and builds the full CLI parser (what
    ``minsep epsilon --help`` does) must not import the heavy modules, nor numba."""
    code = _PROBE.format(heavy=set(HEAVY))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _project_modules() -> list[str]:
    names = []
    for package in ("minsep.schemes", "minsep.accountants"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    return names


def test_every_compiled_kernel_caches_to_disk() -> None:
    """Every numba kernel of the project has ``cache=True`` (a fresh worker or process loads
    it from numba's cache instead of compiling: under ``__pycache__`` next to the source, or
    numba's user-wide cache directory when the package folder is read-only, or
    ``NUMBA_CACHE_DIR``)."""
    numba = pytest.importorskip("numba")
    dispatchers: dict[str, Any] = {}
    for name in _project_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # optional dependencies (cupy, torch)
            continue
        for value in vars(module).values():
            if isinstance(value, numba.core.dispatcher.Dispatcher):
                dispatchers[f"{value.py_func.__module__}.{value.py_func.__name__}"] = value
    assert len(dispatchers) >= 5, sorted(dispatchers)
    uncached = [n for n, d in dispatchers.items() if type(d._cache).__name__ == "NullCache"]
    assert uncached == []


def test_forkserver_preloads_numba_and_the_scheme_plugins() -> None:
    pytest.importorskip("numba")
    modules = _preload_modules()
    assert {"numpy", "numba", "minsep.framework.montecarlo", "minsep.schemes"} <= set(modules)


@attrs.frozen
class _Touch:
    """A picklable warm-up that leaves a file named after the worker's pid."""

    folder: str

    def __call__(self) -> None:
        Path(self.folder, str(os.getpid())).touch()


def test_local_executor_has_nothing_to_prepare(tmp_path: Path) -> None:
    prepare_executor(LocalExecutor(), _Touch(str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


def test_process_pool_starts_warm_and_stays_bit_identical(tmp_path: Path) -> None:
    """``prepare`` starts the pool and runs the warm-up in the workers, in the background;
    the run on the warmed pool gives the bits of an in-process run."""
    executor = ProcessExecutor(max_workers=1, start_method="forkserver")
    from minsep.framework.montecarlo.executors import shutdown_pools

    shutdown_pools()  # a fresh pool, so that prepare has something to start
    prepare_executor(executor, _Touch(str(tmp_path)))
    model = SubsampledGaussianToy(rate=0.3)
    kwargs: dict[str, Any] = {"n_samples": 3000, "seed": 5, "checks": (0.5,)}
    pooled = sample(model, [0.9], config=EngineConfig(chunk_size=700, executor=executor), **kwargs)
    local = sample(model, [0.9], config=EngineConfig(chunk_size=700), **kwargs)
    assert pooled.to_dict() == local.to_dict()
    touched = [p.name for p in tmp_path.iterdir()]
    assert len(touched) == 1 and int(touched[0]) != os.getpid()


@attrs.frozen
class _SawWarmUp:
    """A picklable chunk task: whether a warm-up has left its file in ``folder``."""

    folder: str

    def __call__(self, index: int) -> bool:
        return any(Path(self.folder).iterdir())


def test_prepare_queues_in_the_background_and_chunks_wait_behind_the_warm_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``prepare`` returns while its warm-ups are still being queued (queueing waits for the
    forkserver), and ``map`` queues its chunks only after them."""
    import threading

    from minsep.framework.montecarlo import executors

    executors.shutdown_pools()
    gate = threading.Event()
    queue = executors._queue_warm_ups

    def held(*args: Any) -> None:
        gate.wait()
        queue(*args)

    monkeypatch.setattr(executors, "_queue_warm_ups", held)
    executor = ProcessExecutor(max_workers=1, start_method="forkserver")
    try:
        prepare_executor(executor, _Touch(str(tmp_path)))  # returns with the queueing held
        assert executors._STARTING[(1, "forkserver")].is_alive()
        gate.set()
        assert list(executor.map(_SawWarmUp(str(tmp_path)), [0, 1])) == [True, True]
        assert executors._STARTING == {}
    finally:
        gate.set()
        executors.shutdown_pools()


@attrs.frozen
class _Pid:
    """Picklable: the process id of whoever calls it."""

    def __call__(self) -> int:
        return os.getpid()


def test_call_on_worker_runs_on_a_pool_worker_behind_the_warm_up(tmp_path: Path) -> None:
    """The plan's probe goes to a worker of a pool (queued behind its warm-ups, so that it
    finds the kernels loaded) and runs here for an executor without workers."""
    from minsep.framework.montecarlo import executors

    assert executors.call_on_worker(LocalExecutor(), _Pid()) == os.getpid()
    executors.shutdown_pools()
    executor = ProcessExecutor(max_workers=1, start_method="forkserver")
    try:
        prepare_executor(executor, _Touch(str(tmp_path)))
        pid = executors.call_on_worker(executor, _Pid())
        assert pid != os.getpid()
        assert [p.name for p in tmp_path.iterdir()] == [str(pid)]  # warmed first
    finally:
        executors.shutdown_pools()


def test_warm_up_pickles_and_runs_in_process() -> None:
    import pickle

    warm = pickle.loads(pickle.dumps(WarmUp(SubsampledGaussianToy(rate=0.3), 1.0, "numpy")))
    assert warm() is None
    start_workers(warm.model, LocalExecutor(), "numpy")  # nothing to start, returns at once


@pytest.mark.slow
def test_startup_report_measures_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    from minsep import startup

    assert startup.main(["--repeats", "1", "--workers", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    for key in ("import_cpu", "help_cpu", "parent_cpu", "forkserver_cpu", "worker_cpu"):
        assert figures[key] > 0.0, key


@attrs.frozen
class _MallocSetting:
    """Picklable: the worker's glibc malloc variables."""

    def __call__(self, index: int) -> tuple[str | None, str | None]:
        return os.environ.get("MALLOC_MMAP_THRESHOLD_"), os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_pool_workers_get_the_malloc_settings() -> None:
    executor = ProcessExecutor(max_workers=1, start_method="forkserver")
    [setting] = list(executor.map(_MallocSetting(), [0]))
    assert None not in setting  # ours, or the user's where the forkserver started with them


def test_the_forkserver_alone_gets_the_malloc_settings_and_user_values_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import multiprocessing.forkserver

    from minsep.framework.montecarlo import executors

    seen: dict[str, str] = {}
    monkeypatch.setattr(
        multiprocessing.forkserver, "ensure_running", lambda: seen.update(os.environ)
    )
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    before = dict(os.environ)
    executors._start_forkserver()
    assert seen["MALLOC_MMAP_THRESHOLD_"] == executors.WORKER_MALLOC["MALLOC_MMAP_THRESHOLD_"]
    assert seen["MALLOC_TRIM_THRESHOLD_"] == "12345"
    assert dict(os.environ) == before
