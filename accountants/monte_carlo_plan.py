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
from typing import Protocol

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

__all__ = ["PlainPlanner", "Planner", "announce", "plan_run", "stages"]

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


class Planner(Protocol):
    """How a proposal plans a question before any draw: the work it will do, untimed (None
    where the proposal has no chunked plan to describe), and a timed line with its estimate
    in seconds (None where it cannot be timed). :func:`announce` is the one path that logs a
    plan and refuses it over ``max_seconds``, whatever the proposal."""

    @property
    def advice(self) -> str:
        """What to suggest when the estimate exceeds the time limit."""
        ...

    def work(self) -> RunPlan | None: ...

    def timed(self) -> tuple[str, float | None]: ...


@attrs.frozen
class PlainPlanner:
    """Plain sampling's plan: :func:`plan_run`'s stages, chunks and memory, timed by the
    engine's rate probe (``plan(measure)`` builds it)."""

    plan: Callable[[bool], RunPlan]
    advice: str = "fewer samples, more workers or an exact accountant"

    def work(self) -> RunPlan:
        """The untimed plan."""
        return self.plan(False)

    def timed(self) -> tuple[str, float | None]:
        """The plan timed by a small probe."""
        timed = self.plan(True)
        return timed.describe_time(), timed.estimated_seconds


def announce(planner: Planner, run: RunSettings) -> None:
    """Log ``planner``'s work (warning when the chunks of every worker exceed the memory free
    now), then, with a time limit or INFO logging, its timed line; refuse a question whose
    estimate exceeds ``run.max_seconds``."""
    work = planner.work()
    if work is not None:
        _log_work(work, run)
    if run.max_seconds is None and not plan_log.isEnabledFor(logging.INFO):
        return
    text, estimate = planner.timed()
    plan_log.info("plan: %s", text)
    refuse_over(run, estimate, text, planner.advice)


def _log_work(work: RunPlan, run: RunSettings) -> None:
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


def refuse_over(run: RunSettings, estimate: float | None, text: str, advice: str) -> None:
    """ConfigurationError naming ``max_seconds`` when ``estimate`` exceeds it."""
    if run.max_seconds is None or estimate is None or estimate <= run.max_seconds:
        return
    raise ConfigurationError(
        f"MonteCarloAccountant.max_seconds = {run.max_seconds!r} is exceeded: {text}; must be "
        f">= {estimate:.3g} for this question (or use {advice})",
        parameter="max_seconds",
    )
