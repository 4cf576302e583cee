"""attrs validators whose messages name the parameter, the value and the allowed range.

Use them on frozen attrs classes so that bad configuration fails at construction time with a
:class:`~minsep.framework.errors.ConfigurationError`::

    @attrs.frozen
    class Poisson:
        rate: float = attrs.field(validator=probability(open_low=True))
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _owner(instance: Any) -> str:
    return type(instance).__name__


def fail(instance: Any, name: str, value: Any, allowed: str) -> ConfigurationError:
    """Build the standard error: ``Class.name = value is invalid: must be <allowed>``."""
    return ConfigurationError(
        f"{_owner(instance)}.{name} = {value!r} is invalid: must be {allowed}", parameter=name
    )


def plain_number(value: Any) -> Any:
    """attrs converter: numpy integer and floating scalars to Python ``int`` / ``float``.

    Anything else (including bools, numpy bools and strings) is returned unchanged, for the
    field's validator to accept or refuse, so a field holds the same Python type whether the
    caller passed ``3`` or ``numpy.int64(3)``.
    """
    if isinstance(value, np.integer | np.floating):
        return value.item()
    return value


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
    infinite: bool = False,
) -> Any:
    """Raise ConfigurationError unless ``value`` is a number in the given interval; return it
    as a Python ``int`` or ``float`` (numpy scalars accepted, bools and strings refused).

    The number must be finite unless ``infinite`` (then ``+-inf`` pass when inside the
    interval; NaN never does). Usable outside attrs (e.g. for function arguments): ``owner``
    names the function or class.
    """
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    interval = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
    kind = "an integer" if integer else "a number" if infinite else "a finite number"
    allowed = f"{kind} in {interval}"
    problem = ConfigurationError(
        f"{owner}.{name} = {value!r} is invalid: must be {allowed}", parameter=name
    )
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise problem
    if integer and not isinstance(value, int):
        raise problem
    if isinstance(value, float) and (math.isnan(value) or (math.isinf(value) and not infinite)):
        raise problem
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and (value >= high if high_open else value > high)
    if bad_low or bad_high:
        raise problem
    return value


def check_keywords(
    cls: type, keywords: dict[str, Any], *, owner: str, given: tuple[str, ...] = ()
) -> None:
    """Raise ConfigurationError unless ``cls(**given, **keywords)`` names its parameters right.

    ``given`` are the parameters the caller supplies itself (e.g. ``n_steps`` and ``rate`` of
    ``from_rate``). The error names the first unknown or missing parameter and lists the
    parameters ``cls`` takes (its attrs fields, else its constructor's signature), so that a
    forgotten option fails as a ConfigurationError rather than a TypeError of ``__init__``.
    """
    taken, required = _parameters(cls)
    unknown = sorted(set(keywords) - set(taken))
    if unknown:
        raise ConfigurationError(
            f"{owner}.{unknown[0]} = {keywords[unknown[0]]!r} is invalid: not a parameter of "
            f"{owner} (it takes {', '.join(taken) or 'none'})",
            parameter=unknown[0],
        )
    missing = [p for p in required if p not in keywords and p not in given]
    if missing:
        raise ConfigurationError(
            f"{owner}.{missing[0]} = <missing> is invalid: must be given "
            f"({owner} needs {', '.join(missing)}; it takes {', '.join(taken)})",
            parameter=missing[0],
        )


def public_name(attribute: attrs.Attribute[Any]) -> str:
    """The keyword a field is given by (its ``alias``, e.g. ``bands`` for a private ``_bands``
    beside a base-class property), so errors name what the caller wrote."""
    return attribute.alias or attribute.name


def _parameters(cls: type) -> tuple[list[str], list[str]]:
    """(every keyword ``cls`` takes, those without a default)."""
    if attrs.has(cls):
        fields = [f for f in attrs.fields(cls) if f.init]
        names = [public_name(f) for f in fields]
        required = [public_name(f) for f in fields if f.default is attrs.NOTHING]
        return names, required
    import inspect

    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = [p for p in inspect.signature(cls).parameters.values() if p.kind in kinds]
    return [p.name for p in params], [p.name for p in params if p.default is p.empty]


def number(
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    infinite: bool = False,
) -> Validator:
    """Validator: a finite real number in the interval (ends closed unless ``*_open``); with
    ``infinite``, ``+-inf`` pass too when inside the interval (NaN never does)."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check_range(
            _owner(instance),
            public_name(attribute),
            value,
            low=low,
            high=high,
            low_open=low_open,
            high_open=high_open,
            infinite=infinite,
        )

    return validate


def integer(*, low: int | None = None, high: int | None = None) -> Validator:
    """Validator: an int (not bool) in ``[low, high]``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        name = public_name(attribute)
        check_range(_owner(instance), name, value, low=low, high=high, integer=True)

    return validate


def positive_int() -> Validator:
    """Validator: an int >= 1."""
    return integer(low=1)


def probability(*, open_low: bool = True, open_high: bool = False) -> Validator:
    """Validator: a probability, by default in (0, 1]."""
    return number(low=0.0, high=1.0, low_open=open_low, high_open=open_high)


#: The smallest participation rate accepted: the smallest normal float64 (about 2.2e-308), so
#: that 1/rate and every expected-count quotient stay finite (subnormal rates overflow).
MIN_RATE = sys.float_info.min


def rate() -> Validator:
    """Validator: a participation rate in [MIN_RATE, 1] (a probability whose inverse is a
    finite float)."""
    return number(low=MIN_RATE, high=1.0)


#: The largest step count accepted: the accountants and strategies keep a few float64 arrays of
#: ``n_steps`` values (2**24 steps: 128 MiB each), far above any training run's length.
MAX_STEPS = 1 << 24


def steps() -> Validator:
    """Validator: a step count, an integer in [1, MAX_STEPS]."""
    return integer(low=1, high=MAX_STEPS)


def positive() -> Validator:
    """Validator: a finite number > 0."""
    return number(low=0.0, low_open=True)


def optional(validator: Validator) -> Validator:
    """Validator: ``None`` or whatever ``validator`` accepts."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            validator(instance, attribute, value)

    return validate


def boolean() -> Validator:
    """Validator: ``True`` or ``False`` (a ``bool`` or numpy bool; not 0/1 or strings)."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, bool | np.bool_):
            raise fail(instance, public_name(attribute), value, "True or False")

    return validate


def text() -> Validator:
    """Validator: a ``str``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str):
            raise fail(instance, public_name(attribute), value, "a string")

    return validate


def member(kind: type[Any], value: Any) -> Any:
    """For attrs converters (a named function returning ``member(Kind, value)``): a value of
    the enum ``kind`` to its member; anything else unchanged, for :func:`choice` to refuse
    with the allowed words."""
    try:
        return kind(value)
    except (ValueError, TypeError):
        return value


def choice(kind: type[Any]) -> Validator:
    """Validator: a member of the str-valued enum ``kind`` (the error lists its values)."""
    return one_of(*(m.value for m in kind))


def one_of(*choices: Any) -> Validator:
    """Validator: one of the listed values."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise fail(instance, public_name(attribute), value, f"one of {list(choices)!r}")

    return validate
