"""argparse value types of the accounting commands: numbers, fractions, ranges and sizes.

Each type refuses a bad value with one line naming the value and the allowed range (argparse
prints it with the flag, exit status 2). Rates and probabilities accept fractions (``1/256``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

__all__ = [
    "OPTION_PARSERS",
    "byte_size",
    "int_at_least",
    "literal",
    "noise_multiplier",
    "nonnegative_float",
    "nonnegative_int",
    "parse_float",
    "parse_int",
    "parse_rate",
    "positive_float",
    "positive_int",
    "probability",
    "real",
]

#: ``--memory-budget`` suffixes (binary units).
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def real(text: str) -> float:
    """A real number from a decimal (``0.004``, ``1e-3``, ``inf``) or a fraction (``1/256``).

    Raises ValueError (or ZeroDivisionError for ``1/0``) for text that is neither; a fraction
    too large for a float gives ``inf`` (callers refuse non-finite values with their range),
    never an OverflowError.
    """
    stripped = text.strip()
    try:
        return float(stripped)  # decimals and exponents, without building huge integers
    except ValueError:
        if "/" not in stripped:
            raise
    try:
        return float(Fraction(stripped))
    except OverflowError:
        return math.inf if Fraction(stripped) > 0 else -math.inf


def parse_rate(text: str) -> float:
    """A participation rate in (0, 1]: a decimal (``0.004``) or a fraction (``1/256``)."""
    return _real_in(
        text,
        lambda value: 0.0 < value <= 1.0,
        f"rate = {text!r} is invalid: must be a number or fraction in (0, 1], e.g. 1/256",
        f"rate = {text!r} is invalid: must be in (0, 1]",
    )


def _real_in(text: str, within: Callable[[float], bool], unreadable: str, outside: str) -> float:
    """``text`` read by :func:`real`, refused with the argparse message ``unreadable`` when it
    is not a number and ``outside`` when ``within`` does not hold for it."""
    try:
        value = real(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(unreadable) from None
    if not within(value):
        raise argparse.ArgumentTypeError(outside)
    return value


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= minimum``, with a message naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{text!r} is invalid: must be an integer >= {minimum}"
            )
        return value

    return parse


#: argparse types for counts (>= 1) and seeds (>= 0).
positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)


def probability(text: str) -> float:
    """argparse type: a probability in (0, 1) (fractions accepted)."""
    message = f"{text!r} is invalid: must be in (0, 1)"
    return _real_in(text, lambda value: 0.0 < value < 1.0, message, message)


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (fractions accepted)."""
    return _real_in(
        text,
        lambda value: math.isfinite(value) and value > 0,
        f"{text!r} is invalid: must be a number > 0",
        f"{text!r} is invalid: must be a finite number > 0",
    )


def noise_multiplier(text: str) -> float:
    """argparse type for ``--sigma``: a finite number in [MIN_SIGMA, inf), refused before any
    bound, plan or rate probe runs (a subnormal sigma would overflow the losses)."""
    from minsep.framework.montecarlo.planning import MIN_SIGMA  # lazy: numpy and the engine

    value = positive_float(text)
    if value < MIN_SIGMA:
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be a finite number in [{MIN_SIGMA:g}, inf)"
        )
    return value


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _real_in(
        text,
        lambda value: math.isfinite(value) and value >= 0,
        f"{text!r} is invalid: must be a number >= 0",
        f"{text!r} is invalid: must be a finite number >= 0",
    )


def byte_size(text: str) -> int:
    """argparse type: a number of bytes, optionally with a binary suffix (``512M``, ``2G``,
    ``1.5GiB``), at least 1."""
    body = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = body[-1:] if body[-1:] in _SIZE_UNITS and body[-1:] else ""
    number = body[: len(body) - len(unit)]
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(
            f"{text!r} is invalid: must be a size in bytes >= 1, e.g. 1073741824, 512M or 2G"
        )
    return int(value)


def parse_int(text: str) -> int:
    """A strict integer, as for the other integer flags (``2.0`` and ``4/2`` are refused)."""
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: must be an integer") from None


def parse_float(text: str) -> float:
    """A real number (decimal or fraction), as :func:`real`, for argparse."""
    message = f"{text!r} is invalid: must be a number"
    return _real_in(text, lambda value: True, message, message)


#: The reader of a declared option's value, by its kind (:data:`~minsep.framework.parameters.
#: CLI_KINDS`): the flags generated for schemes', strategies' and accountants' options.
OPTION_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": parse_int,
    "float": parse_float,
    "str": str,
}


def literal(text: str) -> Any:
    """``8`` -> 8, ``0.5``/``1/4`` -> float, ``true``/``false`` -> bool, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return real(text)
    except (ValueError, ZeroDivisionError):
        return text
