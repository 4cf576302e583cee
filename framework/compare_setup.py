"""What :func:`~minsep.framework.compare.compare` compares at: one training setup
(:class:`ComparisonSetup`) and the rows the registered schemes propose for it
(:func:`proposals`, through their ``compare_variants`` hook)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from minsep.framework.errors import (
    ConfigurationError,
)
from minsep.framework.parameters import CompareContext, CompareVariant
from minsep.framework.registries import schemes
from minsep.framework.setup import (
    build_strategy_spec,
    parse_strategy_spec,
    strategy_bands,
)
from minsep.framework.validation import (
    fail,
    number,
    optional,
    probability,
)
from minsep.framework.validation import rate as rate_validator
from minsep.framework.validation import steps as steps_validator

#: The target epsilon of ``minsep compare`` when neither --epsilon nor --sigma is given.
DEFAULT_EPSILON = 2.0


def _int_tuple(value: Any) -> Any:
    """A sequence as a tuple; anything else unchanged, for the validator to refuse by name."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return value
    return tuple(value)


def _optional_int_tuple(value: Any) -> Any:
    return None if value is None else _int_tuple(value)


def _positive_ints(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    ok = (
        isinstance(value, tuple)
        and len(value) > 0
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)
    )
    if not ok:
        raise fail(instance, attribute.name, value, "a non-empty list of integers >= 1")


def _optional_str_tuple(value: Any) -> Any:
    if value is None or isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return value
    return tuple(value)


def _families(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    ok = value is None or (
        isinstance(value, tuple) and len(value) > 0 and all(isinstance(v, str) for v in value)
    )
    if not ok:
        raise fail(instance, attribute.name, value, "None (all) or a non-empty list of names")


def _strategy_specs(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise fail(instance, attribute.name, value, "a list of strategy specs (name:key=value)")
    for spec in value:
        parse_strategy_spec(spec, owner=f"{type(instance).__name__}.{attribute.name}")


@attrs.frozen(kw_only=True)
class ComparisonSetup:
    """One training setup to compare schemes at.

    Attributes:
        n_steps: training steps n.
        rate: participation rate p0 = expected batch size / dataset size (epoch length 1/p0).
        delta: target delta.
        epsilon: target epsilon; sigma is calibrated per row. Exactly one of ``epsilon`` and
            ``sigma`` is given.
        sigma: a fixed noise multiplier; each row reports its certified epsilon.
        bands: the numbers of bands k of the MSE-optimal banded Toeplitz strategies (1 is the
            identity). The DP-SGD row (identity) is always included.
        min_seps: the min-sep values b for b-min-sep (kept when k <= b and b p0 <= 1); None for
            the powers of two from k to 1/p0.
        strategies: extra strategies compared besides the bands grid, as specs ``name`` or
            ``name:key=value:...`` of registered strategies built by ``for_steps(n_steps,
            **options)`` (e.g. ``blt``, ``banded_toeplitz:bands=4:objective=max``). A scheme
            proposes rows for them through ``compare_variants`` (b-min-sep: every feasible b,
            bounded by docs/math.md §2.1 when the strategy is not banded).
        families: the row families to include (registered scheme names, or a family a
            scheme declares such as ``unamplified``); None for every registered scheme's
            rows. Unknown names are refused with the list of available ones.
        accountant_options: fields given to every accountant that has them (e.g. ``samples``,
            ``seed``, ``backend`` of the Monte Carlo accountant).
        precision: without ``samples`` in ``accountant_options``: the relative precision each
            Monte Carlo row's samples (and route: plain or escort) are chosen for, per row, as
            ``minsep epsilon`` does (docs/math.md §7.3); None keeps the accountant's own
            samples.
        max_seconds: the estimated time a Monte Carlo row may take: chosen samples are cut to
            fit (down to precision 0.3); a row that cannot fit is not evaluated, its note says
            what it would need. None: no limit.
    """

    n_steps: int = attrs.field(default=1024, validator=steps_validator())
    rate: float = attrs.field(default=1 / 256, validator=rate_validator())
    delta: float = attrs.field(default=1e-3, validator=probability(open_high=True))
    epsilon: float | None = attrs.field(default=None, validator=optional(number(low=0.0)))
    sigma: float | None = attrs.field(
        default=None, validator=optional(number(low=0.0, low_open=True))
    )
    bands: tuple[int, ...] = attrs.field(
        default=(1, 4, 8), converter=_int_tuple, validator=_positive_ints
    )
    min_seps: tuple[int, ...] | None = attrs.field(
        default=None, converter=_optional_int_tuple, validator=optional(_positive_ints)
    )
    families: tuple[str, ...] | None = attrs.field(
        default=None, converter=_optional_str_tuple, validator=_families
    )
    strategies: tuple[str, ...] = attrs.field(
        default=(), converter=_optional_str_tuple, validator=_strategy_specs
    )
    accountant_options: Mapping[str, Any] = attrs.field(factory=dict)
    precision: float | None = attrs.field(
        default=None, validator=optional(number(low=0.0, low_open=True))
    )
    max_seconds: float | None = attrs.field(
        default=None, validator=optional(number(low=0.0, low_open=True))
    )

    def __attrs_post_init__(self) -> None:
        if (self.epsilon is None) == (self.sigma is None):
            raise ConfigurationError(
                f"ComparisonSetup.epsilon = {self.epsilon!r} and sigma = {self.sigma!r} are "
                "invalid: give exactly one (a target epsilon to calibrate, or a fixed sigma)"
            )
        if self.families is not None:
            known = (*available_families(self), *schemes.names())
            unknown = [f for f in self.families if f not in known]
            if unknown:
                raise ConfigurationError(
                    f"ComparisonSetup.families = {list(self.families)!r} is invalid: "
                    f"{', '.join(map(repr, unknown))} not among the registered schemes and "
                    f"the families they propose {sorted(set(known))}"
                )

    @property
    def epoch_length(self) -> float:
        """|D| / E|B| = 1 / p0."""
        return 1.0 / self.rate

    def context(self) -> CompareContext:
        """What schemes see when they propose their rows (``compare_variants``)."""
        grid = tuple(sorted(set(self.bands)))
        return CompareContext(
            n_steps=self.n_steps,
            rate=self.rate,
            bands=grid,
            min_seps={k: self.min_seps_for(k) for k in grid},
            strategies={
                spec: self.min_seps_for(strategy_bands(build_strategy_spec(spec, self.n_steps)))
                for spec in self.strategies
            },
        )

    def min_seps_for(self, bands: int) -> tuple[int, ...]:
        """The feasible min-sep values b for ``bands``: k <= b and b p0 <= 1."""
        top = math.floor(self.epoch_length * (1 + 1e-12))
        if self.min_seps is None:
            grid = [2**e for e in range(top.bit_length() + 1) if 2**e <= top]
        else:
            grid = sorted(set(self.min_seps))
        return tuple(b for b in grid if bands <= b <= top)


@attrs.frozen
class Proposal:
    """A scheme's row proposal with where it goes in the table."""

    rank: int
    scheme: str
    variant: CompareVariant

    @property
    def family(self) -> str:
        return self.variant.family or self.scheme

    def label(self) -> str:
        return self.variant.label or schemes.get(self.scheme).display_name()


def proposals(setup: ComparisonSetup) -> list[Proposal]:
    """Every registered scheme's rows for ``setup``, in table order (rank, then proposal
    order within a scheme)."""
    context = setup.context()
    out = []
    for entry in schemes.entries():
        for variant in entry.cls.compare_variants(context):
            rank = entry.cls.compare_rank if variant.rank is None else variant.rank
            out.append(Proposal(rank, entry.name, variant))
    return sorted(out, key=lambda p: p.rank)  # stable: keeps each scheme's own order


def available_families(setup: ComparisonSetup) -> tuple[str, ...]:
    """The families the registered schemes propose rows for at ``setup``, in table order."""
    return tuple(dict.fromkeys(p.family for p in proposals(setup)))
