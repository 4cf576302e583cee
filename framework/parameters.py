"""What a scheme declares about itself: its ``from_rate`` options and its ``compare`` rows.

A scheme's public parameters are its attrs fields. :func:`parameters_of` turns them into
:class:`Parameter` records (name, kind, default, help text from the class docstring's
``Attributes:`` section), leaving out ``n_steps``, ``rate`` and the fields that ``from_rate``
derives from the rate (``SamplingScheme.derived_from_rate``). The same records drive the option
check of ``from_rate``, the ``minsep`` command-line flags and ``minsep list``, so a new scheme
needs no edit anywhere else to be configurable by name.

:class:`CompareVariant` is one row a scheme asks ``compare`` to evaluate: its ``from_rate``
options, the strategy's bands, the table label and, optionally, a fixed accountant.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from minsep.framework.validation import public_name

__all__ = [
    "CLI_KINDS",
    "CompareContext",
    "CompareVariant",
    "Parameter",
    "attribute_docs",
    "parameters_of",
]

#: Parameter kinds that can be given on the command line (``--name value``).
CLI_KINDS: tuple[str, ...] = ("int", "float", "bool", "str")

#: Fields every scheme has and ``from_rate`` takes positionally.
_POSITIONAL = ("n_steps", "rate")


@attrs.frozen
class Parameter:
    """One ``from_rate`` option of a scheme.

    Attributes:
        name: the keyword (``min_sep``); the command-line flag is ``--min-sep``.
        kind: ``int``, ``float``, ``bool``, ``str`` (settable from the command line) or
            ``object`` (Python only, e.g. an attribution graph or a base scheme object).
        required: True when the option has no default.
        default: the default value (None when required).
        help: one line for ``--help`` and ``minsep list``.
    """

    name: str
    kind: str
    required: bool
    default: Any = None
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the name with ``-`` for ``_``."""
        return "--" + self.name.replace("_", "-")

    def describe(self) -> str:
        """``min_sep (int, required): ...`` for listings."""
        state = "required" if self.required else f"default {self.default!r}"
        return f"{self.name} ({self.kind}, {state}): {self.help}".rstrip(": ")


def attribute_docs(cls: type) -> dict[str, str]:
    """``name -> text`` from the ``Attributes:`` sections of ``cls`` and its bases.

    Google-style: ``name: text`` lines indented under ``Attributes:``, continuation lines
    indented deeper. The nearest class wins.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        text = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        lines = text.splitlines()
        inside, current, indent = False, None, 0
        for line in lines:
            if line.strip() == "Attributes:":
                inside, current = True, None
                continue
            if not inside:
                continue
            if not line.strip():
                current = None
                continue
            width = len(line) - len(line.lstrip())
            if width == 0:
                inside = False
                continue
            match = re.match(r"\s+(\w+)(?: \([^)]*\))?:\s*(.*)", line)
            if match and (current is None or width <= indent):
                current, indent = match.group(1), width
                docs[current] = match.group(2).replace("``", "").strip()
            elif current is not None:
                docs[current] = f"{docs[current]} {line.strip()}".replace("``", "").strip()
    return docs


def _kind(annotation: Any) -> str:
    """The parameter kind of an attrs field annotation (a string under PEP 563)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    text = text.replace(" ", "")
    for kind in ("bool", "int", "float", "str"):
        if text in (kind, f"{kind}|None", f"None|{kind}"):
            return kind
    return "object"


def parameters_of(cls: type, derived: Sequence[str] = ()) -> tuple[Parameter, ...]:
    """The ``from_rate`` options of an attrs scheme class: its fields less the positional
    ``n_steps``/``rate`` and the ``derived`` ones, in field order."""
    if not attrs.has(cls):
        return ()
    docs = attribute_docs(cls)
    skip = set(_POSITIONAL) | set(derived)
    out = []
    for field in attrs.fields(cls):
        name = public_name(field)
        if name in skip or not field.init:
            continue
        required = field.default is attrs.NOTHING
        default = None
        if not required:
            factory = getattr(field.default, "factory", None)
            default = factory() if callable(factory) else field.default
        out.append(
            Parameter(
                name=name,
                kind=_kind(field.type),
                required=required,
                default=default,
                help=docs.get(name, docs.get(field.name, "")),
            )
        )
    return tuple(out)


@attrs.frozen(kw_only=True)
class CompareContext:
    """What a scheme needs to know to propose ``compare`` rows.

    Attributes:
        n_steps: training steps n.
        rate: participation rate p0 (epoch length 1/p0).
        bands: the bands values of the comparison grid, sorted.
        min_seps: ``bands -> feasible min-sep values b`` (k <= b <= 1/p0) of the grid.
        strategies: the extra strategies compared besides the bands grid (specs such as
            ``"blt"`` or ``"banded_toeplitz:bands=4:objective=max"``), each mapped to its
            feasible min-sep values b (every b of the grid up to 1/p0 for a strategy that is
            not banded, b >= its bands otherwise).
    """

    n_steps: int
    rate: float
    bands: tuple[int, ...]
    min_seps: Mapping[int, tuple[int, ...]]
    strategies: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)

    @property
    def epoch_length(self) -> int:
        """``floor(1/p0)`` (with a relative slack of 1e-12): one participation per epoch."""
        return int(1.0 / self.rate * (1 + 1e-12))


@attrs.frozen(kw_only=True)
class CompareVariant:
    """One row a scheme asks ``compare`` to evaluate.

    Attributes:
        bands: the bands k of the strategy (1 is the identity, DP-SGD); ignored when
            ``strategy`` is given.
        strategy: a strategy spec of ``CompareContext.strategies`` instead of the bands grid's
            MSE-optimal banded Toeplitz strategy.
        options: the ``from_rate`` options of the row.
        label: the row's label in the table (default: the scheme's label).
        family: the name ``--schemes`` selects the row by (default: the scheme's name).
        accountant: a fixed accountant (default: the first that can, in preference order).
        rank: table position of the row's group (smaller first; default: the scheme's).
    """

    bands: int
    options: Mapping[str, Any] = attrs.field(factory=dict)
    strategy: str | None = None
    label: str | None = None
    family: str | None = None
    accountant: str | None = None
    rank: int | None = None
