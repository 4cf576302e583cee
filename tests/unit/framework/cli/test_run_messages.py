"""What the accounting commands print while they run (issue 19, item 3): one throughput unit,
the PLD search named for what it is, a too-few-samples error naming ``--samples``, a quiet Dask
shutdown, and a subnormal sigma refused before any work."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from minsep.framework.cli import common
from minsep.framework.cli.main import main
from minsep.framework.montecarlo import dask_executor
from minsep.framework.montecarlo.planning import RunPlan, Stage

POISSON = ["--scheme", "poisson", "--steps", "16", "--rate", "1/8"]


def test_throughput_has_one_unit(capsys: pytest.CaptureFixture[str]) -> None:
    assert common.throughput(1000, 2.0, 10).startswith("5e+03 sample·steps/s (1,000 loss")
    args = [*POISSON, "--accountant", "monte_carlo", "--sigma", "1", "--delta", "1e-2"]
    args += ["--samples", "6000", "--seed", "1"]
    assert main(["epsilon", *args, "--proposal", "plain", "--no-progress"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("throughput")]
    assert "sample·steps/s" in line and "evaluations/s" not in line
    plan = RunPlan("epsilon", (Stage("verify", 10, 1),), 10, 8, 1 << 20, 1, 0, 1e-3, 1e-4, 16)
    assert plan.describe_time().count("sample·steps/s") == 2
    assert "16,000 sample·steps/s" in plan.describe_time()


def test_exact_calibration_says_bisection(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", *POISSON, "--epsilon", "2", "--accountant", "pld"]) == 0
    out = capsys.readouterr().out
    assert "bisection" in out and "sweep" not in out
    assert "the smallest sigma lies in (" in out


def test_too_few_samples_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*POISSON, "--accountant", "monte_carlo", "--sigma", "1", "--samples", "100"]
    args += ["--proposal", "plain", "--seed", "1"]
    assert main(["epsilon", *args, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "need --samples >= " in err and "(command-line option --samples)" in err


class _Noisy:
    """A stand-in client/cluster whose close logs like a stopping Dask nanny."""

    def close(self) -> None:
        logging.getLogger("distributed.nanny").warning("Worker process still alive")


def test_dask_shutdown_is_quiet(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    entries: dict[Any, Any] = {("fake",): (_Noisy(), _Noisy())}
    monkeypatch.setattr(dask_executor, "_CLUSTERS", entries)
    before = logging.getLogger("distributed").level
    with caplog.at_level(logging.WARNING):
        dask_executor.shutdown_clusters()
    assert entries == {}
    assert not [r for r in caplog.records if r.name.startswith("distributed")]
    assert logging.getLogger("distributed").level == before


@pytest.mark.parametrize("command", ["epsilon", "delta", "curve"])
def test_subnormal_sigma_is_refused_before_any_work(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sigma below MIN_SIGMA is an argument error: no first answer, plan or rate probe runs
    (it used to reach the rate probe and divide by zero)."""
    extra = {
        "epsilon": ["--delta", "1e-3"],
        "delta": ["--epsilon", "1"],
        "curve": ["--epsilon-grid", "0:1:3"],
    }
    with pytest.raises(SystemExit) as stop:
        main([command, *POISSON, "--sigma", "1e-320", *extra[command]])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--sigma" in err and "[1e-100, inf)" in err and "plan:" not in err
