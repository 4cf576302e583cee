"""``--executor/--workers/--scheduler/--checkpoint`` on the accounting commands, and a CLI run
killed with SIGKILL then resumed from its checkpoint (a real scheme at tiny size)."""

from __future__ import annotations

import argparse
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

from minsep.framework.cli import common
from minsep.framework.cli.main import main
from minsep.framework.montecarlo import EXECUTOR_KINDS, Checkpoint
from minsep.framework.registries import accountants, schemes
from tests.unit.montecarlo_toys import ToyScheme

T = TypeVar("T")
TOY = "mc_toy_checkpoint_cli_test"
ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def toy() -> Iterator[str]:
    schemes.register(TOY)(ToyScheme)
    yield TOY
    schemes.unregister(TOY)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    common.add_setup_arguments(parser)
    return parser.parse_args(argv)


def test_options_reach_the_accountant(tmp_path: Path) -> None:
    path = str(tmp_path / "q.ckpt")
    args = _parse(["--executor", "dask", "--workers", "3", "--scheduler", "tcp://h:8786",
                   "--checkpoint", path, "--checkpoint-interval", "0"])  # fmt: skip
    options = common.accountant_options(accountants.get("monte_carlo"), args)
    assert options == {
        "executor": "dask",
        "workers": 3,
        "scheduler": "tcp://h:8786",
        "checkpoint": path,
        "checkpoint_interval": 0.0,
    }
    assert common.accountant_options(accountants.get("monte_carlo"), _parse([])) == {}
    with pytest.raises(SystemExit):
        _parse(["--executor", "threads"])
    with pytest.raises(SystemExit):
        _parse(["--checkpoint-interval", "-1"])
    assert common.EXECUTOR_CHOICES == EXECUTOR_KINDS


def _toy_args(path: Path, *extra: str) -> list[str]:
    return ["epsilon", "--scheme", TOY, "--steps", "1", "--rate", "3/10", "--samples", "8000",
            "--pilot-samples", "2000", "--chunk-size", "1000", "--delta", "1e-2",
            "--checkpoint", str(path),
            "--json", *extra]  # fmt: skip


def test_cli_checkpoint_resumes_and_refuses(
    toy: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.ckpt"
    assert main(_toy_args(path, "--sigma", "1", "--seed", "4")) == 0
    first = json.loads(capsys.readouterr().out)
    assert set(Checkpoint(path).read()) == {"pilot", "verify"}
    assert main(_toy_args(path, "--sigma", "1")) == 0  # the seed comes from the checkpoint
    again = json.loads(capsys.readouterr().out)
    assert again | {"seconds": 0} == first | {"seconds": 0}
    assert main(_toy_args(path, "--sigma", "1.5", "--seed", "4")) == 2
    err = capsys.readouterr().err
    assert "is refused" in err and "other parameters" in err and "sigmas" in err
    path.write_text(path.read_text()[:100])
    assert main(_toy_args(path, "--sigma", "1", "--seed", "4")) == 2
    assert "not valid JSON" in capsys.readouterr().err


@attrs.define
class Recording:
    executed: list[int] = attrs.field(factory=list)

    @property
    def workers(self) -> int:
        return 1

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        for i in indices:
            self.executed.append(i)
            yield task(i)


REAL = ["epsilon", "--scheme", "b_min_sep", "--min-sep", "4", "--bands", "4", "--steps", "16",
        "--rate", "1/8", "--sigma", "1", "--delta", "1e-2", "--samples", "50000",
        "--pilot-samples", "5000", "--seed", "11", "--chunk-size", "250", "--json"]  # fmt: skip


def _stage(path: Path, name: str) -> dict[str, Any] | None:
    return Checkpoint(path).read().get(name)  # atomic replaces: never a partial file


@pytest.mark.slow  # subprocess; fast representative: test_cli_checkpoint_resumes_and_refuses
def test_a_killed_cli_run_resumes_to_the_same_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.ckpt"
    argv = [*REAL, "--checkpoint", str(path), "--checkpoint-interval", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "minsep", *argv],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            stage = _stage(path, "verify")
            if stage is not None and stage["chunks_done"] >= 10:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == -signal.SIGKILL, "the run finished before it could be killed"
    stages = Checkpoint(path).read()
    assert stages["pilot"]["chunks_done"] == stages["pilot"]["n_chunks"] == 20
    done = stages["verify"]["chunks_done"]
    assert 10 <= done < stages["verify"]["n_chunks"] == 200

    assert main(REAL) == 0
    reference = json.loads(capsys.readouterr().out)
    resumed_executor = Recording()
    monkeypatch.setattr(accountants.get("monte_carlo"), "_executor", lambda self: resumed_executor)
    assert main(argv) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed | {"seconds": 0} == reference | {"seconds": 0}
    assert resumed_executor.executed == list(range(done, 200))  # the rest of verify, once
