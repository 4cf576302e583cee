"""The Dask executor: bit-identical to the local executor whatever the workers, in-order
yielding with a bounded window, retries, and a worker killed mid-run.

One LocalCluster of 2 worker processes (the CI machine has 2 cores) is started for the module
and used through its address (the ``scheduler=`` path); the in-process LocalCluster path
(``scheduler=None``) starts its own once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.errors import ConfigurationError
from minsep.framework.montecarlo import (
    BOTH,
    PILOT_STREAM,
    Checkpoint,
    ChunkTask,
    DaskExecutor,
    DaskUnavailableError,
    EngineConfig,
    LocalExecutor,
    ProcessExecutor,
    SweepTally,
    get_executor,
    sample_chunks,
    shutdown_clusters,
)
from minsep.framework.montecarlo import dask_executor as dask_module
from minsep.framework.registries import accountants
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme, ToyStrategy

distributed = pytest.importorskip("distributed")

MODEL = SubsampledGaussianToy(rate=0.3)


def _task(n_samples: int = 24_500, chunk_size: int = 1000) -> ChunkTask:
    return ChunkTask(MODEL, (0.8, 1.3), n_samples, 7, PILOT_STREAM, (0.3, 1.0), BOTH, chunk_size)


def _local(task: Any) -> SweepTally:
    return sample_chunks(task, range(task.n_chunks), EngineConfig(chunk_size=1000))


def _run(task: Any, executor: Any) -> SweepTally:
    config = EngineConfig(chunk_size=1000, executor=executor, progress=False)
    return sample_chunks(task, range(task.n_chunks), config)


@attrs.frozen
class SlowTask:
    """A chunk task that takes at least ``delay`` seconds (so a kill lands mid-run)."""

    inner: ChunkTask
    delay: float

    @property
    def n_chunks(self) -> int:
        return self.inner.n_chunks

    def chunk_length(self, index: int) -> int:
        return self.inner.chunk_length(index)

    def empty(self) -> SweepTally:
        return self.inner.empty()

    @property
    def directions(self) -> Any:
        return self.inner.directions

    def __call__(self, index: int) -> SweepTally:
        time.sleep(self.delay)
        return self.inner(index)


@attrs.frozen
class TracedTask(SlowTask):
    """Leaves ``start-<chunk>-<pid>`` and ``end-<chunk>-<pid>`` files in ``folder``."""

    folder: str = ""

    def __call__(self, index: int) -> SweepTally:
        Path(self.folder, f"start-{index}-{os.getpid()}").touch()
        result = super().__call__(index)
        Path(self.folder, f"end-{index}-{os.getpid()}").touch()
        return result


@attrs.frozen
class FlakyTask(SlowTask):
    """Raises the first time chunk ``fail_at`` runs (the marker file is shared by workers),
    or every time with ``always``."""

    marker: str = ""
    fail_at: int = 3
    always: bool = False

    def __call__(self, index: int) -> SweepTally:
        if index == self.fail_at and (self.always or not os.path.exists(self.marker)):
            Path(self.marker).touch()
            raise RuntimeError(f"flaky chunk {index}")
        return self.inner(index)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A 2-worker LocalCluster (processes) reached through its address."""
    import logging

    local = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.ERROR,
    )
    yield local
    shutdown_clusters()
    local.close()


def _executor(cluster: Any, **options: Any) -> DaskExecutor:
    return DaskExecutor(scheduler=cluster.scheduler_address, **options)


def test_bit_identical_to_local_for_any_window(cluster: Any) -> None:
    task = _task()
    reference = _local(task)
    for ahead in (1, 3):
        result = _run(task, _executor(cluster, ahead=ahead))
        assert result.to_dict() == reference.to_dict()
    assert _executor(cluster).workers == 2


def test_results_come_in_index_order_despite_out_of_order_completion(cluster: Any) -> None:
    executor = _executor(cluster, ahead=4)
    indices = [5, 0, 3, 1, 4, 2]
    results = list(executor.map(_SlowSquare(), indices))
    assert results == [i * i for i in indices]
    assert list(executor.map(_SlowSquare(), [])) == []


@attrs.frozen
class _SlowSquare:
    """Even indices finish late, so completions arrive out of order."""

    def __call__(self, index: int) -> int:
        time.sleep(0.2 if index % 2 == 0 else 0.0)
        return index * index


def _kill_mid_chunk(pid: int, folder: Path, patience: float = 300.0) -> None:
    """SIGKILL ``pid`` once it is computing a chunk (its start file is there, its end file not
    yet), instead of at a fixed point of the run: how fast the machine gets there does not
    decide whether the kill lands mid-chunk. ``patience`` only guards against a hang."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        names = {p.name for p in folder.iterdir()}
        if any(
            name.startswith("start-")
            and name.endswith(f"-{pid}")
            and name.replace("start-", "end-", 1) not in names
            for name in names
        ):
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.002)
    pytest.fail(f"worker {pid} never started a chunk")


@pytest.mark.slow  # fast representative: test_bit_identical_to_local_for_any_window
def test_a_killed_worker_does_not_change_the_result(cluster: Any, tmp_path: Path) -> None:
    """SIGKILL one of the 2 worker processes mid-run: the scheduler reruns the chunk it was
    computing on the other (or the restarted) worker, and the merged tally is bit-identical."""
    task = _task(n_samples=20_000)
    reference = _local(task)
    executor = _executor(cluster, ahead=2)
    client = executor.client()
    victim = sorted(client.run(os.getpid).values())[0]
    traced = TracedTask(task, 0.5, folder=str(tmp_path))
    total = task.empty()
    for n, result in enumerate(executor.map(traced, range(task.n_chunks))):
        total.merge(result)
        if n == 3:
            _kill_mid_chunk(victim, tmp_path)
    assert total.to_dict() == reference.to_dict()
    assert victim not in client.run(os.getpid).values()
    files = {p.name for p in tmp_path.iterdir()}
    interrupted = [
        i for i in range(task.n_chunks)
        if f"start-{i}-{victim}" in files and f"end-{i}-{victim}" not in files
    ]  # fmt: skip
    assert interrupted, "the kill should land while the victim computes a chunk"
    for i in interrupted:  # ... which another worker then computed
        assert any(name.startswith(f"end-{i}-") for name in files)


def test_a_failing_chunk_is_retried(cluster: Any, tmp_path: Path) -> None:
    task = _task(n_samples=8000)
    flaky = FlakyTask(task, 0.0, marker=str(tmp_path / "failed-once"))
    result = _run(flaky, _executor(cluster, retries=2))
    assert (tmp_path / "failed-once").exists()
    assert result.to_dict() == _local(task).to_dict()


def test_a_chunk_failing_every_time_reaches_the_caller(cluster: Any, tmp_path: Path) -> None:
    task = _task(n_samples=8000)
    broken = FlakyTask(task, 0.0, marker=str(tmp_path / "m"), always=True)
    with pytest.raises(RuntimeError, match="flaky chunk 3"):
        _run(broken, _executor(cluster, retries=1))
    # the cluster is still usable afterwards (pending futures were cancelled)
    assert _run(task, _executor(cluster)).to_dict() == _local(task).to_dict()


@pytest.mark.slow  # fast representative: test_bit_identical_to_local_for_any_window
def test_a_crashed_client_resumes_from_its_checkpoint_on_dask(cluster: Any, tmp_path: Path) -> None:
    task = _task()
    path = tmp_path / "run.ckpt"
    config = EngineConfig(
        chunk_size=1000,
        executor=_executor(cluster, ahead=3),
        checkpoint=Checkpoint(path, every_chunks=1),
        progress=False,
    )
    merged = 0
    original = SweepTally.merge

    def crash_after_ten(self: SweepTally, other: SweepTally) -> None:
        nonlocal merged
        if merged == 10:
            raise KeyboardInterrupt("client killed")
        merged += 1
        original(self, other)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SweepTally, "merge", crash_after_ten)
        with pytest.raises(KeyboardInterrupt):
            sample_chunks(task, range(task.n_chunks), config, stage="s")
    assert Checkpoint(path).read()["s"]["chunks_done"] == 10
    resumed = sample_chunks(task, range(task.n_chunks), config, stage="s")
    assert resumed.to_dict() == _local(task).to_dict()


@pytest.mark.slow  # fast representative: test_bit_identical_to_local_for_any_window
def test_in_process_local_cluster_and_accountant() -> None:
    """``scheduler=None`` starts (once) and closes a LocalCluster; the accountant's Dask
    executor gives the local answer."""
    task = _task(n_samples=6000)
    executor = DaskExecutor(n_workers=2)
    try:
        assert _run(task, executor).to_dict() == _local(task).to_dict()
        client = executor.client()
        assert executor.client() is client  # shared, not restarted
        assert len(client.nthreads()) == 2
        mc = accountants.get("monte_carlo")
        kwargs = {"samples": 8000, "pilot_samples": 2000, "seed": 3}
        local = mc(**kwargs, run=RunSettings(chunk_size=1000)).epsilon(
            ToyScheme(), ToyStrategy(), 1.0, 1e-2
        )
        dask = mc(**kwargs, run=RunSettings(chunk_size=1000, executor="dask", workers=2)).epsilon(
            ToyScheme(), ToyStrategy(), 1.0, 1e-2
        )
        assert dask.to_dict() | {"seconds": 0} == local.to_dict() | {"seconds": 0}
    finally:
        executor.close()
    assert client.status in ("closed", "closing")


def test_get_executor_kinds() -> None:
    assert isinstance(get_executor(1), LocalExecutor)
    assert isinstance(get_executor(2), ProcessExecutor)
    assert isinstance(get_executor(1, "local"), LocalExecutor)
    assert isinstance(get_executor(1, "processes"), ProcessExecutor)
    dask = get_executor(3, "dask")
    assert isinstance(dask, DaskExecutor) and dask.n_workers == 3 and dask.scheduler is None
    remote = get_executor(1, scheduler="tcp://10.0.0.1:8786")
    assert isinstance(remote, DaskExecutor) and remote.scheduler == "tcp://10.0.0.1:8786"
    with pytest.raises(ConfigurationError, match="kind"):
        get_executor(1, "mpi")
    with pytest.raises(ConfigurationError, match="scheduler"):
        get_executor(1, "processes", "tcp://10.0.0.1:8786")
    with pytest.raises(ConfigurationError, match="workers"):
        get_executor(2, "local")


def test_dask_executor_is_validated(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"scheduler": "not an address"}, "scheduler"),
        ({"n_workers": 0}, "n_workers"),
        ({"threads_per_worker": 0}, "threads_per_worker"),
        ({"ahead": 0}, "ahead"),
        ({"retries": -1}, "retries"),
    ]
    for bad, name in cases:
        with pytest.raises(ConfigurationError, match=name):
            DaskExecutor(**bad)
    DaskExecutor(scheduler="127.0.0.1:8786")
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text('{"address": "tcp://127.0.0.1:8786"}')
    DaskExecutor(scheduler=str(scheduler_file))  # a scheduler file must exist (checked early)
    scheduler_file.write_text("{}")  # and name the scheduler's address
    with pytest.raises(ConfigurationError, match="has no address"):
        DaskExecutor(scheduler=str(scheduler_file))


def test_a_lost_schedulers_tracebacks_are_filtered_from_the_client_loggers(cluster: Any) -> None:
    """A scheduler gone mid-run is reported in one line (WorkersLostError); the tracebacks the
    client's own Dask loggers would print on the way (its batched stream found closed, logged
    at INFO; its reconnection attempts cancelled) are dropped, other records kept."""
    from distributed.comm.core import CommClosedError

    _executor(cluster).client()
    keep = dask_module._drop_lost_connection_tracebacks
    for name in ("distributed.client", "distributed.batched"):
        assert keep in logging.getLogger(name).filters

    def record(error: BaseException | None) -> logging.LogRecord:
        if error is None:
            info = None
        else:
            try:
                raise error
            except BaseException:
                info = sys.exc_info()
        return logging.LogRecord(
            "distributed.batched", logging.INFO, __file__, 1, "Batched Comm Closed", None, info
        )

    class FatalClosedError(CommClosedError):
        pass

    assert not keep(record(CommClosedError()))
    assert not keep(record(FatalClosedError()))
    assert not keep(record(asyncio.CancelledError()))
    assert keep(record(ValueError("a chunk's own error")))
    assert keep(record(None))


def test_missing_dask_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DaskUnavailableError, match=r"pip install 'minsep\[dist\]'"):
        DaskExecutor()
    with pytest.raises(ImportError, match="dist"):
        get_executor(2, "dask")
    mc = accountants.get("monte_carlo")
    with pytest.raises(DaskUnavailableError, match="dist"):
        mc(run=RunSettings(executor="dask", workers=2))
    mc(run=RunSettings(workers=2))  # other executors do not need dask


def test_accountant_executor_options_are_validated() -> None:
    mc = accountants.get("monte_carlo")
    with pytest.raises(ConfigurationError, match="executor"):
        mc(run=RunSettings(executor="mpi"))
    with pytest.raises(ConfigurationError, match="workers"):
        mc(run=RunSettings(executor="local", workers=2))
    with pytest.raises(ConfigurationError, match="scheduler"):
        mc(run=RunSettings(executor="processes", scheduler="tcp://127.0.0.1:8786"))
    with pytest.raises(ConfigurationError, match="scheduler"):
        mc(run=RunSettings(scheduler="not an address"))
    assert isinstance(
        mc(run=RunSettings(scheduler="tcp://127.0.0.1:8786"))._executor(), DaskExecutor
    )
