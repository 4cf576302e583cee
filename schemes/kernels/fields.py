"""Shared attrs converters and validators of the loss models (errors name parameter, value and
allowed range; raised at construction)."""

from __future__ import annotations

import math
from typing import Any

from minsep.framework.validation import fail


def as_coefficients(value: Any) -> Any:
    """attrs converter: any sequence of reals -> tuple of floats (left unchanged if it is not
    one, so that the validator reports it)."""
    if isinstance(value, str | bytes):
        return value
    try:
        items = [float(v) for v in value]
    except (TypeError, ValueError):
        return value
    if any(isinstance(v, bool) for v in value):
        return value
    return tuple(items)


def coefficients_validator(instance: Any, attribute: Any, value: Any) -> None:
    """attrs validator: a non-empty tuple of finite, non-negative floats, not all zero.

    The mechanism needs C lower-triangular with non-negative entries (docs/math.md §1); the models
    do not normalise c (the oracles of docs/math.md use ``c = [1, .5]``).
    """
    allowed = "a non-empty sequence of finite non-negative reals, not all zero"
    if not isinstance(value, tuple) or not value or not all(type(v) is float for v in value):
        raise fail(instance, attribute.name, value, allowed)
    if not all(math.isfinite(v) and v >= 0 for v in value) or not any(v > 0 for v in value):
        raise fail(instance, attribute.name, value, allowed)


def check_bands_fit(instance: Any, coefficients: tuple[float, ...], min_sep: int) -> None:
    """Theorem 5.1 needs min-sep >= number of bands, so participations have disjoint blocks."""
    if len(coefficients) > min_sep:
        raise fail(
            instance,
            "min_sep",
            min_sep,
            f">= len(coefficients) = {len(coefficients)} (the recursion of Theorem 5.1 needs "
            "the min-separation to be at least the number of bands)",
        )


def boolean(instance: Any, attribute: Any, value: Any) -> None:
    """attrs validator: exactly ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise fail(instance, attribute.name, value, "a bool (True or False)")
