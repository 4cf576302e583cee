"""Small output helpers shared by the library and the ``minsep`` command."""

from __future__ import annotations

import math
import sys

__all__ = ["fmt", "warn"]


def fmt(value: float | None, digits: int = 6) -> str:
    """A float for humans: ``inf``/``-`` aware, ``digits`` significant digits."""
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


def warn(message: str) -> None:
    """One line on stderr, prefixed ``minsep:``."""
    print(f"minsep: {message}", file=sys.stderr)
