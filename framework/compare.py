"""Cross-scheme comparison: every scheme at one training setup, at equal expected batch size.

For one setup (n steps, participation rate p0 = E|B|/|D|, delta) and either a target epsilon (the
noise multiplier is calibrated per row) or a fixed sigma, :func:`compare` evaluates

- DP-SGD: Poisson sampling with the identity strategy (always, whatever the bands grid);
- cyclic Poisson BandMF with b = bands groups, for each bands value;
- balls-in-bins BandMF, for each bands value;
- b-min-sep BandMF for each bands value k and each min-sep b (default: the powers of two with
  k <= b <= 1/p0);
- unamplified BandMF: the Gaussian mechanism for one participation per epoch (min-sep
  floor(1/p0), at most ceil(n / min-sep) participations).

Each row is accounted by the first registered accountant that can account it, in the order
exact PLD, Monte Carlo, unamplified Gaussian (the unamplified row always by the Gaussian one);
which accountant can is decided by the schemes' and accountants' hooks. Utility is the
prefix-sum MSE of docs/math.md §8, ``MSE = (1/n) ||A C^-1||_F^2 sigma^2`` (sigma already includes
the sensitivity for the unamplified row), reported with its ratio to the best row.

The library entry point is :func:`compare` (paper scripts call it); the ``minsep compare``
command (:mod:`minsep.framework.cli.compare_command`) is a thin wrapper printing a table,
``--json`` or ``--csv``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from minsep.framework.cli.common import (
    BANDED_STRATEGY,
    IDENTITY_STRATEGY,
    fmt,
    warn,
)
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.registries import accountants, schemes, strategies
from minsep.framework.validation import (
    fail,
    number,
    optional,
    positive_int,
    probability,
)

#: The families compared, in table order.
FAMILIES: tuple[str, ...] = (
    "poisson",
    "cyclic_poisson",
    "balls_in_bins",
    "b_min_sep",
    "unamplified",
)

#: The target epsilon of ``minsep compare`` when neither --epsilon nor --sigma is given.
DEFAULT_EPSILON = 2.0

#: Accountants tried, in order, for a row without a fixed accountant.
PREFERENCE: tuple[str, ...] = ("pld", "monte_carlo", "gaussian")

_LABELS = {
    "poisson": "DP-SGD (Poisson)",
    "cyclic_poisson": "cyclic Poisson",
    "balls_in_bins": "balls-in-bins",
    "b_min_sep": "b-min-sep",
    "unamplified": "unamplified BandMF",
}


def _int_tuple(value: Any) -> Any:
    """A sequence as a tuple; anything else unchanged, for the validator to refuse by name."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return value
    return tuple(value)


def _str_tuple(value: Iterable[str]) -> tuple[str, ...]:
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


def _families(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value or any(f not in FAMILIES for f in value):
        raise fail(instance, attribute.name, value, f"a non-empty subset of {list(FAMILIES)}")


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
        families: which of :data:`FAMILIES` to include.
        accountant_options: fields given to every accountant that has them (e.g. ``samples``,
            ``seed``, ``backend`` of the Monte Carlo accountant).
    """

    n_steps: int = attrs.field(default=1024, validator=positive_int())
    rate: float = attrs.field(default=1 / 256, validator=probability())
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
    families: tuple[str, ...] = attrs.field(
        default=FAMILIES, converter=_str_tuple, validator=_families
    )
    accountant_options: Mapping[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if (self.epsilon is None) == (self.sigma is None):
            raise ConfigurationError(
                f"ComparisonSetup.epsilon = {self.epsilon!r} and sigma = {self.sigma!r} are "
                "invalid: give exactly one (a target epsilon to calibrate, or a fixed sigma)"
            )

    @property
    def epoch_length(self) -> float:
        """|D| / E|B| = 1 / p0."""
        return 1.0 / self.rate

    def min_seps_for(self, bands: int) -> tuple[int, ...]:
        """The feasible min-sep values b for ``bands``: k <= b and b p0 <= 1."""
        top = math.floor(self.epoch_length * (1 + 1e-12))
        if self.min_seps is None:
            grid = [2**e for e in range(top.bit_length() + 1) if 2**e <= top]
        else:
            grid = sorted(set(self.min_seps))
        return tuple(b for b in grid if bands <= b <= top)


@attrs.frozen(kw_only=True)
class ComparisonRow:
    """One (scheme, bands, min-sep) combination and its accounting.

    ``sigma``, ``epsilon``, ``mse`` and ``mse_ratio`` are None when the row could not be
    certified (``note`` says why). ``epsilon`` is the certified epsilon: the exact epsilon at
    ``sigma`` for exact accountants, the calibration target for Monte Carlo calibration (which
    holds except with ``failure_probability``, folded into delta by Algorithm 5).
    """

    family: str
    label: str
    scheme: str
    bands: int
    min_sep: int
    accountant: str
    method: str
    delta: float
    sigma: float | None
    epsilon: float | None
    mse: float | None
    mse_ratio: float | None = None
    failure_probability: float = 0.0
    seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/CSV ready)."""
        return attrs.asdict(self)


@attrs.frozen
class _Plan:
    family: str
    scheme: SamplingScheme
    strategy: Strategy
    accountant: str


#: Called before each row and once at the end: ``(rows done, rows total, next row's label)``.
Progress = Callable[[int, int, str], None]


def strategy_for(n_steps: int, bands: int) -> Strategy:
    """The identity for one band, else the MSE-optimal banded Toeplitz strategy."""
    if bands == 1:
        return strategies.get(IDENTITY_STRATEGY).for_steps(n_steps)
    return strategies.get(BANDED_STRATEGY).for_steps(n_steps, bands=bands)


def make_accountant(name: str, options: Mapping[str, Any]) -> Accountant:
    """The registered accountant ``name`` given those ``options`` that are its attrs fields."""
    cls = accountants.get(name)
    fields = {f.name for f in attrs.fields(cls)} if attrs.has(cls) else set()
    return cls(**{k: v for k, v in options.items() if k in fields})


def _scheme_grid(
    setup: ComparisonSetup, family: str, bands: int
) -> list[tuple[str, dict[str, Any]]]:
    """The (registered scheme, from_rate options) of ``family`` for ``bands`` bands."""
    if family == "poisson":
        return [("poisson", {})]
    if family == "cyclic_poisson":
        # b = bands groups; one band is Poisson itself (the DP-SGD row).
        return [("cyclic_poisson", {"min_sep": bands})] if bands > 1 else []
    if family == "balls_in_bins":
        return [("balls_in_bins", {})]
    if family == "b_min_sep":
        return [("b_min_sep", {"min_sep": b}) for b in setup.min_seps_for(bands)]
    # unamplified: one participation per epoch.
    return [("b_min_sep", {"min_sep": math.floor(setup.epoch_length * (1 + 1e-12))})]


def plan(setup: ComparisonSetup, accountant_for: Callable[[str], Accountant]) -> list[_Plan]:
    """The rows to evaluate, in table order; infeasible combinations are skipped with a note."""
    cache: dict[int, Strategy] = {}
    out: list[_Plan] = []
    for family in setup.families:
        # DP-SGD is the identity whatever the bands grid: it is every table's baseline.
        grid = (1,) if family == "poisson" else sorted(set(setup.bands))
        for bands in grid:
            for name, options in _scheme_grid(setup, family, bands):
                try:
                    scheme = schemes.get(name).from_rate(setup.n_steps, setup.rate, **options)
                except ConfigurationError as exc:
                    warn(f"compare: skipping {_LABELS[family]} with {bands} bands: {exc}")
                    continue
                if bands not in cache:
                    cache[bands] = strategy_for(setup.n_steps, bands)
                strategy = cache[bands]
                choices = ("gaussian",) if family == "unamplified" else PREFERENCE
                chosen = next(
                    (
                        a
                        for a in choices
                        if a in accountants and accountant_for(a).supports(scheme, strategy)
                    ),
                    None,
                )
                if chosen is None:
                    warn(f"compare: no accountant can account {scheme.name!r} with {bands} bands")
                    continue
                out.append(_Plan(family, scheme, strategy, chosen))
    return out


def _evaluate(setup: ComparisonSetup, item: _Plan, accountant: Accountant) -> ComparisonRow:
    start = time.perf_counter()
    scheme, strategy = item.scheme, item.strategy
    sigma: float | None
    epsilon: float | None
    note = ""
    failure = 0.0
    method = "exact"
    try:
        if setup.epsilon is not None:
            cal = accountant.calibrate(scheme, strategy, setup.epsilon, setup.delta)
            sigma, method, failure = cal.sigma, cal.method, cal.failure_probability
            if method == "exact":
                epsilon = accountant.epsilon(scheme, strategy, sigma, setup.delta).certified_epsilon
            else:
                epsilon = cal.epsilon
            if not cal.certified:
                note = "calibration not certified"
            elif len(cal.candidates) > 1 and sigma <= min(cal.candidates):
                note = "every candidate sigma passed: a smaller sigma may be certifiable"
        else:
            assert setup.sigma is not None
            sigma = setup.sigma
            res = accountant.epsilon(scheme, strategy, sigma, setup.delta)
            epsilon, method, failure = res.certified_epsilon, res.method, res.failure_probability
        mse: float | None = strategy.prefix_mse(setup.n_steps) * sigma**2
    except CalibrationError as exc:
        sigma = epsilon = mse = None
        note = f"not certified: {exc}"
    return ComparisonRow(
        family=item.family,
        label=_LABELS[item.family],
        scheme=scheme.name,
        bands=strategy.bands,
        min_sep=scheme.min_separation,
        accountant=item.accountant,
        method=method,
        delta=setup.delta,
        sigma=sigma,
        epsilon=epsilon,
        mse=mse,
        failure_probability=failure,
        seconds=time.perf_counter() - start,
        note=note,
    )


def compare(setup: ComparisonSetup, progress: Progress | None = None) -> list[ComparisonRow]:
    """Evaluate every applicable (scheme, bands, min-sep) combination of ``setup``.

    Rows come in :data:`FAMILIES` order, then by bands and min-sep; ``mse_ratio`` is each row's
    MSE over the smallest MSE of the table (1 for the best row).
    """
    made: dict[str, Accountant] = {}

    def accountant_for(name: str) -> Accountant:
        if name not in made:
            made[name] = make_accountant(name, setup.accountant_options)
        return made[name]

    items = plan(setup, accountant_for)
    rows: list[ComparisonRow] = []
    for item in items:
        if progress is not None:
            label = f"{_LABELS[item.family]} k={item.strategy.bands} b={item.scheme.min_separation}"
            progress(len(rows), len(items), label)
        rows.append(_evaluate(setup, item, accountant_for(item.accountant)))
    if progress is not None:
        progress(len(rows), len(items), "")
    finite = [r.mse for r in rows if r.mse is not None and math.isfinite(r.mse)]
    best = min(finite, default=None)
    if best is None or best <= 0:
        return rows
    return [attrs.evolve(r, mse_ratio=None if r.mse is None else r.mse / best) for r in rows]


# --- output ----------------------------------------------------------------------------------

COLUMNS: tuple[tuple[str, str], ...] = (
    ("label", "scheme"),
    ("bands", "bands"),
    ("min_sep", "b"),
    ("sigma", "sigma"),
    ("epsilon", "cert. eps"),
    ("mse", "MSE"),
    ("mse_ratio", "MSE/best"),
    ("accountant", "accountant"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return fmt(value, 5)
    return str(value)


def format_table(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """A plain-text table, one row per combination, with the setup as its title."""
    target = (
        f"target eps = {setup.epsilon:g}"
        if setup.epsilon is not None
        else f"sigma = {setup.sigma:g}"
    )
    title = (
        f"n = {setup.n_steps}, p0 = {setup.rate:.6g} (|D|/B = {setup.epoch_length:.6g}), "
        f"delta = {setup.delta:g}, {target}"
    )
    cells = [[_cell(getattr(r, key)) for key, _ in COLUMNS] for r in rows]
    heads = [head for _, head in COLUMNS]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]

    def line(values: Sequence[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = [v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    out = [title, line(heads), line(["-" * w for w in widths])]
    out += [line(c) for c in cells]
    notes = [f"  {r.label} (bands {r.bands}, b {r.min_sep}): {r.note}" for r in rows if r.note]
    if notes:
        out += ["notes:", *notes]
    return "\n".join(out)


def format_csv(rows: Sequence[ComparisonRow]) -> str:
    """CSV with one header line and the fields of :class:`ComparisonRow`."""
    buffer = io.StringIO()
    names = [f.name for f in attrs.fields(ComparisonRow)]
    writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_dict().items()})
    return buffer.getvalue()


def format_json(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """``{"setup": ..., "rows": [...]}`` as indented JSON (no non-finite numbers)."""
    data = {"setup": attrs.asdict(setup), "rows": [r.to_dict() for r in rows]}
    return json.dumps(data, indent=2, allow_nan=False)


__all__ = [
    "DEFAULT_EPSILON",
    "FAMILIES",
    "ComparisonRow",
    "ComparisonSetup",
    "Progress",
    "compare",
    "format_csv",
    "format_json",
    "format_table",
    "make_accountant",
    "plan",
    "strategy_for",
]
