"""Run-time estimates (framework/montecarlo/planning.py) use CPU rates and the CPU share the run
will get (issue 28)."""

from __future__ import annotations

import pytest

from minsep.framework.setup import build_scheme


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
