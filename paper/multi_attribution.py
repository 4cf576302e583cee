"""Paper §7.3 analogue: multi-attribution (user-level) privacy on a synthetic co-authorship graph.

The paper trains on arXiv abstracts with the authors as users, drops single-author papers,
bounds every author to k_u = 2 papers, and compares DP-SGD, warm-start b-min-sep BandMF and
unamplified BandMF (Fig. 5, by test loss). We cannot ship arXiv, so this script builds a
synthetic graph with the same shape (:func:`synthetic_coauthorship`: papers with >= 2 authors
drawn with Zipf-like productivity, then the greedy contribution bounding of
:meth:`~minsep.schemes.attribution.AttributionGraph.bound_contributions` to k_u = 2) and
compares the three methods by calibrated noise multiplier and prefix-sum MSE (docs/math.md §8) at
equal expected batch size, for each target epsilon. The privacy unit is a user (fixed-graph
adjacency, zero-out of all the user's examples):

- **DP-SGD**: Poisson sampling of examples at rate p0 with the identity strategy. A user's
  k_u examples are sampled independently, so one step's user-level contribution is
  x ~ Binomial(k_u, p0) aligned clipped gradients: the dominating pair is the n-fold
  composition of the Gaussian mixture sum_j P(x = j) N(j, sigma^2) against N(0, sigma^2) (the
  single-user process of docs/math.md §5 with b = 1 and C = I). It is accounted exactly by
  dp_accounting's ``MixtureOfGaussiansDpEvent`` PLD, both directions, pessimistic rounding.
  This is tight for aligned gradients and needs no group-privacy step.
- **b-min-sep BandMF** (Algorithm 3, ``multi_attribution``): bands k and min-sep b = k (as in
  the paper), holding-set probability p solved on the graph so that the expected batch after
  burn-in is |D| p0; burn-in b - 1 steps makes Algorithm 3 exactly stationary (the holding sets
  are i.i.d.), accounted as cold start by Monte Carlo (Theorem 6.1, ``max_user_examples`` =
  k_u), calibrated by Algorithm 5.
- **Unamplified BandMF**: every example participates once per epoch (min-sep floor(1/p0), at
  most ceil(n / floor(1/p0)) participations); a user's k_u examples add up, so the user-level
  sensitivity is at most k_u times the example-level one (triangle inequality; tight when the
  examples are always batched together): sigma = k_u x the Gaussian-mechanism sigma of one
  example.

Run ``python -m paper.multi_attribution [--quick]`` or ``minsep paper multi_attribution``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.accountants.pld import conservative_sigma
from minsep.framework.errors import CalibrationError, InfeasibleError
from minsep.framework.montecarlo import min_samples
from minsep.framework.option_groups import grouped
from minsep.framework.validation import (
    fail,
    integer,
    number,
    optional,
    positive,
    positive_int,
    probability,
)
from minsep.paper.common import (
    EngineOptions,
    LinePanel,
    Reporter,
    Series,
    Stopwatch,
    add_common_arguments,
    float_list,
    int_list,
    markdown_table,
    plot_line_panels,
    run_script,
    script_main,
    settings_with_overrides,
    tuple_of,
    write_csv,
    write_metadata,
    write_text,
)
from minsep.schemes import AttributionGraph, BMinSep, MultiAttribution
from minsep.strategies import BandedToeplitz, Identity

if TYPE_CHECKING:
    from dp_accounting import dp_event

NAME = "multi_attribution"
DEFAULT_SEED = 73


# --- the synthetic graph -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class GraphSettings:
    """A co-authorship-like attribution graph (examples = papers, users = authors).

    Attributes:
        papers: papers drawn before cleaning and bounding.
        users: the author pool.
        zipf_exponent: author i (in a random order) is drawn with weight (rank)^-exponent,
            giving a heavy-tailed number of papers per author.
        extra_authors: mean of the Poisson number of authors beyond two per paper.
        max_authors: cap on the authors of one paper.
        max_user_examples: k_u of the contribution bounding.
        seed: seed of the generator and of the bounding order.
    """

    papers: int = attrs.field(validator=positive_int())
    users: int = attrs.field(validator=positive_int())
    zipf_exponent: float = attrs.field(default=0.75, validator=number(low=0.0))
    extra_authors: float = attrs.field(default=1.5, validator=number(low=0.0))
    max_authors: int = attrs.field(default=12, validator=integer(low=2))
    max_user_examples: int = attrs.field(default=2, validator=positive_int())
    seed: int = attrs.field(default=7301, validator=integer(low=0))


@attrs.frozen
class GraphSummary:
    """The bounded graph and how it was obtained."""

    graph: AttributionGraph
    statistics: dict[str, Any]


def synthetic_coauthorship(settings: GraphSettings) -> GraphSummary:
    """Draw papers with 2 + Poisson(extra_authors) author slots (capped), fill the slots with
    authors by Zipf-like productivity, merge repeated authors, drop papers left with one
    author (every example has >= 2 users, as the paper's preprocessing), then bound every
    author to k_u papers greedily in a random order. Deterministic given ``settings``."""
    rng = np.random.default_rng(settings.seed)
    slots = 2 + np.minimum(
        rng.poisson(settings.extra_authors, settings.papers), settings.max_authors - 2
    )
    weights = np.arange(1, settings.users + 1, dtype=np.float64) ** -settings.zipf_exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(int(slots.sum())), side="right")
    authors = rng.permutation(settings.users)[np.minimum(ranks, settings.users - 1)]
    papers = np.repeat(np.arange(settings.papers, dtype=np.int64), slots)
    keys = np.unique(papers * settings.users + authors)
    paper_of, author_of = keys // settings.users, keys % settings.users
    counts = np.bincount(paper_of, minlength=settings.papers)
    multi = counts >= 2
    keep = multi[paper_of]
    kept_counts = counts[multi]
    raw = AttributionGraph(
        indptr=np.concatenate([[0], np.cumsum(kept_counts)]),
        indices=author_of[keep],
        n_users=settings.users,
    )
    bounded, _kept = raw.bound_contributions(settings.max_user_examples, rng)
    sizes = bounded.neighbourhood_sizes()
    per_user = bounded.user_example_counts()
    statistics = {
        "papers_drawn": settings.papers,
        "author_pool": settings.users,
        "papers_with_2plus_authors": raw.n_examples,
        "max_papers_per_author_before_bounding": raw.max_user_examples,
        "examples_after_bounding": bounded.n_examples,
        "authors_with_examples": int(np.count_nonzero(per_user)),
        "max_examples_per_author": bounded.max_user_examples,
        "mean_authors_per_example": float(np.diff(bounded.indptr).mean()),
        "min_authors_per_example": int(np.diff(bounded.indptr).min()),
        "mean_neighbourhood_size": float(sizes.mean()),
        "max_neighbourhood_size": int(sizes.max()),
    }
    return GraphSummary(bounded, statistics)


# --- settings ----------------------------------------------------------------------------------


def paper_samples(delta: float) -> int:
    """``min_samples(delta/2, delta)`` (verification at base delta delta/2, as in §7.1)."""
    return min_samples(delta / 2.0, delta)


@attrs.frozen(kw_only=True)
class MASettings:
    """One run.

    Attributes:
        graph: the synthetic graph.
        n_steps: training steps n (burn-in steps come on top for b-min-sep).
        expected_batch: expected batch size B (p0 = B / |D|); or None to use ``epoch_length``.
        epoch_length: |D| / B when ``expected_batch`` is None.
        delta: target delta.
        epsilons: target epsilons.
        bands: bands k of BandMF (b-min-sep uses b = k; unamplified uses every k).
        samples: Monte Carlo verification samples per direction (None: ``paper_samples``).
        pld_interval: dp_accounting's value discretisation interval for DP-SGD (pessimistic:
            a coarser grid only over-reports epsilon; the mixture PLD is slow at 1e-3).
    """

    graph: GraphSettings = attrs.field(validator=attrs.validators.instance_of(GraphSettings))
    n_steps: int = attrs.field(validator=positive_int())
    expected_batch: float | None = attrs.field(default=None, validator=optional(positive()))
    epoch_length: float | None = attrs.field(default=None, validator=optional(number(low=1.0)))
    delta: float = attrs.field(validator=probability(open_high=True))
    epsilons: tuple[float, ...] = attrs.field(
        default=(1.0, 2.0, 4.0, 8.0, 16.0), validator=tuple_of(positive())
    )
    bands: tuple[int, ...] = attrs.field(
        default=(2, 4, 8, 16, 32), validator=tuple_of(positive_int())
    )
    samples: int | None = attrs.field(default=None, validator=optional(integer(low=100)))
    pld_interval: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.1, low_open=True)
    )

    def __attrs_post_init__(self) -> None:
        if (self.expected_batch is None) == (self.epoch_length is None):
            raise fail(
                self,
                "expected_batch",
                self.expected_batch,
                f"given exactly when epoch_length (= {self.epoch_length!r}) is not",
            )

    def rate(self, examples: int) -> float:
        """p0 for a bounded graph of ``examples`` examples."""
        if self.expected_batch is not None:
            return min(self.expected_batch / examples, 1.0)
        assert self.epoch_length is not None
        return 1.0 / self.epoch_length

    def resolved_samples(self) -> int:
        """``samples``, or :func:`paper_samples` of ``delta``."""
        return self.samples if self.samples is not None else paper_samples(self.delta)


#: The paper's scale: ~300k examples after bounding, n = 1000, B = 1024, delta = 1/500,000.
FULL = MASettings(
    graph=GraphSettings(papers=1_700_000, users=1_200_000),
    n_steps=1000,
    expected_batch=1024,
    delta=1.0 / 500_000,
)

#: The committed quick run: a small graph, fewer steps, delta = 1e-3.
QUICK = MASettings(
    graph=GraphSettings(papers=30_000, users=20_000),
    n_steps=256,
    epoch_length=128,
    delta=1e-3,
    bands=(4, 16),
)


# --- accounting --------------------------------------------------------------------------------


def dp_sgd_event(sigma: float, rate: float, k_u: int, n_steps: int) -> dp_event.DpEvent:
    """n-fold composition of sum_j Binom(k_u, p0)(j) N(j, sigma^2) vs N(0, sigma^2)."""
    # lazy: dp_accounting and scipy.stats cost about a second to import, and the CLI imports
    # this module to build `minsep paper --help`
    from dp_accounting import dp_event as events
    from scipy import stats

    weights = stats.binom.pmf(np.arange(k_u + 1), k_u, rate)
    return events.SelfComposedDpEvent(
        events.MixtureOfGaussiansDpEvent(
            sigma, [float(j) for j in range(k_u + 1)], [float(w) for w in weights]
        ),
        n_steps,
    )


def dp_sgd_epsilon(
    sigma: float, rate: float, k_u: int, n_steps: int, delta: float, interval: float = 1e-3
) -> float:
    """User-level epsilon(delta) of DP-SGD by PLD (add-or-remove, pessimistic rounding on a
    grid of ``interval``)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=interval,
    )
    accountant.compose(dp_sgd_event(sigma, rate, k_u, n_steps))
    return max(float(accountant.get_epsilon(delta)), 0.0)


def dp_sgd_sigma(
    epsilon: float, rate: float, k_u: int, n_steps: int, delta: float, interval: float = 1e-3
) -> float:
    """The smallest sigma (within 0.1 %) whose user-level epsilon(delta) <= ``epsilon``."""
    sigma, _, _ = conservative_sigma(
        lambda s: dp_sgd_epsilon(s, rate, k_u, n_steps, delta, interval), epsilon, rtol=1e-3
    )
    return sigma


ROW_COLUMNS = (
    "epsilon_target",
    "method",
    "bands",
    "min_sep",
    "accountant",
    "sigma",
    "mse",
    "probability",
    "failure_probability",
    "note",
)


def calibrate_all(
    settings: MASettings,
    graph: AttributionGraph,
    engine: EngineOptions,
    report: Callable[[str], None] = lambda _: None,
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """Every (epsilon, method, bands) row, and the seconds each method took."""
    n, delta = settings.n_steps, settings.delta
    k_u = graph.max_user_examples
    rate = settings.rate(graph.n_examples)
    samples = settings.resolved_samples()
    options = grouped(MonteCarloAccountant, engine.accountant_options(samples))
    monte_carlo = MonteCarloAccountant(**options)
    gaussian = GaussianAccountant()
    strategies = {k: BandedToeplitz.optimal(n, k) for k in settings.bands}
    identity_mse = Identity().prefix_mse(n)
    b_epoch = max(math.floor(1.0 / rate * (1 + 1e-12)), 1)
    epoch_scheme = BMinSep(n_steps=n, rate=min(rate, 1.0 / b_epoch), min_sep=b_epoch)
    schemes: dict[int, MultiAttribution | str] = {}
    for k in settings.bands:
        try:
            built = MultiAttribution.from_rate(
                n, rate, min_sep=k, max_user_examples=k_u, graph=graph
            )
            assert isinstance(built, MultiAttribution)
            schemes[k] = built
        except InfeasibleError as exc:
            schemes[k] = f"infeasible: {exc}"
    rows: list[dict[str, Any]] = []
    seconds: dict[str, list[float]] = {"dp_sgd": [], "b_min_sep": [], "unamplified": []}
    for epsilon in settings.epsilons:
        report(f"epsilon {epsilon:g}: DP-SGD (PLD of the Binomial({k_u}, p0) Gaussian mixture)")
        clock = Stopwatch()
        sigma = dp_sgd_sigma(epsilon, rate, k_u, n, delta, settings.pld_interval)
        seconds["dp_sgd"].append(clock.wall)
        rows.append(
            {
                "epsilon_target": epsilon,
                "method": "dp_sgd",
                "bands": 1,
                "min_sep": 1,
                "accountant": "pld (mixture of Gaussians)",
                "sigma": sigma,
                "mse": identity_mse * sigma**2,
                "probability": rate,
                "failure_probability": 0.0,
                "note": "",
            }
        )
        for k in settings.bands:
            strategy = strategies[k]
            scheme = schemes[k]
            report(f"epsilon {epsilon:g}: b-min-sep BandMF, bands = b = {k} (Monte Carlo)")
            row: dict[str, Any] = {
                "epsilon_target": epsilon,
                "method": "b_min_sep",
                "bands": k,
                "min_sep": k,
                "accountant": "monte_carlo",
            }
            if isinstance(scheme, str):
                row["note"] = scheme
            else:
                clock = Stopwatch()
                try:
                    cal = monte_carlo.calibrate(scheme, strategy, epsilon, delta)
                    row.update(
                        sigma=cal.sigma,
                        mse=strategy.prefix_mse(n) * cal.sigma**2,
                        failure_probability=cal.failure_probability,
                    )
                except CalibrationError as exc:
                    row["note"] = f"not certified: {exc}"
                seconds["b_min_sep"].append(clock.wall)
                row["probability"] = scheme.probability
            rows.append(row)
        for k in settings.bands:
            strategy = strategies[k]
            clock = Stopwatch()
            cal = gaussian.calibrate(epoch_scheme, strategy, epsilon, delta)
            seconds["unamplified"].append(clock.wall)
            sigma = k_u * cal.sigma
            rows.append(
                {
                    "epsilon_target": epsilon,
                    "method": "unamplified",
                    "bands": k,
                    "min_sep": b_epoch,
                    "accountant": "gaussian",
                    "sigma": sigma,
                    "mse": strategy.prefix_mse(n) * sigma**2,
                    "failure_probability": 0.0,
                    "note": f"user sensitivity {k_u} x example sensitivity "
                    f"({epoch_scheme.max_participations} participations)",
                }
            )
    return rows, seconds


METHODS = ("dp_sgd", "b_min_sep", "unamplified")
LABELS = {
    "dp_sgd": "DP-SGD",
    "b_min_sep": "b-min-sep BandMF",
    "unamplified": "unamplified BandMF",
}

BEST_COLUMNS = (
    "epsilon_target",
    "dp_sgd_sigma",
    "dp_sgd_mse",
    "b_min_sep_bands",
    "b_min_sep_sigma",
    "b_min_sep_mse",
    "unamplified_bands",
    "unamplified_sigma",
    "unamplified_mse",
    "b_min_sep_over_dp_sgd",
    "b_min_sep_over_unamplified",
)


def best_rows(settings: MASettings, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per epsilon, the smallest-MSE row of each method and the MSE ratios."""
    out = []
    for epsilon in settings.epsilons:
        entry: dict[str, Any] = {"epsilon_target": epsilon}
        for method in METHODS:
            candidates = [
                r
                for r in rows
                if r["epsilon_target"] == epsilon
                and r["method"] == method
                and r.get("mse") is not None
            ]
            if candidates:
                best = min(candidates, key=lambda r: r["mse"])
                entry[f"{method}_sigma"] = best["sigma"]
                entry[f"{method}_mse"] = best["mse"]
                if method != "dp_sgd":
                    entry[f"{method}_bands"] = best["bands"]
        bms = entry.get("b_min_sep_mse")
        for other in ("dp_sgd", "unamplified"):
            value = entry.get(f"{other}_mse")
            entry[f"b_min_sep_over_{other}"] = bms / value if bms and value else None
        out.append(entry)
    return out


GRAPH_COLUMNS = ("quantity", "value")


def markdown(
    settings: MASettings,
    statistics: dict[str, Any],
    best: Sequence[dict[str, Any]],
    samples: int,
) -> str:
    """The graph statistics and the per-epsilon comparison."""
    parts = [
        f"n = {settings.n_steps}, δ = {settings.delta:g}, expected batch "
        f"{statistics['expected_batch']:.4g} (p0 = {statistics['rate']:.4g}), k_u = "
        f"{statistics['max_examples_per_author']}, bands ∈ {list(settings.bands)}, "
        f"{samples} Monte Carlo verification samples per direction.",
        "",
        markdown_table(
            ["graph", "value"],
            [[k.replace("_", " "), v] for k, v in statistics.items()],
        ),
        "",
        "Best MSE per method (σ at that configuration; ratios < 1: b-min-sep better):",
        "",
        markdown_table(
            [
                "ε",
                "DP-SGD σ",
                "DP-SGD MSE",
                "b-min-sep k=b",
                "σ",
                "MSE",
                "unamplified k",
                "σ",
                "MSE",
                "b-min-sep / DP-SGD",
                "b-min-sep / unamplified",
            ],
            [[r.get(c) for c in BEST_COLUMNS] for r in best],
        ),
    ]
    return "\n".join(parts)


def plot(path: Path, settings: MASettings, best: Sequence[dict[str, Any]]) -> Path | None:
    """Best MSE and its sigma against epsilon for the three methods."""
    eps = tuple(float(r["epsilon_target"]) for r in best)
    panels = [
        LinePanel(
            tuple(
                Series(LABELS[m], eps, tuple(r.get(f"{m}_{key}") for r in best)) for m in METHODS
            ),
            "target ε",
            ylabel,
            title,
        )
        for key, ylabel, title in (
            ("mse", "prefix-sum MSE (best over bands)", "Utility"),
            ("sigma", "noise multiplier σ", "Calibrated σ at the best bands"),
        )
    ]
    return plot_line_panels(
        path,
        panels,
        f"User-level privacy, synthetic co-authorship graph (k_u = 2), n = {settings.n_steps}, "
        f"δ = {settings.delta:g}",
    )


def run_experiment(
    settings: MASettings,
    engine: EngineOptions,
    output_dir: Path,
    *,
    plots: bool = True,
    mode: str = "custom",
) -> dict[str, Path]:
    """Build the graph, calibrate every row, write ``multi_attribution_{graph,rows,best}.csv``,
    ``.json``, ``.md`` and ``multi_attribution.png``."""
    clock = Stopwatch()
    report = Reporter(NAME, engine.progress, clock)
    report("building the synthetic co-authorship graph")
    summary = synthetic_coauthorship(settings.graph)
    graph = summary.graph
    rate = settings.rate(graph.n_examples)
    statistics = {
        **summary.statistics,
        "rate": rate,
        "expected_batch": rate * graph.n_examples,
    }
    graph_seconds = clock.wall
    rows, seconds = calibrate_all(settings, graph, engine, report)
    best = best_rows(settings, rows)
    samples = settings.resolved_samples()
    written = {
        "graph": write_csv(
            output_dir / f"{NAME}_graph.csv",
            GRAPH_COLUMNS,
            [{"quantity": k, "value": v} for k, v in statistics.items()],
        ),
        "rows": write_csv(output_dir / f"{NAME}_rows.csv", ROW_COLUMNS, rows),
        "best": write_csv(output_dir / f"{NAME}_best.csv", BEST_COLUMNS, best),
        "markdown": write_text(
            output_dir / f"{NAME}.md", markdown(settings, statistics, best, samples)
        ),
    }
    if plots:
        figure = plot(output_dir / f"{NAME}.png", settings, best)
        if figure is not None:
            written["figure"] = figure
    mc_seconds = seconds["b_min_sep"]
    per_calibration = sum(mc_seconds) / len(mc_seconds) if mc_seconds else math.nan
    scale = (FULL.resolved_samples() / samples) * (FULL.n_steps / settings.n_steps)
    full_calibrations = len(FULL.epsilons) * len(FULL.bands)
    written["metadata"] = write_metadata(
        output_dir / f"{NAME}.json",
        {
            "mode": mode,
            "settings": settings,
            "samples": samples,
            "engine": engine.record(),
        },
        {
            "wall_s": clock.wall,
            "cpu_s_main_process": clock.cpu,
            "graph_wall_s": graph_seconds,
            "workers": engine.workers,
            "per_method": {
                m: {"rows": len(v), "total_s": sum(v), "mean_s": sum(v) / len(v) if v else None}
                for m, v in seconds.items()
            },
            "monte_carlo_wall_s_per_calibration": per_calibration,
            "full_mode_monte_carlo_calibrations": full_calibrations,
            "full_mode_projected_monte_carlo_wall_s": per_calibration * scale * full_calibrations,
            "projection_note": "mean wall seconds per Monte Carlo calibration of this run x "
            "(full samples / these samples) x (full n / this n) x full calibrations, at this "
            "run's workers",
        },
    )
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The script's options (common ones plus grid overrides)."""
    add_common_arguments(parser, DEFAULT_SEED)
    grid = parser.add_argument_group("grid overrides")
    grid.add_argument("--epsilons", type=float_list, help="target epsilons, e.g. 1,2,4")
    grid.add_argument("--bands", type=int_list, help="numbers of bands (b = bands), e.g. 2,4")


def settings_from_args(args: argparse.Namespace) -> tuple[MASettings, str]:
    """The settings of parsed arguments and the mode's name."""
    return settings_with_overrides(args, QUICK, FULL, ("epsilons", "bands"))


def run(args: argparse.Namespace) -> int:
    """Run from parsed arguments; prints the markdown tables."""
    return run_script(args, settings_from_args, run_experiment, NAME)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paper.multi_attribution``."""
    return script_main("multi_attribution", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
