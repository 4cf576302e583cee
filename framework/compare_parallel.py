"""Rows of a comparison on several processes at once (:func:`~minsep.framework.compare.compare`).

A Monte Carlo row spends much of its time in the parent process (forward passes of the escort
law, the route's locating pilot, the add-direction bound), so giving one row several chunk
workers leaves cores idle. With ``workers`` >= 2 and at least two Monte Carlo rows, the rows
themselves run on a process pool of that many workers instead, each row's accountant on one
worker (``workers = 1``). Every row is a pure function of the setup and its index (its draws are
seeded by chunk, the same bits on any executor), so the table is the same as the serial one;
rows are submitted at once, the likely slow ones first (a long row started last would hold up
the end), and put back in table order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from minsep.framework.compare_plan import RowPlan
from minsep.framework.compare_row import ComparisonRow
from minsep.framework.compare_setup import ComparisonSetup
from minsep.framework.workers import resolve_workers

__all__ = ["RowTask", "parallel_rows", "row_processes"]

#: The accountant whose rows are worth a process of their own.
MONTE_CARLO = "monte_carlo"
#: Executors under which rows may run in parallel (not a Dask cluster: it has its own workers).
_LOCAL_EXECUTORS = (None, "local", "processes")


def row_processes(setup: ComparisonSetup, items: Sequence[RowPlan]) -> int:
    """How many rows run at once: the accountants' ``workers`` (``auto`` resolved) when at
    least two rows are Monte Carlo and no Dask executor is asked for; else 1 (serial)."""
    options = setup.accountant_options
    if options.get("executor") not in _LOCAL_EXECUTORS or options.get("scheduler"):
        return 1
    if sum(item.accountant == MONTE_CARLO for item in items) < 2:
        return 1
    workers = options.get("workers")
    if workers is None:
        return 1
    return max(1, min(resolve_workers(workers), len(items)))


@attrs.frozen
class RowTask:
    """Row ``index`` of ``items`` evaluated with ``evaluate(setup, item)`` (picklable: the
    callable is a module-level function)."""

    setup: ComparisonSetup
    items: tuple[RowPlan, ...]
    evaluate: Callable[[ComparisonSetup, RowPlan], ComparisonRow]

    def __call__(self, index: int) -> ComparisonRow:
        return self.evaluate(self.setup, self.items[index])


def _cost_hint(setup: ComparisonSetup, item: RowPlan) -> float:
    """A rough rank of a row's cost, to start the slow rows first (scheduling only): exact rows
    0, Monte Carlo rows their min-sep b (a larger b: fewer affordable escort orders), 1 where
    b p0 >= 1 (the example participates once per b steps: a cheap escort)."""
    if item.accountant != MONTE_CARLO:
        return 0.0
    b = item.scheme.min_separation
    return 1.0 if b * setup.rate >= 1.0 else float(b)


def parallel_rows(
    setup: ComparisonSetup,
    items: Sequence[RowPlan],
    processes: int,
    evaluate: Callable[[ComparisonSetup, RowPlan], ComparisonRow],
) -> Iterator[tuple[int, ComparisonRow]]:
    """``(index, row)`` for every row of ``items`` as they finish (the slow ones submitted
    first), evaluated ``processes`` at a time, each row's accountant on one worker."""
    from minsep.framework.montecarlo.executors import ProcessExecutor

    single: dict[str, Any] = {**setup.accountant_options, "workers": 1, "executor": "local"}
    task = RowTask(attrs.evolve(setup, accountant_options=single), tuple(items), evaluate)
    order = sorted(range(len(items)), key=lambda i: -_cost_hint(setup, items[i]))
    pool = ProcessExecutor(max_workers=processes, ahead=max(1, -(-len(items) // processes)))
    yield from zip(order, pool.map(task, order), strict=True)
