"""Helper processes die with the run that started them (no orphans after a kill).

A process pool leaves processes behind when its parent is killed (SIGKILL, or a batch
scheduler's SIGTERM): a worker blocks on its task queue forever, because it holds both ends of
that pipe itself, and the forkserver waits for the end of its "alive" pipe, which every worker
holds too. So each helper watches the run's **main process** directly:

* a pool worker (initializer :func:`init_worker`) starts a watchdog thread that waits for the
  main process to end (``pidfd`` where Linux has one, else polling ``os.kill(pid, 0)`` and
  ``os.getppid()`` every :data:`POLL_SECONDS`) and then ends the worker with ``os._exit``;
  under ``forkserver`` it also asks the kernel (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``)
  for SIGKILL when its parent, the forkserver, dies: that needs no GIL, so a worker stuck in a
  long C call dies too;
* the forkserver imports this module first among its preloads; finding
  :data:`PARENT_ENV` (set by the main process only while it starts the forkserver) equal to
  its parent's id, it asks for SIGKILL at its parent's death (Linux), or starts the same
  watchdog thread elsewhere.

The main process dies -> the forkserver is killed -> every worker is killed; the resource
tracker then reads the end of its pipe (no holder is left) and exits by itself. Death
signals are tied to the *thread* that forked the child, so they are only requested where
that thread lives as long as its process: the forkserver's single thread, and the main
thread of the run for the forkserver itself (:data:`PARENT_ENV` is set only there).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
import time
from typing import Final

__all__ = ["PARENT_ENV", "POLL_SECONDS", "die_with_parent", "init_worker", "watch"]

#: Environment variable naming the main process while it starts the forkserver.
PARENT_ENV: Final = "MINSEP_LIFELINE_PARENT"
#: Seconds between checks of the polling watchdog (where there is no pidfd).
POLL_SECONDS: Final = 0.5
_PR_SET_PDEATHSIG: Final = 1


def die_with_parent(parent: int) -> bool:
    """Ask the kernel for SIGKILL when this process's parent (whose id is ``parent``) dies;
    True when granted (Linux only). Exits at once when the parent is already gone."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        granted = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # died before the request: nobody will signal us
        os._exit(1)
    return bool(granted)


def _wait_pidfd(pid: int) -> bool:
    """Block until ``pid`` ends (True), or False at once where pidfd is unavailable."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return False
    try:
        fd = pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll():
        pass
    return True


def _gone(pid: int, parent: int) -> bool:
    if os.getppid() != parent:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _watchdog(pid: int, parent: int) -> None:
    if not _wait_pidfd(pid):
        while not _gone(pid, parent):
            time.sleep(POLL_SECONDS)
    os._exit(1)


def watch(pid: int) -> threading.Thread:
    """Start a daemon thread that ends this process (``os._exit(1)``) once process ``pid``
    has ended or this process's parent has changed."""
    thread = threading.Thread(
        target=_watchdog, args=(pid, os.getppid()), name="minsep-lifeline", daemon=True
    )
    thread.start()
    return thread


def init_worker(main: int, forkserver: bool) -> None:
    """Pool worker initializer: ignore Ctrl-C (the terminal sends SIGINT to the whole process
    group; the parent alone handles it: checkpoint, one line, exit status 130) and die with
    the run's main process ``main`` (module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if forkserver:
        die_with_parent(os.getppid())
    watch(main)


def _guard_forkserver() -> None:
    """Run on import: in the forkserver (its parent named by :data:`PARENT_ENV`), die with
    the main process."""
    text = os.environ.pop(PARENT_ENV, None)
    if text is None or not text.isdigit() or int(text) != os.getppid():
        return
    if not die_with_parent(int(text)):
        watch(int(text))


_guard_forkserver()
