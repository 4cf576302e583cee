"""One setup path: schemes, strategies and accountants built by name for every caller.

The CLI commands, :mod:`minsep.framework.compare`, the trainer and the paper scripts all build
their objects here, through the registries, so that a registered plugin is reachable from each
of them and option handling is the same everywhere:

- :func:`build_scheme`: ``schemes.get(name).from_rate(n_steps, rate, **options)``;
- :func:`build_strategy`: the identity for one band, else the MSE-optimal banded Toeplitz
  strategy (docs/math.md §8);
- :func:`build_accountant`: the accountant with the options it takes; with ``strict`` (the CLI)
  an option it does not take is refused by name instead of being dropped silently;
- :func:`select_accountant`: the named accountant, or for ``"auto"`` the first of
  :func:`preference` that can account the pair: the order comes from what the accountants
  declare (kind, soundness, rank), whether it can from their hooks, never from scheme type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import Accountant, AccountantKind, SamplingScheme, Strategy
from minsep.framework.option_groups import flat_fields, grouped
from minsep.framework.registries import accountants, schemes, strategies

__all__ = [
    "AUTO",
    "BANDED_STRATEGY",
    "IDENTITY_STRATEGY",
    "accountant_fields",
    "accountants_supporting",
    "build_accountant",
    "build_scheme",
    "build_strategy",
    "build_strategy_spec",
    "parse_strategy_spec",
    "preference",
    "select_accountant",
    "strategy_bands",
    "strategy_label",
]

#: Registered strategy for k >= 2 bands (MSE-optimal BandMF).
BANDED_STRATEGY = "banded_toeplitz"
#: Registered strategy for one band (DP-SGD).
IDENTITY_STRATEGY = "identity"
#: The accountant name meaning "the first of :func:`preference` that can".
AUTO = "auto"
#: The order ``auto`` tries the accountant kinds in: exact, then certified Monte Carlo, then
#: the deterministic bounds.
_KIND_ORDER = (AccountantKind.EXACT, AccountantKind.MONTE_CARLO, AccountantKind.BOUND)

#: Builds a registered accountant by name.
AccountantFactory = Callable[[str], Accountant]


def build_scheme(
    name: str, n_steps: int, rate: float, options: Mapping[str, Any] | None = None
) -> SamplingScheme:
    """The registered scheme ``name`` at participation rate p0 = ``rate``.

    ``options`` are the family's ``from_rate`` options; unknown or missing ones raise a
    ConfigurationError naming them (the scheme's ``parameters()``).
    """
    return schemes.get(name).from_rate(n_steps, rate, **dict(options or {}))


def build_strategy(n_steps: int, bands: int) -> Strategy:
    """The identity for ``bands == 1`` (DP-SGD), else the MSE-optimal banded Toeplitz."""
    if bands == 1:
        return strategies.get(IDENTITY_STRATEGY).for_steps(n_steps)
    return strategies.get(BANDED_STRATEGY).for_steps(n_steps, bands=bands)


def parse_strategy_spec(spec: str, owner: str = "strategy") -> tuple[str, dict[str, Any]]:
    """``"name"``, ``"name:key=value:..."`` or ``"name:key=value,..."`` -> ``(name, options)``;
    values are read as int, then float, then kept as text. A piece without ``=`` after a
    ``key=value`` continues its value (``blt:workload=momentum:0.9``). The name must be a
    registered strategy."""
    name, _, rest = spec.partition(":")
    texts: dict[str, str] = {}
    key = ""
    for piece in re.split(r"[:,]", rest) if rest else []:
        option, sep, text = piece.partition("=")
        if sep and option.strip():
            key = option.strip()
            texts[key] = text.strip()
        elif key and not sep:
            texts[key] += ":" + piece.strip()
        else:
            raise ConfigurationError(
                f"{owner} = {spec!r} is invalid: must be name or name:key=value,... "
                f"({piece!r} is not key=value)",
                parameter="strategies",
            )
    options = {k: _spec_value(text) for k, text in texts.items()}
    if name.strip() not in strategies:
        raise ConfigurationError(
            f"{owner} = {spec!r} is invalid: {name!r} is not a registered strategy "
            f"{sorted(strategies.names())}",
            parameter="strategies",
        )
    return name.strip(), options


def _spec_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def build_strategy_spec(spec: str, n_steps: int) -> Strategy:
    """The strategy of a spec (:func:`parse_strategy_spec`) for ``n_steps`` steps:
    ``strategies.get(name).for_steps(n_steps, **options)``."""
    name, options = parse_strategy_spec(spec)
    return strategies.get(name).for_steps(n_steps, **options)


def strategy_bands(strategy: Strategy) -> int:
    """The bands of a banded strategy, 0 for one that is not banded (``is_banded``)."""
    return int(strategy.bands) if strategy.is_banded else 0


def strategy_label(strategy: Strategy) -> str:
    """The registered name, with the bands for a banded strategy (``banded_toeplitz/k=4``)."""
    name = strategy.strategy_name
    bands = strategy_bands(strategy)
    return f"{name}/k={bands}" if bands else name


def accountant_fields(cls: type[Accountant]) -> tuple[str, ...]:
    """The options (attrs init fields, those of its option records included:
    :mod:`~minsep.framework.option_groups`) accountant class ``cls`` takes."""
    return flat_fields(cls)


def build_accountant(
    name: str, options: Mapping[str, Any] | None = None, *, strict: bool = True
) -> Accountant:
    """The registered accountant ``name`` configured with ``options`` (None values skipped).

    ``strict``: an option the accountant does not take raises ConfigurationError naming it
    and the options it does take (what a user who typed it needs to know). Otherwise such
    options are dropped, so one set of Monte Carlo options can serve every row of a
    comparison.
    """
    cls = accountants.get(name)
    taken = accountant_fields(cls)
    given = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(given) - set(taken))
    if unknown and strict:
        flags = ", ".join("--" + u.replace("_", "-") for u in unknown)
        raise ConfigurationError(
            f"accountant {name!r} does not take the option(s) {flags}: they would be ignored. "
            f"Its options: {', '.join(taken) if taken else 'none'}"
        )
    return cls(**grouped(cls, {k: v for k, v in given.items() if k in taken}))


def preference(kinds: Collection[AccountantKind] = _KIND_ORDER) -> tuple[str, ...]:
    """The registered accountants that declare themselves sound (``Accountant.sound``) and
    are of one of ``kinds``, in the order ``auto`` tries them: by kind (exact, Monte Carlo,
    deterministic bound), then by their declared ``rank``, then by name. Plugins included."""
    found = [e for e in accountants.entries() if e.cls.sound and e.cls.kind in kinds]
    found.sort(key=lambda e: (_KIND_ORDER.index(e.cls.kind), e.cls.rank, e.name))
    return tuple(e.name for e in found)


def accountants_supporting(
    scheme: SamplingScheme, strategy: Strategy, options: Mapping[str, Any] | None = None
) -> list[str]:
    """Names of the registered accountants that can account ``(scheme, strategy)``."""
    return [
        entry.name
        for entry in accountants.entries()
        if build_accountant(entry.name, options, strict=False).supports(scheme, strategy)
    ]


def select_accountant(
    name: str,
    scheme: SamplingScheme,
    strategy: Strategy,
    factory: AccountantFactory | None = None,
    order: tuple[str, ...] | None = None,
) -> Accountant:
    """The accountant ``name`` (built by ``factory``), checked to support the pair; for
    ``"auto"`` the first of ``order`` (default :func:`preference`) that does.

    Raises NotAccountableError with each candidate's reason when none can.
    """
    make: AccountantFactory = factory or (lambda n: build_accountant(n, strict=False))
    if name != AUTO:
        accountant = make(name)
        accountant.require(scheme, strategy)
        return accountant
    reasons = []
    for candidate in preference() if order is None else order:
        if candidate not in accountants:
            continue
        accountant = make(candidate)
        reason = accountant.why_not(scheme, strategy)
        if reason is None:
            return accountant
        reasons.append(f"{candidate}: {reason}")
    raise NotAccountableError(
        f"no accountant supports scheme {scheme.name!r} with strategy "
        f"{strategy.public_parameters()['strategy']!r} (" + "; ".join(reasons) + ")"
    )
