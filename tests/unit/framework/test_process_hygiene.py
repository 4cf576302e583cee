"""Faults a batch system inflicts: the main process killed (SIGKILL) or stopped (SIGTERM)
leaves no process behind; SIGTERM saves the checkpoint like Ctrl-C; a lost pool worker is
recomputed on a fresh one (same bits), then given up with one line and exit status 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest

from minsep.framework.cli.main import EXIT_ERROR, EXIT_TERMINATED, main
from minsep.framework.errors import WorkersLostError
from minsep.framework.montecarlo import Checkpoint, ProcessExecutor
from minsep.framework.registries import accountants

psutil = pytest.importorskip("psutil")  # in the dist extra (distributed needs it)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]
REAL = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
        "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "2000000",
        "--pilot-samples", "5000", "--seed", "11", "--chunk-size", "2500", "--json",
        "--no-cache"]  # fmt: skip
#: Seconds within which every process of a killed run must be gone (the issue's bound).
GONE_WITHIN = 10.0


def _start(argv: list[str]) -> subprocess.Popen[str]:
    """The CLI in its own session (so that nothing here receives the test's signals)."""
    return subprocess.Popen(
        [sys.executable, "-m", "minsep", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _family_when_sampling(process: subprocess.Popen[str], path: Path) -> set[Any]:
    """Every descendant of ``process`` once the verification stage is under way (the
    checkpoint holds some of its chunks), with the two pool workers among them."""
    family: set[Any] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            family |= set(psutil.Process(process.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            break
        stage = Checkpoint(path).read().get("verify") if path.exists() else None
        if stage is not None and stage["chunks_done"] >= 4:
            return family
        time.sleep(0.05)
    process.kill()
    pytest.fail(f"the run ended or stalled before it could be stopped: {process.communicate()}")


def _alive(family: set[Any]) -> list[Any]:
    alive = []
    for child in family:
        try:
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


def _left_behind(family: set[Any]) -> list[str]:
    """The processes of ``family`` still alive after :data:`GONE_WITHIN` seconds (killed
    then, so that a failing test leaves nothing behind either)."""
    deadline = time.monotonic() + GONE_WITHIN
    while _alive(family) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(family)
    described = [" ".join(p.cmdline())[:100] for p in alive]
    for p in alive:
        p.kill()
    return described


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_stopped_run_leaves_no_process_behind(tmp_path: Path, stop: signal.Signals) -> None:
    path = tmp_path / "run.ckpt"
    process = _start([*REAL, "--workers", "2", "--checkpoint", str(path),
                      "--checkpoint-interval", "0"])  # fmt: skip
    try:
        family = _family_when_sampling(process, path)
        kinds = " ".join(" ".join(p.cmdline()) for p in _alive(family))
        assert "forkserver" in kinds and "resource_tracker" in kinds
        assert len(family) >= 4  # tracker, forkserver, two workers
        os.kill(process.pid, stop)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else EXIT_TERMINATED)
    assert _left_behind(family) == []


@pytest.mark.slow  # three full runs; fast representative: the SIGTERM case above
def test_sigterm_saves_a_checkpoint_that_resumes_bit_identically(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    argv = [*REAL, "--checkpoint", str(path)]
    process = _start([*argv, "--workers", "2", "--checkpoint-interval", "0"])
    try:
        _family_when_sampling(process, path)
        os.kill(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_TERMINATED, err
    line = err.strip().splitlines()[-1]
    assert "interrupted: stopped by SIGTERM" in line and str(path) in line
    assert json.loads(out)["error"]["exit_code"] == EXIT_TERMINATED
    stages = Checkpoint(path).read()
    done = stages["verify"]["chunks_done"]
    assert 4 <= done < stages["verify"]["n_chunks"]
    assert not list(tmp_path.glob(".run.ckpt*"))

    reference = subprocess.run(
        [sys.executable, "-m", "minsep", *REAL, "--workers", "1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    resumed = subprocess.run(
        [sys.executable, "-m", "minsep", *argv, "--workers", "1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert json.loads(resumed) | {"seconds": 0} == json.loads(reference) | {"seconds": 0}


# -- a lost pool worker ---------------------------------------------------------------------


@attrs.frozen
class KillsItsWorker:
    """A chunk task whose chunk ``victim`` kills the worker running it (SIGKILL) the first
    ``times`` times it runs (counted in files under ``folder``)."""

    folder: str
    victim: int = 5
    times: int = 1

    def __call__(self, index: int) -> int:
        if index == self.victim:
            tries = len(list(Path(self.folder).iterdir()))
            if tries < self.times:
                (Path(self.folder) / str(tries)).touch()
                os.kill(os.getpid(), signal.SIGKILL)
        return index * index


def test_a_lost_worker_is_replaced_and_the_lost_chunks_recomputed(tmp_path: Path) -> None:
    executor = ProcessExecutor(max_workers=2, retries=2)
    task = KillsItsWorker(str(tmp_path), times=2)
    assert list(executor.map(task, range(12))) == [i * i for i in range(12)]
    assert len(list(tmp_path.iterdir())) == 2  # killed twice, recomputed twice


def test_a_chunk_that_keeps_killing_workers_is_given_up(tmp_path: Path) -> None:
    """Chunk 5 kills its worker every time; the broken pool also loses chunk 4 when it was
    still running on the other worker, so the message names the first chunk not returned (4
    or 5, as the two workers raced), not a culprit it cannot know."""
    executor = ProcessExecutor(max_workers=2, retries=1)
    with pytest.raises(WorkersLostError, match=r"lost 2 times.*chunks from [45] on.*1 times"):
        list(executor.map(KillsItsWorker(str(tmp_path), times=5), range(12)))
    assert list(executor.map(KillsItsWorker(str(tmp_path), times=0), range(3))) == [0, 1, 4]


@attrs.define
class Losing:
    """An executor whose workers are all lost."""

    @property
    def workers(self) -> int:
        return 2

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        raise WorkersLostError("a worker process was lost 4 times")
        yield


def test_lost_workers_are_one_line_exit_2_and_a_json_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(accountants.get("monte_carlo"), "_executor", lambda self: Losing())
    small = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps",
             "16", "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "20000",
             "--seed", "11", "--json", "--no-cache"]  # fmt: skip
    assert main(small) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1].startswith("minsep epsilon: error: a worker")
    error = json.loads(captured.out)["error"]
    assert error["type"] == "WorkersLostError" and error["exit_code"] == EXIT_ERROR


@pytest.mark.slow  # two full runs; fast representative: test_a_lost_worker_is_replaced_...
def test_killing_a_pool_worker_mid_run_gives_the_uninterrupted_answer(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    process = _start([*REAL, "--workers", "2", "--checkpoint", str(path),
                      "--checkpoint-interval", "0"])  # fmt: skip
    try:
        family = _family_when_sampling(process, path)
        workers = [
            p
            for p in _alive(family)
            if p.ppid() != process.pid and "forkserver" in " ".join(p.cmdline())
        ]
        assert workers, [p.cmdline() for p in family]
        workers[0].kill()
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "a worker process was lost" in err
    reference = subprocess.run(
        [sys.executable, "-m", "minsep", *REAL, "--workers", "1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert json.loads(out) | {"seconds": 0} == json.loads(reference) | {"seconds": 0}


# -- a lost Dask scheduler ------------------------------------------------------------------


def _dask(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "dask"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.mark.slow  # a scheduler, a worker and a run as processes
def test_a_lost_dask_scheduler_is_one_line_exit_2_and_a_json_error(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    address = tmp_path / "scheduler.json"
    scheduler = _dask("scheduler", "--port", "0", "--no-dashboard", "--scheduler-file",
                      str(address))  # fmt: skip
    worker = None
    process = None
    try:
        deadline = time.monotonic() + 60
        while not address.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = _dask("worker", "--scheduler-file", str(address), "--nworkers", "1",
                       "--nthreads", "1", "--no-dashboard")  # fmt: skip
        path = tmp_path / "run.ckpt"
        process = _start([*REAL, "--scheduler", str(address), "--checkpoint", str(path),
                          "--checkpoint-interval", "0"])  # fmt: skip
        _family_when_sampling(process, path)
        scheduler.kill()
        out, err = process.communicate(timeout=120)
    finally:
        for started in (scheduler, worker, process):
            if started is not None and started.poll() is None:
                started.kill()
    assert process.returncode == EXIT_ERROR, err
    lines = err.strip().splitlines()
    assert [line for line in lines if not line.startswith("minsep")] == []  # no traceback
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "lost the Dask scheduler" in errors[0]
    error = json.loads(out)["error"]
    assert error["type"] == "WorkersLostError" and error["exit_code"] == EXIT_ERROR
