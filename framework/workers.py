"""How many worker processes: an explicit count, or ``"auto"`` (the cores free right now).

``--workers auto`` (and ``workers="auto"`` wherever the API takes a worker count) picks

    max(1, usable CPUs - round(busy CPUs))

where the usable CPUs are those this process may run on (``os.sched_getaffinity``, which a
container's or a batch system's CPU set restricts; ``os.process_cpu_count`` on Python 3.13+;
``os.cpu_count`` elsewhere) and the busy CPUs are what other processes use of them right now:
on Linux, measured from ``/proc/stat`` over :data:`BUSY_WINDOW` seconds on the usable CPUs
alone (every state but idle and iowait counts as busy, a hypervisor's steal included; kept
for :data:`BUSY_KEPT` seconds, so that the plans of one command measure once); elsewhere,
or where ``/proc/stat`` cannot be read, the 1-minute load average of the whole machine
(unknown on Windows: taken as 0). Not the load average where the measurement exists: it
decays over a minute, so a command started right after another saw one core of 2 idle ones
as busy and ran on one worker (``minsep compare`` at delta = 1e-6 took 2,136 s instead of
about 800; docs/performance.md). Rounding means a core half used by someone else is still
counted as free. The choice is logged on the ``minsep.plan`` logger (the CLI prints it with
the plan). Results never depend on it: every chunk's randomness is fixed by (seed, stream,
chunk), whatever the worker count.

Defaults. The command line defaults to ``auto`` for the Monte Carlo accountant (a person at a
terminal wants the answer soonest, and the engine's results do not depend on the count); the
Python API keeps explicit integers with default 1 (a library must not spread over a machine
behind its caller's back; callers opt in with ``workers="auto"`` or :func:`resolve_workers`).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Final

from minsep.framework.errors import ConfigurationError

__all__ = [
    "AUTO",
    "BUSY_KEPT",
    "BUSY_WINDOW",
    "MAX_WORKERS",
    "busy_cpus",
    "choose_workers",
    "expected_cores",
    "parse_workers",
    "resolve_workers",
    "usable_cpus",
]

#: The spelling of the automatic choice.
AUTO: Final = "auto"
#: The largest worker count accepted (explicit or automatic).
MAX_WORKERS: Final = 1024

_log = logging.getLogger("minsep.plan")


def usable_cpus() -> int:
    """CPUs this process may run on (affinity mask where the OS has one), at least 1."""
    count: int | None
    process_cpu_count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if process_cpu_count is not None:
        count = process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - macOS and Windows
        count = os.cpu_count()
    return max(1, int(count or 1))


#: Seconds over which :func:`busy_cpus` measures (``/proc/stat`` counts in 1/100 s ticks).
BUSY_WINDOW: Final = 0.1
#: Seconds a measurement of :func:`busy_cpus` serves later asks in this process.
BUSY_KEPT: Final = 5.0
#: Where Linux reports each CPU's time by state.
PROC_STAT = "/proc/stat"
_measured: list[tuple[float, float]] = []  # (monotonic time, busy CPUs) of the last measurement


def _affinity() -> set[int] | None:
    """The CPU numbers this process may run on, None where the OS does not say."""
    if not hasattr(os, "sched_getaffinity"):  # pragma: no cover - macOS and Windows
        return None
    return set(os.sched_getaffinity(0))


def _cpu_ticks(cpus: set[int]) -> tuple[int, int] | None:
    """``(busy, total)`` ticks summed over the CPUs numbered in ``cpus``, from the ``cpuN``
    lines of :data:`PROC_STAT` (user nice system idle iowait irq softirq steal: idle and
    iowait are not busy); None where the file cannot be read or names none of them."""
    try:
        with open(PROC_STAT, encoding="ascii") as stat:
            lines = stat.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    busy = total = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        ticks = [int(value) for value in rest.split()[:8]]
        total += sum(ticks)
        busy += sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return (busy, total) if total > 0 else None


def busy_cpus(window: float = BUSY_WINDOW) -> float | None:
    """How many of this process's usable CPUs other processes keep busy: the busy share of
    their ticks over the next ``window`` seconds (this process sleeping) times their number;
    None where the OS does not report it (no affinity mask or no ``/proc/stat``)."""
    cpus = _affinity()
    first = None if not cpus else _cpu_ticks(cpus)
    if cpus is None or first is None:
        return None
    time.sleep(window)
    second = _cpu_ticks(cpus)
    if second is None or second[1] <= first[1]:
        return None
    return len(cpus) * (second[0] - first[0]) / (second[1] - first[1])


def _load() -> float:
    """The busy CPUs now (:func:`busy_cpus`, a measurement at most :data:`BUSY_KEPT` seconds
    old), else the 1-minute load average (0.0 where the OS reports neither)."""
    now = time.monotonic()
    if _measured and now - _measured[0][0] <= BUSY_KEPT:
        return _measured[0][1]
    busy = busy_cpus()
    if busy is not None:
        _measured[:] = [(now, busy)]
        return busy
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return 0.0


def choose_workers(cpus: int | None = None, load: float | None = None) -> int:
    """``max(1, cpus - round(load))``, at most ``MAX_WORKERS``; ``cpus`` and ``load`` default
    to :func:`usable_cpus` and the CPUs busy now (module docstring)."""
    cpus = usable_cpus() if cpus is None else cpus
    load = _load() if load is None else load
    return min(max(1, cpus - round(load)), MAX_WORKERS)


def expected_cores(workers: int, cpus: int | None = None, load: float | None = None) -> float:
    """The cores a run of ``workers`` busy processes can expect: every runnable process gets
    an equal share of the usable CPUs, so ``workers * min(1, cpus / (load + workers))``, with
    ``load`` the busy CPUs already there (module docstring) and ``cpus`` :func:`usable_cpus`.
    A time estimate from CPU rates divides by this."""
    cpus = usable_cpus() if cpus is None else cpus
    load = _load() if load is None else load
    return workers * min(1.0, cpus / (max(load, 0.0) + workers))


def resolve_workers(value: object, owner: str = "workers", parameter: str = "workers") -> int:
    """An explicit worker count (an int in [1, ``MAX_WORKERS``], returned as is) or ``"auto"``
    (:func:`choose_workers`, the choice logged on ``minsep.plan``). Anything else is a
    ConfigurationError naming ``owner.parameter``, the value and what is allowed."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        cpus, load = usable_cpus(), _load()
        count = choose_workers(cpus, load)
        _log.info("plan: %s auto = %d (%d usable CPUs, %.2f busy)", parameter, count, cpus, load)
        return count
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ConfigurationError(
            f"{owner}.{parameter} = {value!r} is invalid: must be an integer in "
            f"[1, {MAX_WORKERS}] or {AUTO!r}",
            parameter=parameter,
        )
    return int(value)


def parse_workers(text: str) -> int | str:
    """An argparse type for ``--workers``: ``"auto"`` (kept, resolved when the run starts) or
    an integer in [1, ``MAX_WORKERS``]; raises ArgumentTypeError (a usage error) otherwise."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be an integer in [1, {MAX_WORKERS}] or 'auto'"
        )
    return value
