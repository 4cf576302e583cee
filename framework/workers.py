"""How many worker processes: an explicit count, or ``"auto"`` (the cores free right now).

``--workers auto`` (and ``workers="auto"`` wherever the API takes a worker count) picks

    max(1, usable CPUs - round(1-minute load average))

where the usable CPUs are those this process may run on (``os.sched_getaffinity``, which a
container's or a batch system's CPU set restricts; ``os.process_cpu_count`` on Python 3.13+;
``os.cpu_count`` elsewhere) and the load average counts the runnable processes of the whole
machine (unknown on Windows: taken as 0). Rounding means a core half used by someone else is
still counted as free. The choice is logged on the ``minsep.plan`` logger (the CLI prints it
with the plan). Results never depend on it: every chunk's randomness is fixed by (seed,
stream, chunk), whatever the worker count.

Defaults. The command line defaults to ``auto`` for the Monte Carlo accountant (a person at a
terminal wants the answer soonest, and the engine's results do not depend on the count); the
Python API keeps explicit integers with default 1 (a library must not spread over a machine
behind its caller's back; callers opt in with ``workers="auto"`` or :func:`resolve_workers`).
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Final

from minsep.framework.errors import ConfigurationError

__all__ = [
    "AUTO",
    "MAX_WORKERS",
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


def _load() -> float:
    """The 1-minute load average (0.0 where the OS does not report one)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return 0.0


def choose_workers(cpus: int | None = None, load: float | None = None) -> int:
    """``max(1, cpus - round(load))``, at most ``MAX_WORKERS``; ``cpus`` and ``load`` default
    to :func:`usable_cpus` and the current 1-minute load average."""
    cpus = usable_cpus() if cpus is None else cpus
    load = _load() if load is None else load
    return min(max(1, cpus - round(load)), MAX_WORKERS)


def expected_cores(workers: int, cpus: int | None = None, load: float | None = None) -> float:
    """The cores a run of ``workers`` busy processes can expect: every runnable process gets
    an equal share of the usable CPUs, so ``workers * min(1, cpus / (load + workers))``, with
    ``load`` the runnable processes already there (the 1-minute load average) and ``cpus``
    :func:`usable_cpus`. A time estimate from CPU rates divides by this."""
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
        _log.info(
            "plan: %s auto = %d (%d usable CPUs, load average %.2f)", parameter, count, cpus, load
        )
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
