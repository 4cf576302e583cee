"""Checkpoint files (issue 13 §5): an unwritable folder fails before sampling, and one checkpoint
file serves one run at a time (a lock; stale temporaries of a killed writer are removed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.cli.main import EXIT_ERROR, main
from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.montecarlo import Checkpoint, ChunkTask, sample_chunks
from minsep.framework.registries import accountants
from tests.unit.montecarlo_toys import (
    ToyScheme,
    ToyStrategy,
    one_error_line,
    toy_epsilon_args,
)

ROOT = Path(__file__).resolve().parents[4]
fcntl = pytest.importorskip("fcntl")


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
    assert main(toy_epsilon_args("--checkpoint", str(path))) == EXIT_ERROR
    line = one_error_line(capsys.readouterr().err)
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
