"""Cross-scheme comparison: every scheme at one training setup, at equal expected batch size.

For one setup (n steps, participation rate p0 = E|B|/|D|, delta) and either a target epsilon (the
noise multiplier is calibrated per row) or a fixed sigma, :func:`compare` evaluates the rows every
registered scheme proposes through its ``compare_variants`` hook
(:class:`~minsep.framework.parameters.CompareVariant`): for the built-ins

- DP-SGD: Poisson sampling with the identity strategy (always, whatever the bands grid);
- cyclic Poisson BandMF with b = bands groups, for each bands value;
- balls-in-bins BandMF, for each bands value;
- b-min-sep BandMF for each bands value k and each min-sep b (default: the powers of two with
  k <= b <= 1/p0);
- unamplified BandMF: the Gaussian mechanism for one participation per epoch (min-sep
  floor(1/p0), at most ceil(n / min-sep) participations).

Strategies are a compared dimension: ``ComparisonSetup.strategies`` adds registered strategies
besides the bands grid (b-min-sep proposes rows for them at every feasible b, accounted by
docs/math.md §2.1 when they are not banded, and an unamplified row), and the table then names
the best strategy per scheme (:func:`best_strategies`).

A plugin scheme gets rows without any edit here (by default one per bands value, or one per
feasible min-sep when ``min_sep`` is its only required option).

Each row is accounted by the first registered accountant that can account it, in the order
:func:`~minsep.framework.setup.preference` (the sound registered accountants by declared kind
and rank; a row may fix its accountant, as the unamplified row does);
which accountant can is decided by the schemes' and accountants' hooks. Utility is the
prefix-sum MSE of docs/math.md §8, ``MSE = (1/n) ||A C^-1||_F^2 sigma^2`` (sigma already includes
the sensitivity for the unamplified row), reported with its ratio to the best row.

The library entry point is :func:`compare` (paper scripts call it); the ``minsep compare``
command (:mod:`minsep.framework.cli.compare_command`) is a thin wrapper printing a table,
``--json`` or ``--csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from minsep.framework.environment import environment
from minsep.framework.errors import (
    CalibrationError,
    ConfigurationError,
    MinsepError,
    NotAccountableError,
)
from minsep.framework.format import fmt, warn
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.montecarlo.bounds import min_samples
from minsep.framework.parameters import CompareContext, CompareVariant
from minsep.framework.registries import accountants, schemes
from minsep.framework.results import EXACT, UPPER_BOUND, CalibrationResult
from minsep.framework.setup import (
    accountant_fields,
    build_accountant,
    build_strategy,
    build_strategy_spec,
    parse_strategy_spec,
    preference,
    strategy_bands,
    strategy_label,
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


@attrs.frozen(kw_only=True)
class ComparisonRow:
    """One (scheme, bands, min-sep) combination and its accounting.

    ``sigma``, ``epsilon``, ``mse`` and ``mse_ratio`` are None when the row could not be
    certified (``note`` says why). ``epsilon`` is the certified epsilon: the exact epsilon at
    ``sigma`` for exact accountants, the calibration target for Monte Carlo calibration (which
    holds except with ``failure_probability``, folded into delta by Algorithm 5).

    What each row was accounted at: ``delta`` is the target; ``base_delta`` is the delta a
    Monte Carlo row was actually verified at (docs/math.md §7: base delta < delta, the rest
    pays for the verification failure), with ``samples`` verification draws per direction;
    both are None for exact rows, which are accounted at ``delta`` itself.

    ``sigma_low`` (calibrated rows) is the lower end of the uncertainty of ``sigma``: the
    smallest noise multiplier meeting the target lies in ``[sigma_low, sigma]`` to what the
    accountant resolved. Exact accountants: the last sigma their search found failing the
    target (bisection bracket, width ``sigma_rtol``). Monte Carlo: the sigma the point estimate
    alone would select (``CalibrationResult.sigma_estimate``), so the gap is the price of
    certifying with ``samples`` draws at ``base_delta`` and shrinks as samples grow. ``mse_low``
    is the MSE at ``sigma_low``; two rows whose ``[mse_low, mse]`` intervals overlap are not
    ranked reliably at this sample count.
    """

    family: str
    label: str
    scheme: str
    bands: int | None
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
    strategy: str = ""
    base_delta: float | None = None
    samples: int | None = None
    sigma_low: float | None = None
    mse_low: float | None = None

    @property
    def accounted_delta(self) -> float:
        """The delta this row was accounted at: the base delta of a Monte Carlo row, else
        the target delta."""
        return self.delta if self.base_delta is None else self.base_delta

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/CSV ready), with ``accounted_delta``."""
        return {**attrs.asdict(self), "accounted_delta": self.accounted_delta}


@attrs.frozen
class _Plan:
    family: str
    label: str
    scheme: SamplingScheme
    strategy: Strategy
    accountant: str
    strategy_name: str = ""


@attrs.frozen
class _Proposal:
    """A scheme's row proposal with where it goes in the table."""

    rank: int
    scheme: str
    variant: CompareVariant

    @property
    def family(self) -> str:
        return self.variant.family or self.scheme

    def label(self) -> str:
        return self.variant.label or schemes.get(self.scheme).display_name()


#: Called before each row and once at the end: ``(rows done, rows total, next row's label)``.
Progress = Callable[[int, int, str], None]


def _proposals(setup: ComparisonSetup) -> list[_Proposal]:
    """Every registered scheme's rows for ``setup``, in table order (rank, then proposal
    order within a scheme)."""
    context = setup.context()
    out = []
    for entry in schemes.entries():
        for variant in entry.cls.compare_variants(context):
            rank = entry.cls.compare_rank if variant.rank is None else variant.rank
            out.append(_Proposal(rank, entry.name, variant))
    return sorted(out, key=lambda p: p.rank)  # stable: keeps each scheme's own order


def available_families(setup: ComparisonSetup) -> tuple[str, ...]:
    """The families the registered schemes propose rows for at ``setup``, in table order."""
    return tuple(dict.fromkeys(p.family for p in _proposals(setup)))


def _can(
    accountant_for: Callable[[str], Accountant], name: str, scheme: Any, strategy: Strategy
) -> bool:
    """Whether accountant ``name`` is registered and accounts the pair (an accountant whose
    hooks refuse a strategy by raising a MinsepError counts as unable)."""
    if name not in accountants:
        return False
    accountant = accountant_for(name)  # bad accountant options raise here, never "unable"
    try:
        return accountant.supports(scheme, strategy)
    except MinsepError:
        return False


def plan(setup: ComparisonSetup, accountant_for: Callable[[str], Accountant]) -> list[_Plan]:
    """The rows to evaluate, in table order; infeasible combinations are skipped with a note."""
    cache: dict[int | str, Strategy] = {}
    out: list[_Plan] = []
    proposals = _proposals(setup)
    for name in setup.families or ():
        if name in schemes and not any(p.family == name for p in proposals):
            required = [p.flag for p in schemes.get(name).parameters() if p.required]
            large = [k for k in setup.bands if not setup.min_seps_for(k)]
            why = (
                f"no feasible min-sep for bands {', '.join(map(str, large))} (> |D|/B = "
                f"{setup.epoch_length:.6g}), or it needs options without defaults"
                if large
                else "it needs options without defaults"
            )
            warn(
                f"compare: scheme {name!r} proposes no rows at this setup: {why} "
                f"({', '.join(required) or 'none'}); its class can propose rows through "
                "compare_variants (docs/adding-a-scheme.md)"
            )
    for proposal in proposals:
        if setup.families is not None and proposal.family not in setup.families:
            continue
        variant, label = proposal.variant, proposal.label()
        try:
            scheme = schemes.get(proposal.scheme).from_rate(
                setup.n_steps, setup.rate, **variant.options
            )
        except ConfigurationError as exc:
            warn(f"compare: skipping {label} with {variant.bands} bands: {exc}")
            continue
        key: int | str = variant.bands if variant.strategy is None else variant.strategy
        if key not in cache:
            cache[key] = (
                build_strategy(setup.n_steps, variant.bands)
                if variant.strategy is None
                else build_strategy_spec(variant.strategy, setup.n_steps)
            )
        strategy = cache[key]
        what = f"{variant.bands} bands" if variant.strategy is None else variant.strategy
        choices = preference() if variant.accountant is None else (variant.accountant,)
        chosen = next((a for a in choices if _can(accountant_for, a, scheme, strategy)), None)
        if chosen is None:
            warn(f"compare: no accountant can account {label} with {what}")
            continue
        name = strategy_label(strategy) if variant.strategy is None else variant.strategy
        out.append(_Plan(proposal.family, label, scheme, strategy, chosen, name))
    return out


#: What a row that cannot be evaluated reports (one line) while the other rows still print.
ROW_ERRORS = (ConfigurationError, CalibrationError, NotAccountableError)


def _row_accountant(
    setup: ComparisonSetup, item: _Plan, accountant: Accountant
) -> tuple[Accountant, str]:
    """``accountant`` with this row's samples (and route) chosen from the question at
    ``setup.precision`` and fitted to ``setup.max_seconds``, as ``minsep epsilon`` chooses
    them (:func:`~minsep.framework.cli.sample_choice.choose_samples`), and a note naming the
    route when it is not plain sampling. Unchanged without ``precision``, with ``samples``
    given, or for an accountant without samples. Raises ConfigurationError when the row
    cannot fit ``max_seconds``."""
    takes = "samples" in accountant_fields(type(accountant))
    if setup.precision is None or "samples" in setup.accountant_options or not takes:
        return accountant, ""
    from minsep.framework.cli.sample_choice import choose_samples  # the one choice path

    question = "calibrate" if setup.epsilon is not None else "epsilon"
    numbers: dict[str, float] = {"delta": setup.delta}
    if setup.epsilon is not None:
        numbers["epsilon"] = setup.epsilon
    else:
        assert setup.sigma is not None
        numbers["sigma"] = setup.sigma
    args = argparse.Namespace(
        precision=setup.precision, samples=None, max_seconds=setup.max_seconds
    )
    chosen, _ = choose_samples(args, accountant, item.scheme, item.strategy, question, numbers)
    proposal = getattr(chosen, "proposal", None)
    return chosen, "" if proposal in (None, "auto", "plain") else f"{proposal} route"


def _evaluate(setup: ComparisonSetup, item: _Plan, accountant: Accountant) -> ComparisonRow:
    """One row; a row that cannot be certified (ROW_ERRORS) keeps None values and says why
    in one line."""
    start = time.perf_counter()
    scheme, strategy = item.scheme, item.strategy
    sigma: float | None
    epsilon: float | None
    note = ""
    failure = 0.0
    method = "exact"
    base: float | None = None
    samples: int | None = None
    sigma_low: float | None = None
    mse_low: float | None = None
    try:
        accountant, route = _row_accountant(setup, item, accountant)
        if setup.epsilon is not None:
            cal = accountant.calibrate(scheme, strategy, setup.epsilon, setup.delta)
            sigma, method, failure = cal.sigma, cal.method, cal.failure_probability
            base, samples = cal.base_delta, cal.samples
            sigma_low = _sigma_low(cal)
            if method in (EXACT, UPPER_BOUND):
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
            base, samples = res.base_delta, res.samples
        unit = strategy.prefix_mse(setup.n_steps)
        mse: float | None = unit * sigma**2
        mse_low = None if sigma_low is None else unit * sigma_low**2
        note = "; ".join(n for n in (route, note) if n)
    except ROW_ERRORS as exc:
        sigma = epsilon = mse = None
        note = "not certified: " + " ".join(str(exc).split())
    return ComparisonRow(
        family=item.family,
        label=item.label,
        scheme=scheme.name,
        bands=strategy_bands(strategy) or None,
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
        strategy=item.strategy_name,
        base_delta=base,
        samples=samples,
        sigma_low=sigma_low,
        mse_low=mse_low,
    )


def _sigma_low(cal: CalibrationResult) -> float | None:
    """The lower end of a calibrated sigma's uncertainty (:class:`ComparisonRow`): the Monte
    Carlo point estimate's sigma, else the largest examined sigma below the returned one (the
    search found it failing the target: the bracket of an exact search); None when neither
    is known."""
    if cal.sigma_estimate is not None:
        return min(cal.sigma_estimate, cal.sigma)
    below = [c for c in cal.candidates if c < cal.sigma]
    return max(below) if below else None


def compare(setup: ComparisonSetup, progress: Progress | None = None) -> list[ComparisonRow]:
    """Evaluate every applicable (scheme, bands, min-sep) combination of ``setup``.

    Rows come in the schemes' ``compare_rank`` order, then in the order each scheme proposes
    them (by bands and min-sep for the built-ins); ``mse_ratio`` is each row's
    MSE over the smallest MSE of the table (1 for the best row).
    """
    made: dict[str, Accountant] = {}

    def accountant_for(name: str) -> Accountant:
        if name not in made:
            made[name] = build_accountant(name, setup.accountant_options, strict=False)
        return made[name]

    items = plan(setup, accountant_for)
    rows: list[ComparisonRow] = []
    for item in items:
        if progress is not None:
            label = f"{item.label} {item.strategy_name} b={item.scheme.min_separation}"
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
    ("sigma_low", "sigma low"),
    ("epsilon", "cert. eps"),
    ("accounted_delta", "delta used"),
    ("samples", "samples"),
    ("mse", "MSE"),
    ("mse_ratio", "MSE/best"),
    ("accountant", "accountant"),
)

#: A Monte Carlo row should keep at least this fraction of the target delta as its base delta
#: (the rest pays for the verification failure, docs/math.md §7); fewer samples are warned.
BASE_DELTA_FRACTION = 0.5

#: The table's legend of the columns that are not self-explanatory.
LEGEND = (
    "sigma low: the smallest sigma meeting the target lies in [sigma low, sigma] (exact rows: "
    "the search bracket; Monte Carlo rows: the sigma of the point estimate alone, so the gap is "
    "the cost of verifying with these samples). delta used: the target delta for exact rows, "
    "the base delta Monte Carlo rows were verified at; samples: verification samples per "
    "direction."
)


def recommended_samples(delta: float) -> int | None:
    """Verification samples per direction with which a Monte Carlo row keeps a base delta of
    at least ``BASE_DELTA_FRACTION * delta`` (:func:`~minsep.framework.montecarlo.bounds.
    min_samples`); None when no feasible run does."""
    try:
        return min_samples(BASE_DELTA_FRACTION * delta, delta)
    except ConfigurationError:
        return None


def sample_warnings(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> list[str]:
    """One warning per distinct sample count of Monte Carlo rows below
    :func:`recommended_samples`: their sigma is inflated by the verification margin, so their
    MSE ratios against exact rows depend on the sample count, not only on the scheme."""
    need = recommended_samples(setup.delta)
    kept = BASE_DELTA_FRACTION * setup.delta
    out = []
    for samples in sorted({r.samples for r in rows if r.samples is not None}):
        if need is not None and samples >= need:
            continue
        same = [r for r in rows if r.samples == samples]
        if all(r.base_delta is not None and r.base_delta >= kept for r in same):
            continue  # they kept the base delta anyway (escort rows: s x_b, docs/rdp-escort.md)
        bases = [r.base_delta for r in rows if r.samples == samples and r.base_delta]
        base = f" at base delta {fmt(min(bases), 3)}" if bases else ""
        wanted = (
            f"needs >= {need:,} samples per direction for a base delta >= "
            f"{BASE_DELTA_FRACTION:g} delta"
            if need is not None
            else "cannot keep that base delta with any feasible sample count"
        )
        out.append(
            f"Monte Carlo rows were verified with {samples:,} samples per direction{base} "
            f"(target delta {setup.delta:g}); delta = {setup.delta:g} {wanted} (--samples). "
            "Their sigma and MSE include the verification margin: rank them against exact rows "
            "by the [sigma low, sigma] interval, not by sigma alone."
        )
    return out


def empty_reason(setup: ComparisonSetup) -> str:
    """Why :func:`compare` found no row for ``setup`` (for an empty table)."""
    top = setup.epoch_length
    large = [k for k in setup.bands if k > math.floor(top * (1 + 1e-12))]
    reasons = []
    if large:
        reasons.append(
            f"bands {', '.join(map(str, large))} > |D|/B = {top:.6g} (a banded strategy needs "
            "a min-sep b with bands <= b <= |D|/B)"
        )
    if setup.families is not None:
        reasons.append(f"only the families {', '.join(setup.families)} were asked for")
    if not reasons:
        reasons.append("no registered scheme proposed a feasible row (see the warnings above)")
    return "no rows: " + "; ".join(reasons)


#: The strategy column, shown when extra strategies are compared.
STRATEGY_COLUMN = ("strategy", "strategy")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return fmt(value, 5)
    return str(value)


def best_strategies(rows: Sequence[ComparisonRow]) -> list[ComparisonRow]:
    """Per row family (in table order), the certified row with the smallest MSE: which
    strategy (and bands, min-sep) wins for that scheme at this setup."""
    best: dict[str, ComparisonRow] = {}
    for row in rows:
        if row.mse is None or not math.isfinite(row.mse):
            continue
        if row.family not in best or row.mse < (best[row.family].mse or math.inf):
            best[row.family] = row
    return list(best.values())


def format_table(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """A plain-text table, one row per combination, with the setup as its title (and, when
    extra strategies are compared, a strategy column and the best strategy per scheme)."""
    target = (
        f"target eps = {setup.epsilon:g}"
        if setup.epsilon is not None
        else f"sigma = {setup.sigma:g}"
    )
    title = (
        f"n = {setup.n_steps}, p0 = {setup.rate:.6g} (|D|/B = {setup.epoch_length:.6g}), "
        f"delta = {setup.delta:g}, {target}"
    )
    if not rows:
        return "\n".join([title, empty_reason(setup)])
    columns = COLUMNS if not setup.strategies else (COLUMNS[0], STRATEGY_COLUMN, *COLUMNS[1:])
    cells = [[_cell(getattr(r, key)) for key, _ in columns] for r in rows]
    heads = [head for _, head in columns]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]

    def line(values: Sequence[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = [v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    out = [title, line(heads), line(["-" * w for w in widths])]
    out += [line(c) for c in cells]
    if setup.strategies:
        winners = [
            f"  {r.label}: {r.strategy} (b {r.min_sep}), sigma {_cell(r.sigma)}, MSE {_cell(r.mse)}"
            for r in best_strategies(rows)
        ]
        out += ["best strategy per scheme (smallest MSE at a certified sigma):", *winners]
    out += textwrap.wrap(LEGEND, width=100)
    notes = [f"  {r.label} (bands {r.bands}, b {r.min_sep}): {r.note}" for r in rows if r.note]
    if notes:
        out += ["notes:", *notes]
    out += [f"warning: {w}" for w in sample_warnings(setup, rows)]
    return "\n".join(out)


def format_csv(rows: Sequence[ComparisonRow]) -> str:
    """CSV with one header line and the fields of :class:`ComparisonRow`."""
    buffer = io.StringIO()
    names = [*(f.name for f in attrs.fields(ComparisonRow)), "accounted_delta"]
    writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.to_dict().items()})
    return buffer.getvalue()


def format_json(setup: ComparisonSetup, rows: Sequence[ComparisonRow]) -> str:
    """``{"setup", "rows", "warnings", "recommended_samples", "environment"}`` as indented JSON (no
    non-finite numbers); ``empty_reason`` is added when there is no row."""
    data: dict[str, Any] = {
        "setup": attrs.asdict(setup),
        "rows": [r.to_dict() for r in rows],
        "warnings": sample_warnings(setup, rows),
        "recommended_samples": recommended_samples(setup.delta),
        "environment": environment(),
    }
    if not rows:
        data["empty_reason"] = empty_reason(setup)
    return json.dumps(data, indent=2, allow_nan=False)


__all__ = [
    "DEFAULT_EPSILON",
    "ComparisonRow",
    "ComparisonSetup",
    "Progress",
    "available_families",
    "best_strategies",
    "compare",
    "empty_reason",
    "format_csv",
    "format_json",
    "format_table",
    "plan",
    "recommended_samples",
    "sample_warnings",
]
