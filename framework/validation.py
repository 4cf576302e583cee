"""attrs validators whose messages name the parameter, the value and the allowed range.

Use them on frozen attrs classes so that bad configuration fails at construction time with a
:class:`~minsep.framework.errors.ConfigurationError`::

    @attrs.frozen
    class Poisson:
        rate: float = attrs.field(validator=probability(open_low=True))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from minsep.framework.errors import ConfigurationError

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _owner(instance: Any) -> str:
    return type(instance).__name__


def fail(instance: Any, name: str, value: Any, allowed: str) -> ConfigurationError:
    """Build the standard error: ``Class.name = value is invalid: must be <allowed>``."""
    return ConfigurationError(
        f"{_owner(instance)}.{name} = {value!r} is invalid: must be {allowed}"
    )


def check_range(
    owner: str,
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> None:
    """Raise ConfigurationError unless ``value`` is a finite number in the given interval.

    Usable outside attrs (e.g. for function arguments): ``owner`` names the function or class.
    """
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    interval = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
    kind = "an integer" if integer else "a finite number"
    allowed = f"{kind} in {interval}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            import numpy as np

            if isinstance(value, np.integer | np.floating) and not isinstance(value, np.bool_):
                value = value.item()
            else:
                raise TypeError
        except TypeError:
            raise ConfigurationError(
                f"{owner}.{name} = {value!r} is invalid: must be {allowed}"
            ) from None
    if integer and not isinstance(value, int):
        raise ConfigurationError(f"{owner}.{name} = {value!r} is invalid: must be {allowed}")
    if not math.isfinite(value):
        raise ConfigurationError(f"{owner}.{name} = {value!r} is invalid: must be {allowed}")
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and (value >= high if high_open else value > high)
    if bad_low or bad_high:
        raise ConfigurationError(f"{owner}.{name} = {value!r} is invalid: must be {allowed}")


def number(
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> Validator:
    """Validator: a finite real number in the interval (ends closed unless ``*_open``)."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check_range(
            _owner(instance),
            attribute.name,
            value,
            low=low,
            high=high,
            low_open=low_open,
            high_open=high_open,
        )

    return validate


def integer(*, low: int | None = None, high: int | None = None) -> Validator:
    """Validator: an int (not bool) in ``[low, high]``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check_range(_owner(instance), attribute.name, value, low=low, high=high, integer=True)

    return validate


def positive_int() -> Validator:
    """Validator: an int >= 1."""
    return integer(low=1)


def probability(*, open_low: bool = True, open_high: bool = False) -> Validator:
    """Validator: a probability, by default in (0, 1]."""
    return number(low=0.0, high=1.0, low_open=open_low, high_open=open_high)


def positive() -> Validator:
    """Validator: a finite number > 0."""
    return number(low=0.0, low_open=True)


def optional(validator: Validator) -> Validator:
    """Validator: ``None`` or whatever ``validator`` accepts."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            validator(instance, attribute, value)

    return validate


def one_of(*choices: Any) -> Validator:
    """Validator: one of the listed values."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise fail(instance, attribute.name, value, f"one of {list(choices)!r}")

    return validate
