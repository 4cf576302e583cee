"""One generic registry for schemes, strategies and accountants.

A registry maps a stable name (``"b_min_sep"``) to a class. Entries come from the
``@registry.register("name")`` decorator and from plugins: on first lookup every package entry
point in the registry's group (``minsep.schemes``, ``minsep.strategies``, ``minsep.accountants``)
is loaded. minsep's own implementations are loaded the same way, so built-ins and third-party
plugins are on equal footing. Each entry point loads on its own: one that fails to import is
skipped with one :class:`PluginLoadWarning` line naming it and its error, and everything else
keeps working.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, cast

import attrs

from minsep.framework.errors import ConfigurationError, UnknownNameError

T = TypeVar("T")


class PluginLoadWarning(UserWarning):
    """An installed plugin's entry point failed to load; it was skipped."""


def _warn_failed(kind: str, ep: importlib.metadata.EntryPoint, error: BaseException) -> str:
    """Warn in one line (no source line: ``warn_explicit`` at a pseudo-location) and return
    the reason, kept for :meth:`Registry.get`."""
    reason = f"{type(error).__name__}: {error}".splitlines()[0]
    warnings.warn_explicit(
        f"{kind} plugin {ep.name!r} ({ep.value}) failed to load and is skipped: {reason}",
        PluginLoadWarning,
        filename="minsep",
        lineno=0,
        module="minsep.framework.registry",
    )
    return reason


@attrs.frozen
class Entry(Generic[T]):
    """A registered implementation: its name, class and one-line description."""

    name: str
    cls: type[T]
    description: str


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


class Registry(Generic[T]):
    """Name -> implementation map with entry-point plugin discovery.

    Args:
        kind: human name of what is registered ("scheme"), used in messages.
        base: every registered class must subclass it.
        group: the entry-point group searched for plugins.
    """

    def __init__(self, kind: str, base: type[Any], group: str) -> None:
        self.kind = kind
        self.base = base
        self.group = group
        self._entries: dict[str, Entry[T]] = {}
        self._plugins_loaded = False
        self._failed: dict[str, str] = {}
        self._lock = threading.RLock()

    def register(
        self, name: str, *, replace: bool = False, description: str | None = None
    ) -> Callable[[type[T]], type[T]]:
        """Class decorator registering ``cls`` under ``name``.

        A duplicate name is refused unless ``replace=True``; re-registering the very same class
        (e.g. on module reload) is harmless.
        """
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise ConfigurationError(
                f"{self.kind} name {name!r} is invalid: must be non-empty letters, digits, '_'"
                " or '-'"
            )

        def decorate(cls: type[T]) -> type[T]:
            if not (inspect.isclass(cls) and issubclass(cls, self.base)):
                raise ConfigurationError(
                    f"cannot register {cls!r} as {self.kind} {name!r}: must subclass "
                    f"{self.base.__name__}"
                )
            with self._lock:
                old = self._entries.get(name)
                same = old is not None and (
                    old.cls is cls
                    or (
                        old.cls.__qualname__ == cls.__qualname__
                        and old.cls.__module__ == cls.__module__
                    )
                )
                if old is not None and not replace and not same:
                    raise ConfigurationError(
                        f"{self.kind} name {name!r} is already registered to "
                        f"{old.cls.__module__}.{old.cls.__qualname__}; pass replace=True to "
                        "override it"
                    )
                self._entries[name] = Entry(name, cls, description or _first_line(cls))
                cls.registry_name = name  # type: ignore[attr-defined]
                cls.registry = self  # type: ignore[attr-defined]
            return cls

        return decorate

    def unregister(self, name: str) -> None:
        """Remove ``name`` (mainly for tests registering throw-away implementations)."""
        with self._lock:
            self._entries.pop(name, None)

    def load_plugins(self) -> None:
        """Import every entry point of ``self.group`` once; each import registers classes.

        An entry point may name a module (importing it registers its classes) or a class
        (registered under the entry point's name if it is not registered yet). One that fails
        to load is skipped with a :class:`PluginLoadWarning` (:attr:`failed` keeps why).
        """
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = True
            for ep in importlib.metadata.entry_points(group=self.group):
                try:
                    obj = ep.load()
                except Exception as error:
                    self._failed[ep.name] = _warn_failed(self.kind, ep, error)
                    continue
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, self.base)
                    and obj not in {e.cls for e in self._entries.values()}
                ):
                    self.register(ep.name)(cast(type[T], obj))

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``; the error suggests close names."""
        self.load_plugins()
        if not isinstance(name, str):
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}: a {self.kind} name must be a string, one of "
                f"{', '.join(sorted(self._entries))}"
            )
        entry = self._entries.get(name)
        if entry is None:
            normalised = name.replace("-", "_").lower()
            entry = self._entries.get(normalised)
        if entry is None and name in self._failed:
            raise UnknownNameError(
                f"{self.kind} {name!r} is an installed plugin that failed to load: "
                f"{self._failed[name]}"
            )
        if entry is None:
            close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._entries))})"
            )
        return entry.cls

    @property
    def failed(self) -> dict[str, str]:
        """Entry points that failed to load, mapped to their error (a copy)."""
        self.load_plugins()
        return dict(self._failed)

    def names(self) -> dict[str, str]:
        """Registered names mapped to their one-line descriptions, sorted by name."""
        self.load_plugins()
        return {n: self._entries[n].description for n in sorted(self._entries)}

    def entries(self) -> list[Entry[T]]:
        """All entries, sorted by name."""
        self.load_plugins()
        return [self._entries[n] for n in sorted(self._entries)]

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
