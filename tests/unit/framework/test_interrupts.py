"""Ctrl-C and SIGINT (issue 13 §5): an interrupted run saves its checkpoint and exits 130,
SIGINT is held back while a chunk is merged and recorded, and pool workers leave Ctrl-C to the
parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from minsep.framework.cli.main import EXIT_INTERRUPTED, main
from minsep.framework.montecarlo import Checkpoint, ChunkTask
from minsep.framework.montecarlo import sampling as sampling_module
from tests.unit.montecarlo_toys import one_error_line, toy_epsilon_args

ROOT = Path(__file__).resolve().parents[3]


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, stream: int, chunk: int) -> None:
    original = ChunkTask.__call__

    def call(self: ChunkTask, index: int) -> Any:
        if self.stream == stream and index == chunk:
            raise KeyboardInterrupt
        return original(self, index)

    monkeypatch.setattr(ChunkTask, "__call__", call)


def test_ctrl_c_saves_the_checkpoint_and_exits_130(
    toy: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "q.ckpt"
    argv = toy_epsilon_args("--checkpoint", str(path), "--checkpoint-interval", "3600", "--json")
    _interrupt_at(monkeypatch, stream=1, chunk=3)  # verification stream, 4th chunk
    assert main(argv) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert "interrupted" in line and str(path) in line
    assert json.loads(captured.out)["error"]["exit_code"] == EXIT_INTERRUPTED
    stages = Checkpoint(path).read()  # saved although no save was due by time
    assert stages["pilot"]["chunks_done"] == 2 and stages["verify"]["chunks_done"] == 3
    assert not list(tmp_path.glob(".q.ckpt*"))  # no lock or temporary left behind
    monkeypatch.undo()
    assert main(toy_epsilon_args("--checkpoint", str(path), "--json")) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert main(toy_epsilon_args("--json")) == 0  # the same question without a checkpoint
    fresh = json.loads(capsys.readouterr().out)
    assert resumed | {"seconds": 0} == fresh | {"seconds": 0}


def test_ctrl_c_without_a_checkpoint_exits_130(
    toy: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _interrupt_at(monkeypatch, stream=0, chunk=0)
    assert main(toy_epsilon_args()) == EXIT_INTERRUPTED
    assert "interrupted" in one_error_line(capsys.readouterr().err)


def test_sigint_is_held_back_while_a_chunk_is_merged_and_recorded() -> None:
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("POSIX signals")
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), sampling_module._DeferredInterrupt():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("merge and record finished")
    assert steps == ["merge and record finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _sigint_handler(index: int) -> bool:
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_process_pool_workers_leave_ctrl_c_to_the_parent() -> None:
    from minsep.framework.montecarlo import ProcessExecutor

    assert list(ProcessExecutor(max_workers=1).map(_sigint_handler, [0, 1])) == [True, True]


REAL = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
        "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "2000000",
        "--pilot-samples", "5000", "--seed", "11", "--chunk-size", "250"]  # fmt: skip


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_real_sigint_saves_the_checkpoint_and_exits_130(tmp_path: Path) -> None:
    path = tmp_path / "run.ckpt"
    argv = [*REAL, "--checkpoint", str(path), "--checkpoint-interval", "3600"]
    process = subprocess.Popen(
        [sys.executable, "-m", "minsep", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if path.exists() and "verify" not in Checkpoint(path).read():  # pilot saved
                time.sleep(0.2)  # well into the verification stage
                os.kill(process.pid, signal.SIGINT)
                break
            time.sleep(0.01)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_INTERRUPTED, err
    assert out == "" and "interrupted" in one_error_line(err)
    stages = Checkpoint(path).read()
    done = stages["verify"]["chunks_done"]  # saved on Ctrl-C, though none was due by time
    assert 0 < done < stages["verify"]["n_chunks"]
    assert not list(tmp_path.glob(".run.ckpt*"))
