"""Value checks shared by the audit cases (each returns None or the problem in words)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tests.audit.runner import Check, default_check


def _field(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        raw = value.get(name)
        if isinstance(raw, dict) and set(raw) == {"__float__"}:
            return float(raw["__float__"])
        return raw
    return getattr(value, name, None)


def within(name: str, low: float, high: float) -> Check:
    """The result field ``name`` is a number in ``[low, high]`` (and the default check holds)."""

    def check(value: Any) -> str | None:
        problem = default_check(value)
        if problem:
            return problem
        item = _field(value, name)
        if not isinstance(item, int | float) or not (low <= item <= high):
            return f"{name} = {item!r}, expected in [{low:g}, {high:g}]"
        return None

    return check


def is_type(kind: type, then: Check | None = None) -> Check:
    """The value is an instance of ``kind`` (and ``then`` holds)."""

    def check(value: Any) -> str | None:
        if not isinstance(value, kind):
            return f"returned a {type(value).__name__}, expected a {kind.__name__}"
        return then(value) if then else None

    return check


def finite_positive(value: Any) -> str | None:
    """A finite number > 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a number"
    return None if math.isfinite(number) and number > 0 else f"{number!r} is not finite > 0"


def probability_value(value: Any) -> str | None:
    """A number in [0, 1]."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a number"
    return None if 0.0 <= number <= 1.0 else f"{number!r} is not in [0, 1]"


def stdout_has(*words: str) -> Check:
    """Text output (non-JSON) containing every word."""

    def check(value: Any) -> str | None:
        text = value if isinstance(value, str) else repr(value)
        missing = [w for w in words if w not in text]
        return f"output lacks {missing!r}" if missing else None

    return check


def true_gaussian_delta(sigma: float, epsilon: float) -> float:
    """δ(ε) of the unit-sensitivity Gaussian mechanism, in 60-digit arithmetic (mpmath)."""
    import mpmath

    with mpmath.workdps(60):
        s, e = mpmath.mpf(sigma), mpmath.mpf(epsilon)
        value = mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)
        return float(value)


def all_of(*checks: Check) -> Check:
    """Every check holds."""

    def check(value: Any) -> str | None:
        for one in checks:
            problem = one(value)
            if problem:
                return problem
        return None

    return check


def predicate(description: str, test: Callable[[Any], bool]) -> Check:
    """``test(value)`` is true; ``description`` says what was expected."""

    def check(value: Any) -> str | None:
        try:
            ok = test(value)
        except Exception as exc:
            return f"{description}: check raised {type(exc).__name__}: {exc}"
        return None if ok else f"expected {description}, got {value!r}"[:300]

    return check
