"""SIGTERM handled like Ctrl-C: raised as :class:`~minsep.framework.errors.Terminated` (a
KeyboardInterrupt) in the main thread, so that a run stopped by ``timeout``, SLURM or
Kubernetes saves its checkpoint and says so exactly as after Ctrl-C (exit status 143 =
128 + SIGTERM instead of 130)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from minsep.framework.errors import Terminated

__all__ = ["INTERRUPT_SIGNALS", "interrupt_handler", "raise_terminated", "sigterm_as_interrupt"]


def raise_terminated(signum: int, frame: Any) -> None:
    """The SIGTERM handler installed by :func:`sigterm_as_interrupt`."""
    raise Terminated


#: The signals that interrupt a run, with the exception each raises.
INTERRUPT_SIGNALS: tuple[tuple[int, type[KeyboardInterrupt]], ...] = (
    (signal.SIGINT, KeyboardInterrupt),
    *(((signal.SIGTERM, Terminated),) if hasattr(signal, "SIGTERM") else ()),
)


def interrupt_handler(signum: int) -> Any:
    """The handler that turns ``signum`` into its interrupt exception."""
    return signal.default_int_handler if signum == signal.SIGINT else raise_terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM raises :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread() or len(INTERRUPT_SIGNALS) < 2:
        yield
        return
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
