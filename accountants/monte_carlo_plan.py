"""The work a Monte Carlo question will do, planned and logged before it is done.

Every question is planned first (stages, samples, chunks, memory per worker; logger
``minsep.plan``) and, with a time limit or INFO logging, timed by a small probe; a question
whose estimate exceeds ``max_seconds`` is refused before any draw
(:class:`~minsep.framework.montecarlo.planning.RunPlan`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import attrs

from minsep.accountants.monte_carlo_run import RunSettings
from minsep.accountants.monte_carlo_sweep import CalibrationSweep
from minsep.framework.backend import get_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import Executor, RunPlan, Stage, measure_rates
from minsep.framework.montecarlo.executors import call_on_worker
from minsep.framework.montecarlo.planning import (
    available_memory,
    fixed_bytes,
    format_bytes,
    sample_bytes,
)
from minsep.framework.montecarlo.planning import logger as plan_log
from minsep.framework.workers import expected_cores

__all__ = ["announce", "announce_escort", "plan_run", "stages"]

#: Sigmas tried per coarse and fine walk of the calibration pilot (see locate_sigma).
FINE_STEPS = 8


def stages(question: str, pilot: int, samples: int, sweep: CalibrationSweep) -> tuple[Stage, ...]:
    """The sampling stages ``question`` runs with ``pilot`` and ``samples`` draws."""
    if question in ("epsilon", "delta"):
        return (Stage("pilot", pilot, 1), Stage("verify", samples, 1))
    if question == "calibrate":
        return (
            Stage("pilot coarse", max(pilot // 4, 2), sweep.coarse_steps()),
            Stage("pilot fine", pilot, FINE_STEPS + 1, optional=True),
            Stage("calibrate", samples, len(sweep.points(1.0))),
        )
    if question == "curve":
        return (Stage("curve", samples, 1),)
    raise ConfigurationError(
        f"MonteCarloAccountant.plan.question = {question!r} is invalid: must be one of "
        "['epsilon', 'delta', 'calibrate', 'curve']"
    )


def plan_run(
    model: PrivacyLossModel,
    question: str,
    sigma: float,
    planned: tuple[Stage, ...],
    run: RunSettings,
    executor: Executor,
    *,
    measure: bool,
) -> RunPlan:
    """The plan of ``planned`` stages on ``model`` under ``run``; with ``measure``, timed by
    a small probe at ``sigma`` where the chunks run (on a warm pool worker when there is one)."""
    backend = get_backend(run.backend)
    chunk = run.chunk(model)
    plan = RunPlan(
        question=question,
        stages=planned,
        chunk_size=chunk,
        bytes_per_sample=sample_bytes(model, backend.name),
        memory_budget=run.budget(),
        workers=run.workers,
        fixed_bytes=fixed_bytes(model),
        n_steps=int(model.n_steps),
        # a remote cluster's load is not known here: its workers are taken as free
        cores=None if run.scheduler is not None else expected_cores(run.workers),
    )
    if not measure:
        return plan
    probe = functools.partial(measure_rates, model, sigma, chunk_size=chunk, backend=backend.spec)
    draw, evaluate = call_on_worker(executor, probe)
    return attrs.evolve(plan, draw_seconds=draw, eval_seconds=evaluate)


def announce(plan: Callable[[bool], RunPlan], run: RunSettings) -> RunPlan:
    """Log ``plan(measure=False)`` (warning when the chunks of every worker exceed the memory
    free now), then, with a time limit or INFO logging, ``plan(measure=True)`` with its time
    estimate; refuse a question over ``run.max_seconds``."""
    work = plan(False)
    plan_log.info("plan: %s", work.describe_work())
    free = available_memory()
    local = run.scheduler is None
    if local and free is not None and work.chunk_bytes * run.workers > free:
        plan_log.warning(
            "plan: %d worker(s) x %s per chunk exceed the %s of memory available now; "
            "lower the memory budget or the chunk size",
            run.workers,
            format_bytes(work.chunk_bytes),
            format_bytes(free),
        )
    if run.max_seconds is None and not plan_log.isEnabledFor(logging.INFO):
        return work
    timed = plan(True)
    plan_log.info("plan: %s", timed.describe_time())
    advice = "fewer samples, more workers or an exact accountant"
    refuse_over(run, timed.estimated_seconds, timed.describe_time(), advice)
    return timed


def announce_escort(describe: Callable[[], tuple[str, float | None]], run: RunSettings) -> None:
    """Log an escort run's plan line and refuse it over ``run.max_seconds``; ``describe``
    gives the line and the estimate (:func:`~minsep.accountants.routes.escort_plan`)."""
    if run.max_seconds is None and not plan_log.isEnabledFor(logging.INFO):
        return
    text, estimate = describe()
    plan_log.info("plan: %s", text)
    refuse_over(run, estimate, text, "fewer samples or more workers")


def refuse_over(run: RunSettings, estimate: float | None, text: str, advice: str) -> None:
    """ConfigurationError naming ``max_seconds`` when ``estimate`` exceeds it."""
    if run.max_seconds is None or estimate is None or estimate <= run.max_seconds:
        return
    raise ConfigurationError(
        f"MonteCarloAccountant.max_seconds = {run.max_seconds!r} is exceeded: {text}; must be "
        f">= {estimate:.3g} for this question (or use {advice})",
        parameter="max_seconds",
    )
