"""Argument checks at the public boundary of every accountant.

``Accountant.epsilon(scheme, strategy, sigma, delta)``, ``delta(scheme, strategy, sigma,
epsilon)`` and ``calibrate(scheme, strategy, epsilon, delta)`` are the questions an accountant
answers (plus ``curve(scheme, strategy, sigma, ...)`` where an accountant offers it).
:func:`checked_question` wraps such a method so that, before any work, its arguments are
checked the same way for every accountant (built-in or plugin):

- ``scheme`` must be a :class:`~minsep.framework.interfaces.SamplingScheme` and ``strategy`` a
  :class:`~minsep.framework.interfaces.Strategy` (swapped or None arguments fail here with a
  ConfigurationError naming the argument, not with an AttributeError deep inside);
- ``sigma`` must be a finite number > 0, ``delta`` one in (0, 1), ``epsilon`` one >= 0; strings
  and bools are refused, numpy scalars are accepted and passed on as Python floats.

:class:`~minsep.framework.interfaces.Accountant` applies the wrapper to its subclasses'
questions (``Accountant.__init_subclass__``), so no accountant has to remember it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range

__all__ = ["QUESTIONS", "check_question", "checked_question"]

F = TypeVar("F", bound=Callable[..., Any])

#: The accountant methods whose arguments are checked.
QUESTIONS: tuple[str, ...] = ("epsilon", "delta", "calibrate", "curve")

#: Numeric arguments of the questions: check_range keywords of their allowed ranges.
_NUMBERS: dict[str, dict[str, Any]] = {
    "sigma": {"low": 0.0, "low_open": True},
    "delta": {"low": 0.0, "high": 1.0, "low_open": True, "high_open": True},
    "epsilon": {"low": 0.0},
}

_MARK = "__minsep_checked__"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_question(owner: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Check the named arguments of a question; return them with numbers as Python floats.

    ``owner`` names the method (``"PLDAccountant.epsilon"``). Arguments other than
    ``scheme``, ``strategy``, ``sigma``, ``delta`` and ``epsilon`` pass unchanged.
    """
    from minsep.framework.interfaces import SamplingScheme, Strategy

    order = ", ".join(name for name in arguments if name != "self")
    kinds = {"scheme": SamplingScheme, "strategy": Strategy}
    out = dict(arguments)
    for name, kind in kinds.items():
        if name in arguments and not isinstance(arguments[name], kind):
            value = arguments[name]
            raise ConfigurationError(
                f"{owner}.{name} = {_short(value)} is invalid: must be a {kind.__name__} "
                f"(got {type(value).__name__}; the arguments are ({order}))",
                parameter=name,
            )
    for name, limits in _NUMBERS.items():
        if name in arguments:
            out[name] = float(check_range(owner, name, arguments[name], **limits))
    return out


def checked_question(method: F) -> F:
    """Wrap an accountant question so that :func:`check_question` runs first (idempotent)."""
    if getattr(method, _MARK, False):
        return method
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        owner = f"{type(self).__name__}.{method.__name__}"
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise ConfigurationError(
                f"{owner} arguments are invalid: {exc} (signature {signature})"
            ) from None
        bound.arguments.update(check_question(owner, dict(bound.arguments)))
        return method(*bound.args, **bound.kwargs)

    setattr(wrapper, _MARK, True)
    return wrapper  # type: ignore[return-value]
