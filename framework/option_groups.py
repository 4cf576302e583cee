"""Options grouped into records: one attrs field that holds a frozen record of options.

An accountant may hold some of its options in a record (the Monte Carlo accountant's
:class:`~minsep.accountants.monte_carlo_run.RunSettings`): an attrs field with
``metadata={GROUP: record class}`` and the converter :func:`to_record`. The command
line, :func:`~minsep.framework.setup.build_accountant` and :func:`configure` still see one
flat set of option names: the record's own field names stand for themselves, so
``workers=4`` reaches ``run.workers``. Names are unique across an object and its records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

import attrs

from minsep.framework import validation as v
from minsep.framework.errors import ConfigurationError
from minsep.framework.parameters import Parameter, parameters_of

__all__ = [
    "GROUP",
    "configure",
    "flat_fields",
    "flat_options",
    "flat_parameters",
    "grouped",
    "groups",
    "to_record",
]

T = TypeVar("T")
#: Field metadata key marking a field as a group of options (its value: the record class).
GROUP = "minsep_option_group"


def to_record(cls: type[T], field: str, value: Any) -> T:
    """For the attrs converter of the field ``field`` (``"Owner.name"``) holding a ``cls``
    record: a ``cls``, a mapping of its options, or None for its defaults (unknown options
    are refused by name)."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{field} = {value!r} is invalid: must be a {cls.__name__} or a mapping of its options",
            parameter=field.rsplit(".", 1)[-1],
        )
    options = dict(value)
    v.check_keywords(cls, options, owner=cls.__name__)
    return cls(**options)


def groups(cls: type) -> dict[str, type]:
    """``{field: record class}`` of the option groups of attrs class ``cls``."""
    if not attrs.has(cls):
        return {}
    return {f.name: f.metadata[GROUP] for f in attrs.fields(cls) if GROUP in f.metadata}


def flat_fields(cls: type) -> tuple[str, ...]:
    """The option names ``cls`` takes: its init fields, each group replaced by its record's."""
    if not attrs.has(cls):
        return ()
    found = groups(cls)
    names: list[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        if field.name in found:
            names += [f.name for f in attrs.fields(found[field.name]) if f.init]
        else:
            names.append(field.name)
    return tuple(names)


def flat_parameters(cls: type) -> tuple[Parameter, ...]:
    """The documented options of ``cls`` (:func:`~minsep.framework.parameters.parameters_of`),
    each group replaced by its record's."""
    found = groups(cls)
    out: list[Parameter] = []
    for parameter in parameters_of(cls):
        record = found.get(parameter.name)
        out += parameters_of(record) if record is not None else [parameter]
    return tuple(out)


def flat_options(obj: Any) -> dict[str, Any]:
    """``attrs.asdict(obj)`` with each option group's options in place of the group."""
    found = groups(type(obj))
    out: dict[str, Any] = {}
    for name, value in attrs.asdict(obj, recurse=True).items():
        out.update(value if name in found else {name: value})
    return out


def grouped(cls: type, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` (flat names) as constructor keywords of ``cls``: the options of each group
    gathered into a mapping under the group's field (a record given whole stays whole)."""
    out = dict(options)
    for name, record in groups(cls).items():
        inner = {f.name for f in attrs.fields(record) if f.init}
        given = {k: out.pop(k) for k in list(out) if k in inner}
        if given:
            base = out.get(name)
            if isinstance(base, record):
                out[name] = attrs.evolve(cast(Any, base), **given)
            else:
                out[name] = {**(base or {}), **given}
    return out


def configure(obj: T, **changes: Any) -> T:
    """``attrs.evolve(obj, ...)`` with flat option names: a change to a grouped option
    evolves the record that holds it."""
    found = groups(type(obj))
    direct = grouped(type(obj), changes)
    for name in found:
        if isinstance(direct.get(name), Mapping):
            direct[name] = attrs.evolve(cast(Any, getattr(obj, name)), **direct[name])
    return attrs.evolve(cast(Any, obj), **direct)  # type: ignore[no-any-return]
