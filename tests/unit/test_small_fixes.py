"""Small refusals and options of issue 28: ``--quiet`` with accountants that show no
progress, a population too large for memory, a checkpoint that cannot be saved, and the
bench's progress, time limit and model skipping."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from minsep import bench
from minsep.accountants.monte_carlo import RunSettings
from minsep.framework.cli.main import EXIT_ERROR, main
from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.montecarlo import Checkpoint
from minsep.framework.registries import accountants
from minsep.framework.setup import build_scheme
from minsep.schemes.base import BYTES_PER_EXAMPLE, check_population_fits

POISSON = ["epsilon", "--scheme", "poisson", "--steps", "8", "--rate", "1/4", "--sigma", "1",
           "--delta", "1e-5", "--no-cache"]  # fmt: skip


@pytest.mark.parametrize("accountant", ["pld", "gaussian", "rdp"])
def test_quiet_is_accepted_by_accountants_without_progress(
    accountant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*POISSON, "--accountant", accountant, "--quiet"]) == 0
    assert "progress" not in capsys.readouterr().err


def test_an_explicit_progress_is_still_refused_where_it_would_be_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*POISSON, "--accountant", "pld", "--progress"]) == EXIT_ERROR
    assert "--progress" in capsys.readouterr().err


def test_a_population_too_large_for_memory_is_refused_by_name() -> None:
    assert check_population_fits(1000, "S", memory=1000 * BYTES_PER_EXAMPLE) == 1000
    with pytest.raises(ConfigurationError, match=r"S.population = 1001 .*\[1, 1,000\]"):
        check_population_fits(1001, "S", memory=1000 * BYTES_PER_EXAMPLE)
    scheme = build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    with pytest.raises(ConfigurationError, match="population = 1000000000000") as info:
        next(iter(scheme.batches(10**12, np.random.default_rng(0))))
    assert info.value.parameter == "population"
    assert len(next(iter(scheme.batches(1000, np.random.default_rng(0))))) <= 1000


def test_a_checkpoint_that_cannot_be_saved_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "q.ckpt"
    checkpoint = Checkpoint(path)
    checkpoint.write({})
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(CheckpointError) as info:
        checkpoint.write({})
    message = str(info.value)
    assert str(path) in message and "No space left" in message and "previous save" in message
    assert path.read_bytes() == before and not list(tmp_path.glob(".q.ckpt.*"))


def _bench(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert bench.main(["--quick", "--no-engine", "--repeats", "1", "--case", "small",
                       "--json", *argv]) == 0  # fmt: skip
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_bench_skips_models_reports_progress_and_stops_at_its_time_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    labels = [e.label for e in bench.bench_models(bench.QUICK[0]) if e.model is not None][:2]
    first, second = labels
    result, err = _bench(["--models", ",".join(labels), "--skip-models", second], capsys)
    case = result["cases"][0]
    assert list(case["models"]) == [first] and case["skipped"] == {second: "--skip-models"}
    assert f"model 1/2 {first}" in err and second not in err
    result, err = _bench(["--models", ",".join(labels), "--time-limit", "0"], capsys)
    case = result["cases"][0]
    assert case["models"] == {} and set(case["skipped"].values()) == {"--time-limit reached"}
    result, err = _bench(["--models", first, "--no-progress"], capsys)
    assert list(result["cases"][0]["models"]) == [first] and "model 1/1" not in err


def test_monte_carlo_results_record_the_chunk_size_their_draws_depend_on() -> None:
    from minsep.framework.montecarlo.planning import fixed_bytes, sample_bytes
    from minsep.framework.results import Result
    from minsep.framework.setup import build_strategy

    scheme = build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    strategy = build_strategy(16, 4)
    mc = accountants.get("monte_carlo")
    plain = mc(samples=4000, pilot_samples=1000, seed=3, run=RunSettings(chunk_size=1000))
    model = plain._model(scheme, strategy)
    budget = fixed_bytes(model) + 300 * sample_bytes(model, "numpy")
    small = mc(samples=4000, pilot_samples=1000, seed=3, run=RunSettings(memory_budget=budget))
    first = plain.epsilon(scheme, strategy, 1.0, 1e-2)
    second = small.epsilon(scheme, strategy, 1.0, 1e-2)
    assert (first.chunk_size, second.chunk_size) == (1000, 300)
    assert Result.from_json(first.to_json()).chunk_size == 1000
    assert json.loads(first.to_json())["monte_carlo"]["chunk_size"] == 1000


def test_time_estimates_use_cpu_rates_and_the_cpu_share_the_run_will_get(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    import attrs

    from minsep.framework.montecarlo.planning import RunPlan, Stage, measure_rates
    from minsep.framework.setup import build_strategy
    from minsep.framework.workers import expected_cores

    assert expected_cores(2, cpus=2, load=0.0) == 2.0
    assert expected_cores(2, cpus=2, load=10.0) == pytest.approx(2 * 2 / 12)
    assert expected_cores(1, cpus=16, load=3.0) == 1.0
    plan = RunPlan("epsilon", (Stage("verify", 1000, 1),), 100, 8, 1 << 20, 2, 0, 1e-3, 0.0, 16)
    assert plan.estimated_seconds == pytest.approx(2 * 1000 * 1e-3 / 2)
    loaded = attrs.evolve(plan, cores=expected_cores(2, cpus=2, load=10.0))
    assert loaded.estimated_seconds == pytest.approx(2 * 1000 * 1e-3 / (1 / 3))
    assert "0.33 cores the 2 workers can expect" in loaded.describe_time()
    # the probe reads CPU time: a wall clock that races ahead (other work) changes nothing
    scheme = build_scheme("b_min_sep", 16, 1 / 8, {"min_sep": 4})
    model = scheme.loss_model(build_strategy(16, 4))
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    draw, evaluate = measure_rates(model, 1.0, chunk_size=1000)
    assert 0 < draw < 1 and 0 < evaluate < 1  # seconds per sample: not 1,000 s per call
