"""Issue 13 §4/§5 on the command line and in checkpoints: one clear line (and a JSON error
object with ``--json``) instead of a traceback, Ctrl-C saves the checkpoint and exits 130, and
one checkpoint file serves one run at a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.cli import common
from minsep.framework.cli.main import EXIT_ERROR, EXIT_INTERRUPTED, main
from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.montecarlo import Checkpoint, ChunkTask, sample_chunks
from minsep.framework.montecarlo import sampling as sampling_module
from minsep.framework.registries import accountants, schemes
from tests.unit.montecarlo_toys import ToyScheme, ToyStrategy

TOY = "mc_toy_hardening_cli_test"
ROOT = Path(__file__).resolve().parents[2]
fcntl = pytest.importorskip("fcntl")


@pytest.fixture
def toy() -> Iterator[str]:
    schemes.register(TOY)(ToyScheme)
    yield TOY
    schemes.unregister(TOY)


def _toy_args(*extra: str) -> list[str]:
    return ["epsilon", "--scheme", TOY, "--steps", "1", "--rate", "3/10", "--samples", "8000",
            "--pilot-samples", "2000", "--chunk-size", "1000", "--delta", "1e-2", "--sigma", "1",
            "--seed", "4", "--workers", "1", *extra]  # fmt: skip  # in-process: monkeypatched


def _one_line(err: str) -> str:
    """The one error line of ``err`` (the first-answer and planned-work lines a run prints
    first aside)."""
    before = ("minsep: plan:", "minsep: first answer")
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(before)]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- a forgotten --min-sep ------------------------------------------------------------------


@pytest.mark.parametrize(
    "scheme",
    [[], ["--scheme", "cyclic_poisson"],
     ["--scheme", "truncated", "--dataset-size", "1000", "--max-batch-size", "30"]],
)  # fmt: skip
def test_a_forgotten_min_sep_is_one_line_naming_the_option(
    scheme: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["epsilon", *scheme, "--steps", "64", "--rate", "1/16", "--sigma", "1"]
    assert main(argv) == EXIT_ERROR
    line = _one_line(capsys.readouterr().err)
    assert "min_sep = <missing>" in line and "--min-sep" in line


def test_json_errors_are_objects_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", "--steps", "64", "--rate", "1/16", "--sigma", "1", "--json"]) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["type"] == "ConfigurationError" and error["exit_code"] == 2
    assert error["parameter"] == "min_sep" and error["option"] == "--min-sep"
    assert "min_sep" in error["message"] and captured.err  # the line on stderr stays


def test_json_usage_errors_are_objects_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["epsilon", "--sigma", "1", "--delta", "5", "--json"])
    assert info.value.code == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "UsageError" and "--delta" in error["message"]


def test_without_json_stdout_stays_empty_on_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["epsilon", "--steps", "64", "--sigma", "1"]) == 2
    assert capsys.readouterr().out == ""


# -- memory, operating system and interrupts ------------------------------------------------


def _failing_build(error: BaseException) -> Any:
    def build(args: Any, name: str | None = None) -> Any:
        raise error

    return build


@pytest.mark.parametrize("as_json", [False, True])
def test_memory_error_is_one_line_and_nonzero(
    as_json: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "build_scheme", _failing_build(MemoryError()))
    argv = ["epsilon", "--min-sep", "4", "--sigma", "1", *(["--json"] if as_json else [])]
    assert main(argv) == EXIT_ERROR
    captured = capsys.readouterr()
    assert "out of memory" in _one_line(captured.err)
    if as_json:
        assert json.loads(captured.out)["error"]["type"] == "MemoryError"


def test_os_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(common, "build_scheme", _failing_build(OSError(28, "No space left")))
    assert main(["calibrate", "--min-sep", "4", "--epsilon", "1"]) == EXIT_ERROR
    assert "No space left" in _one_line(capsys.readouterr().err)


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
    argv = _toy_args("--checkpoint", str(path), "--checkpoint-interval", "3600", "--json")
    _interrupt_at(monkeypatch, stream=1, chunk=3)  # verification stream, 4th chunk
    assert main(argv) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    line = _one_line(captured.err)
    assert "interrupted" in line and str(path) in line
    assert json.loads(captured.out)["error"]["exit_code"] == EXIT_INTERRUPTED
    stages = Checkpoint(path).read()  # saved although no save was due by time
    assert stages["pilot"]["chunks_done"] == 2 and stages["verify"]["chunks_done"] == 3
    assert not list(tmp_path.glob(".q.ckpt*"))  # no lock or temporary left behind
    monkeypatch.undo()
    assert main(_toy_args("--checkpoint", str(path), "--json")) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert main(_toy_args("--json")) == 0  # the same question without a checkpoint
    fresh = json.loads(capsys.readouterr().out)
    assert resumed | {"seconds": 0} == fresh | {"seconds": 0}


def test_ctrl_c_without_a_checkpoint_exits_130(
    toy: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _interrupt_at(monkeypatch, stream=0, chunk=0)
    assert main(_toy_args()) == EXIT_INTERRUPTED
    assert "interrupted" in _one_line(capsys.readouterr().err)


def test_sigint_is_held_back_while_a_chunk_is_merged_and_recorded() -> None:
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("POSIX signals")
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), sampling_module._DeferredInterrupt():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("merge and record finished")
    assert steps == ["merge and record finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# -- checkpoint files -----------------------------------------------------------------------


def _accountant(path: Path, **options: Any) -> Any:
    settings = {"samples": 8000, "pilot_samples": 2000, "seed": 4}
    run = RunSettings(chunk_size=1000, checkpoint=str(path))
    return accountants.get("monte_carlo")(**settings, **options, run=run)


def test_an_unwritable_checkpoint_folder_fails_before_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], toy: str
) -> None:
    import tempfile

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    path = tmp_path / "q.ckpt"
    with pytest.raises(ConfigurationError, match=r"writable folder.*Permission denied") as info:
        _accountant(path)
    assert info.value.parameter == "checkpoint"
    with pytest.raises(ConfigurationError, match="writable"):
        Checkpoint(path)
    sampled: list[int] = []
    monkeypatch.setattr(ChunkTask, "__call__", lambda self, i: sampled.append(i))
    assert main(_toy_args("--checkpoint", str(path))) == EXIT_ERROR
    line = _one_line(capsys.readouterr().err)
    assert "writable" in line and "--checkpoint" in line and sampled == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs a read-only /proc")
def test_a_read_only_folder_is_refused_for_real() -> None:
    with pytest.raises(ConfigurationError, match="writable"):
        Checkpoint("/proc/minsep-test.ckpt")


def test_a_second_run_on_a_checkpoint_in_use_fails_fast(tmp_path: Path) -> None:
    path = tmp_path / "q.ckpt"
    holder = Checkpoint(path)
    fd = os.open(holder.lock_path, os.O_RDWR | os.O_CREAT)  # "another process" holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"4242")
        with pytest.raises(CheckpointError, match=r"in use by another run.*4242"):
            _accountant(path).epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2)
        assert not path.exists()  # refused before anything was sampled or written
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    result = _accountant(path).epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2)
    assert set(Checkpoint(path).read()) == {"pilot", "verify"}
    assert result.certified_epsilon > 0 and not holder.lock_path.exists()


def test_two_questions_cannot_interleave_on_one_file(tmp_path: Path) -> None:
    """While one question runs (holding the file), another process asking another question
    on the same file is refused at once, so the file never mixes their stages."""
    path = tmp_path / "q.ckpt"
    second = (
        "from minsep.framework.registries import accountants\n"
        "from tests.unit.montecarlo_toys import ToyScheme, ToyStrategy\n"
        "mc = accountants.get('monte_carlo')(samples=8000, pilot_samples=2000, seed=5,\n"
        f"    run={{'chunk_size': 1000, 'checkpoint': {str(path)!r}}})\n"
        "mc.epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.5, 1e-2)\n"
    )
    outcome: list[subprocess.CompletedProcess[str]] = []
    original = ChunkTask.__call__

    def call(self: ChunkTask, index: int) -> Any:
        if self.stream == 1 and index == 2 and not outcome:  # mid-verification
            outcome.append(
                subprocess.run(
                    [sys.executable, "-c", second],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            )
        return original(self, index)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChunkTask, "__call__", call)
        _accountant(path).epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2)
    assert outcome and outcome[0].returncode != 0
    assert "CheckpointError" in outcome[0].stderr and "in use by another run" in outcome[0].stderr
    stages = Checkpoint(path).read()
    assert set(stages) == {"pilot", "verify"}
    assert {stage["identity"]["seed"] for stage in stages.values()} == {4}


def test_stale_temporaries_of_a_killed_writer_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "q.ckpt"
    stale = tmp_path / ".q.ckpt.99999.tmp"
    stale.write_text('{"half": ')
    other = tmp_path / ".other.ckpt.99999.tmp"
    other.write_text("not ours")
    _accountant(path).epsilon(ToyScheme(rate=0.3), ToyStrategy(), 1.0, 1e-2)
    assert not stale.exists() and other.exists()
    assert set(Checkpoint(path).read()) == {"pilot", "verify"}


def test_the_engine_holds_the_lock_for_direct_callers(tmp_path: Path) -> None:
    from minsep.framework.montecarlo import EngineConfig
    from tests.unit.montecarlo_toys import SubsampledGaussianToy

    path = tmp_path / "run.ckpt"
    task = ChunkTask(SubsampledGaussianToy(rate=0.3), (1.0,), 3000, 5, chunk_size=1000)
    seen: list[bool] = []
    original = ChunkTask.__call__

    def call(self: ChunkTask, index: int) -> Any:
        seen.append(Checkpoint(path).lock_path.exists())
        return original(self, index)

    config = EngineConfig(chunk_size=1000, checkpoint=Checkpoint(path))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChunkTask, "__call__", call)
        sample_chunks(task, range(task.n_chunks), config, stage="s")
    assert seen == [True, True, True] and not Checkpoint(path).lock_path.exists()


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
    assert out == "" and "interrupted" in _one_line(err)
    stages = Checkpoint(path).read()
    done = stages["verify"]["chunks_done"]  # saved on Ctrl-C, though none was due by time
    assert 0 < done < stages["verify"]["n_chunks"]
    assert not list(tmp_path.glob(".run.ckpt*"))
