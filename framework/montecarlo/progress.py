"""Progress of a sampling stage: a tqdm bar on a terminal, plain lines everywhere else.

A terminal gets the usual carriage-return bar. Scripts, notebooks, CI logs and pipes get
:class:`LineProgress`: whole lines on the stream (``minsep: verify: 40% 400,000/1,000,000
samples, 52,000/s, 7.7 s elapsed, ETA 11.5 s``), one each time another tenth of the work is
done (at most one per ``min_interval`` seconds) and at least one every ``max_interval``
seconds, then a closing line. With the default progress setting (None) lines start only once
a stage has run ``delay`` seconds, so short library calls stay silent; ``progress=False``
silences both kinds.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from tqdm.auto import tqdm

from minsep.framework.montecarlo.planning import format_seconds

__all__ = ["LineProgress", "progress_bar"]

#: With ``progress=None`` on a non-terminal, no line before a stage has run this long (s).
QUIET_DELAY = 10.0


class LineProgress:
    """Plain progress lines for a stream that is not a terminal (module docstring).

    Attributes:
        total: units of work of the stage (samples over both directions).
        description: the stage's name, printed at the start of each line.
        stream: where the lines go (None: ``sys.stderr`` at the time of each line).
        clock: seconds since an arbitrary origin (``time.monotonic``; tests pass a fake).
        delay: no line before this many seconds have passed.
        min_interval: no two lines closer than this (seconds), except the closing one.
        max_interval: a line at least this often (seconds), even without a new tenth.
    """

    def __init__(
        self,
        total: int,
        description: str,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        delay: float = 0.0,
        min_interval: float = 5.0,
        max_interval: float = 30.0,
    ) -> None:
        self.total = max(int(total), 0)
        self.description = description
        self.stream = stream
        self.clock = clock
        self.delay = delay
        self.min_interval = min_interval
        self.max_interval = max_interval
        self.done = 0
        self.lines = 0
        self._start = clock()
        self._last_line = -math.inf
        self._last_tenth = 0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(finished=exc[0] is None)

    def update(self, amount: int) -> None:
        """Record ``amount`` more units done; print a line when one is due."""
        self.done += int(amount)
        now = self.clock()
        elapsed = now - self._start
        if elapsed < self.delay or self.done >= self.total:
            return
        tenth = (10 * self.done) // self.total if self.total else 10
        since = now - self._last_line
        if (tenth > self._last_tenth and since >= self.min_interval) or since >= self.max_interval:
            self._last_tenth = tenth
            self._write(now)

    def close(self, finished: bool = True) -> None:
        """The closing line (only when earlier lines were printed, so quiet stages stay
        quiet)."""
        if self.lines and finished:
            self._write(self.clock())

    def _write(self, now: float) -> None:
        elapsed = now - self._start
        rate = self.done / elapsed if elapsed > 0 else math.inf
        text = (
            f"minsep: {self.description}: {self._percent()} {self.done:,}/{self.total:,} "
            f"samples, {_rate(rate)}/s, {format_seconds(elapsed)} elapsed"
        )
        if self.done < self.total and self.done > 0 and math.isfinite(rate):
            text += f", ETA {format_seconds((self.total - self.done) / rate)}"
        elif self.done >= self.total:
            text += ", done"
        print(text, file=self.stream or sys.stderr, flush=True)
        self.lines += 1
        self._last_line = now

    def _percent(self) -> str:
        return f"{100.0 * self.done / self.total:.0f}%" if self.total else "100%"


def _rate(rate: float) -> str:
    return f"{rate:,.0f}" if math.isfinite(rate) else "inf"


def progress_bar(total: int, progress: bool | None, description: str) -> Any:
    """The progress display of one stage of ``total`` units.

    ``progress`` False: none. On a terminal: a tqdm bar (``None``: after half a second).
    Elsewhere: :class:`LineProgress` (``None``: after :data:`QUIET_DELAY` seconds; ``True``:
    from the start).
    """
    if progress is False:
        return tqdm(total=total, disable=True)
    if sys.stderr.isatty():
        return tqdm(
            total=total,
            desc=description,
            unit="samples",
            unit_scale=True,
            leave=False,
            delay=0.5 if progress is None else 0.0,
            file=sys.stderr,
        )
    return LineProgress(total, description, delay=QUIET_DELAY if progress is None else 0.0)
