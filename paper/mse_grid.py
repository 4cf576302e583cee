"""Calibrating the grid of paper §7.1 (:mod:`minsep.paper.mse_comparison`): every row of
every (epsilon, epoch length) setup by :func:`minsep.framework.compare.compare`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework.compare import ComparisonRow, ComparisonSetup, compare
from minsep.paper.mse_settings import MSESettings
from minsep.paper.options import EngineOptions


@attrs.frozen
class Record:
    """One calibrated row of one setup (epsilon, epoch length)."""

    epsilon_target: float
    epoch_length: int
    row: ComparisonRow


def run_grid(
    settings: MSESettings,
    engine: EngineOptions,
    report: Callable[[str], None] = lambda _: None,
) -> tuple[list[Record], dict[str, Any]]:
    """Calibrate every row of every setup; returns the records and per-family timing."""
    samples = settings.resolved_samples()
    options = engine.accountant_options(samples)
    records: list[Record] = []
    seconds: dict[str, list[float]] = defaultdict(list)
    setups = [(e, length) for e in settings.epsilons for length in settings.epoch_lengths]
    for index, (epsilon, length) in enumerate(setups):
        setup = ComparisonSetup(
            n_steps=settings.n_steps,
            rate=1.0 / length,
            delta=settings.delta,
            epsilon=epsilon,
            bands=settings.bands,
            families=settings.families,
            strategies=settings.strategies,
            accountant_options=options,
        )

        def progress(done: int, total: int, label: str, index: int = index) -> None:
            if label:
                report(f"setup {index + 1}/{len(setups)} row {done + 1}/{total}: {label}")

        report(f"setup {index + 1}/{len(setups)}: epsilon {epsilon:g}, |D|/B {length}")
        for row in compare(setup, progress=progress):
            records.append(Record(epsilon, length, row))
            seconds[f"{row.family}:{row.accountant}"].append(row.seconds)
    timing = {
        key: {"rows": len(v), "total_s": sum(v), "mean_s": sum(v) / len(v)}
        for key, v in sorted(seconds.items())
    }
    return records, timing


__all__ = ["Record", "run_grid"]
