"""Paper §7.4: the production use case (256-BandMF, n = 7200, |D| = 14,745,600, epsilon = 10).

Setup (paper §7.4): expected batch 1793, truncated batch B_max = 2048, delta = |D|^-1.1
(about 1.3016e-8), 256-BandMF (bands = 256) with 256 cyclic-Poisson groups or 256-min-sep.

1. Exact PLD calibrations (dp_accounting) of the noise multiplier at (10, delta): DP-SGD
   (Poisson, identity) and cyclic Poisson BandMF, each truncated to B_max (dp_accounting's
   truncated subsampled Gaussian; for cyclic Poisson over one group of |D|/256 examples) and
   not. The paper quotes sigma ~ 0.627 for truncated cyclic Poisson and ~ 0.368 for DP-SGD.
2. Monte Carlo point estimates eps_hat(delta) of 256-min-sep BandMF (warm start, truncated as
   in the paper's App. D, and untruncated) at sigma in {0.56, 0.5, 0.47, 0.44}, on one set of
   draws shared by the four sigmas, with the samples affordable here. These are NOT certified:
   a certified check at delta ~ 1.3e-8 needs ~1e10 samples (part 3), and with far fewer samples
   the estimate cannot see the tail that sets epsilon (it typically under-reports).
4. Which accounting assumption reproduces the paper's sigma ~ 0.627: the same schemes accounted
   by dp_accounting's PLD and RDP accountants (:mod:`minsep.paper.rdp`), with the sampling
   rate taken from the expected batch (q = b B/|D|) or from the padded batch (q = b B_max/|D|).
3. The samples per direction a certified check needs (``min_samples``, Fact 4.2) at base delta
   delta/2 and delta/4, and what the paper's 7.5e9 samples certify; sample-steps and the
   projected time on a GPU at the engine's target of 1e10 sample-steps/s (a projection, not a
   measurement). The projected CPU time from the throughput measured in part 2 is in the JSON
   record (timing) and the README.

Run ``python -m paper.production [--quick]`` or ``minsep paper production [--quick]``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from minsep.accountants.pld import PLDAccountant
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.montecarlo import (
    EngineConfig,
    base_delta,
    estimate_delta,
    estimate_epsilon,
    get_executor,
    min_samples,
    sample,
)
from minsep.framework.validation import fail, integer, number, positive, positive_int
from minsep.paper.common import (
    STYLE,
    EngineOptions,
    Reporter,
    Stopwatch,
    add_common_arguments,
    markdown_table,
    pyplot,
    run_script,
    save_figure,
    script_main,
    tuple_of,
    write_csv,
    write_metadata,
    write_text,
)
from minsep.paper.rdp import rdp_calibrate
from minsep.schemes import BMinSep, CyclicPoisson, Poisson, Truncated
from minsep.strategies import BandedToeplitz, Identity

NAME = "production"
DEFAULT_SEED = 74

#: The engine's GPU target used for projections (sample-steps per second on one H200).
GPU_SAMPLE_STEPS_PER_SECOND = 1e10

#: The paper's numbers (§7.4).
PAPER_SIGMA_CYCLIC_TRUNCATED = 0.627
PAPER_SIGMA_POISSON = 0.368
PAPER_SIGMA_B_MIN_SEP = 0.47
PAPER_SAMPLES = 7_500_000_000


@attrs.frozen(kw_only=True)
class ProductionSettings:
    """The production setup and the Monte Carlo budget of one run.

    Attributes:
        n_steps, expected_batch, max_batch, dataset_size, epsilon, delta_exponent: the
            training setup (delta = dataset_size ** -delta_exponent).
        bands: bands of the BandMF strategy, also the cyclic groups and the min-sep b.
        sigmas: noise multipliers of the Monte Carlo estimates (the paper's four).
        samples: Monte Carlo samples per direction, untruncated 256-min-sep.
        truncated_samples: Monte Carlo samples per direction, truncated 256-min-sep.
        chunk_size: samples per chunk (with the seed, fixes the draws).
        pld_interval: dp_accounting's value discretisation interval (pessimistic rounding).
    """

    n_steps: int = attrs.field(default=7200, validator=positive_int())
    expected_batch: int = attrs.field(default=1793, validator=positive_int())
    max_batch: int = attrs.field(default=2048, validator=positive_int())
    dataset_size: int = attrs.field(default=14_745_600, validator=positive_int())
    epsilon: float = attrs.field(default=10.0, validator=positive())
    delta_exponent: float = attrs.field(default=1.1, validator=positive())
    bands: int = attrs.field(default=256, validator=positive_int())
    sigmas: tuple[float, ...] = attrs.field(
        default=(0.56, 0.5, 0.47, 0.44), validator=tuple_of(positive())
    )
    samples: int = attrs.field(default=1 << 20, validator=integer(low=2))
    truncated_samples: int = attrs.field(default=1 << 18, validator=integer(low=2))
    chunk_size: int = attrs.field(default=1024, validator=positive_int())
    pld_interval: float = attrs.field(
        default=1e-3, validator=number(low=0.0, high=0.1, low_open=True)
    )

    def __attrs_post_init__(self) -> None:
        if self.expected_batch > self.dataset_size:
            raise fail(self, "expected_batch", self.expected_batch, "<= dataset_size")

    @property
    def delta(self) -> float:
        """|D|^-1.1."""
        return float(self.dataset_size ** (-self.delta_exponent))

    @property
    def rate(self) -> float:
        """p0 = expected batch / |D|."""
        return self.expected_batch / self.dataset_size


FULL = ProductionSettings()
QUICK = ProductionSettings(samples=4096, truncated_samples=4096)


# --- part 1: exact PLD calibrations ------------------------------------------------------------


@attrs.frozen
class Case:
    """One exactly accounted configuration."""

    label: str
    scheme: SamplingScheme
    strategy: Strategy
    paper_sigma: float | None


def pld_cases(settings: ProductionSettings, banded: Strategy) -> list[Case]:
    """DP-SGD and cyclic Poisson BandMF, untruncated and truncated to B_max."""
    n, rate = settings.n_steps, settings.rate
    truncation = {"max_batch_size": settings.max_batch, "dataset_size": settings.dataset_size}
    return [
        Case("DP-SGD (Poisson)", Poisson.from_rate(n, rate), Identity(), PAPER_SIGMA_POISSON),
        Case(
            "DP-SGD (Poisson), truncated",
            Truncated.from_rate(n, rate, base="poisson", **truncation),
            Identity(),
            None,
        ),
        Case(
            f"cyclic Poisson {settings.bands}-BandMF",
            CyclicPoisson.from_rate(n, rate, min_sep=settings.bands),
            banded,
            None,
        ),
        Case(
            f"cyclic Poisson {settings.bands}-BandMF, truncated",
            Truncated.from_rate(
                n, rate, base="cyclic_poisson", min_sep=settings.bands, **truncation
            ),
            banded,
            PAPER_SIGMA_CYCLIC_TRUNCATED,
        ),
    ]


PLD_COLUMNS = ("configuration", "accountant", "sigma", "epsilon_at_sigma", "paper_sigma")


def pld_rows(
    settings: ProductionSettings, cases: Sequence[Case], accountant: PLDAccountant
) -> list[dict[str, Any]]:
    """The calibrated sigma of every case at (epsilon, delta)."""
    out = []
    for case in cases:
        cal = accountant.calibrate(case.scheme, case.strategy, settings.epsilon, settings.delta)
        eps = accountant.epsilon(case.scheme, case.strategy, cal.sigma, settings.delta)
        out.append(
            {
                "configuration": case.label,
                "accountant": "pld",
                "sigma": cal.sigma,
                "epsilon_at_sigma": eps.epsilon,
                "paper_sigma": case.paper_sigma,
            }
        )
    return out


# --- part 4: which assumption gives the paper's 0.627 ----------------------------------------

ASSUMPTION_COLUMNS = (
    "configuration",
    "accountant",
    "batch_for_rate",
    "sampling_rate",
    "sigma",
    "sigma_rounded_up_3dp",
    "paper_sigma",
)


def _poisson(n: int) -> Callable[[float], SamplingScheme]:
    return lambda rate: Poisson.from_rate(n, rate)


def _cyclic(n: int, groups: int) -> Callable[[float], SamplingScheme]:
    return lambda rate: CyclicPoisson.from_rate(n, rate, min_sep=groups)


def assumption_rows(
    settings: ProductionSettings, banded: Strategy, accountant: PLDAccountant
) -> list[dict[str, Any]]:
    """Calibrated sigma of DP-SGD and cyclic Poisson (untruncated events) by PLD and by RDP,
    with the per-step rate from the expected batch B or from the padded batch B_max.

    The rate enters the events as q = B/|D| (DP-SGD) and q = b·B/|D| (cyclic Poisson, one of b
    groups); ``sigma_rounded_up_3dp`` is sigma rounded up to three decimals, as a deployed
    configuration would quote it.
    """
    n, b, size = settings.n_steps, settings.bands, settings.dataset_size
    families: list[tuple[str, Strategy, float, int, Callable[[float], SamplingScheme]]] = [
        ("DP-SGD (Poisson)", Identity(), PAPER_SIGMA_POISSON, 1, _poisson(n)),
        (f"cyclic Poisson {b}-BandMF", banded, PAPER_SIGMA_CYCLIC_TRUNCATED, b, _cyclic(n, b)),
    ]
    batches = (("expected B", settings.expected_batch), ("padded B_max", settings.max_batch))
    out = []
    for label, strategy, paper_sigma, groups, build in families:
        for name, batch in batches:
            scheme = build(batch / size)
            for route in ("pld", "rdp"):
                if route == "pld":
                    cal = accountant.calibrate(scheme, strategy, settings.epsilon, settings.delta)
                    sigma = cal.sigma
                else:
                    sigma = rdp_calibrate(scheme, strategy, settings.epsilon, settings.delta)
                out.append(
                    {
                        "configuration": label,
                        "accountant": route,
                        "batch_for_rate": name,
                        "sampling_rate": min(1.0, groups * batch / size),
                        "sigma": sigma,
                        "sigma_rounded_up_3dp": math.ceil(round(sigma * 1000, 9)) / 1000,
                        "paper_sigma": paper_sigma,
                    }
                )
    return out


# --- part 2: Monte Carlo estimates -------------------------------------------------------------

MC_COLUMNS = (
    "sigma",
    "scheme",
    "samples",
    "epsilon_hat",
    "epsilon_std_error",
    "delta_hat_at_epsilon",
    "delta_std_error",
    "cyclic_truncated_epsilon_pld",
    "resolvable_delta",
    "epsilon_hat_at_resolvable_delta",
    "cyclic_truncated_epsilon_pld_at_resolvable_delta",
)

#: The resolvable delta is this many over the smallest sample count: a delta whose estimate
#: rests on about this many samples' worth of tail mass.
RESOLVABLE_HITS = 10.0


def monte_carlo_rows(
    settings: ProductionSettings,
    banded: Strategy,
    engine: EngineOptions,
    cyclic_truncated: Case,
    accountant: PLDAccountant,
    report: Reporter,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """eps_hat(delta) and delta_hat(epsilon) of 256-min-sep at each sigma (shared draws), with
    the exact epsilon of truncated cyclic Poisson at the same sigma; and the throughput."""
    n, rate = settings.n_steps, settings.rate
    b = settings.bands
    schemes = [
        (
            f"{b}-min-sep, truncated",
            Truncated(
                base=BMinSep(n_steps=n, rate=rate, min_sep=b),
                max_batch_size=settings.max_batch,
                dataset_size=settings.dataset_size,
            ),
            settings.truncated_samples,
        ),
        (f"{b}-min-sep", BMinSep(n_steps=n, rate=rate, min_sep=b), settings.samples),
    ]
    config = EngineConfig(
        chunk_size=settings.chunk_size,
        backend=engine.backend,
        executor=get_executor(engine.workers, None, engine.scheduler),
        progress=engine.progress,
    )
    resolvable = RESOLVABLE_HITS / min(settings.samples, settings.truncated_samples)

    def exact(sigma: float, delta: float) -> float:
        case = cyclic_truncated
        return accountant.epsilon(case.scheme, case.strategy, sigma, delta).epsilon

    rows: list[dict[str, Any]] = []
    throughput: dict[str, Any] = {}
    for label, scheme, count in schemes:
        report(f"Monte Carlo: {label}, {count} samples per direction, sigmas {settings.sigmas}")
        clock = Stopwatch()
        tally = sample(
            scheme.loss_model(banded),
            settings.sigmas,
            n_samples=count,
            seed=engine.seed,
            checks=(settings.epsilon,),
            config=config,
            description=label,
        )
        wall = clock.wall
        throughput[label] = {
            "samples_per_direction": count,
            "wall_s": wall,
            "workers": engine.workers,
            "samples_per_s_both_directions": 2 * count / wall,
            "sample_steps_per_s": 2 * count * n / wall,
        }
        for index, sigma in enumerate(settings.sigmas):
            eps = estimate_epsilon(tally, settings.delta, index)
            dlt = estimate_delta(tally, settings.epsilon, index)
            rows.append(
                {
                    "sigma": sigma,
                    "scheme": label,
                    "samples": count,
                    "epsilon_hat": eps.value,
                    "epsilon_std_error": eps.std_error,
                    "delta_hat_at_epsilon": dlt.value,
                    "delta_std_error": dlt.std_error,
                    "cyclic_truncated_epsilon_pld": exact(sigma, settings.delta),
                    "resolvable_delta": resolvable,
                    "epsilon_hat_at_resolvable_delta": estimate_epsilon(
                        tally, resolvable, index
                    ).value,
                    "cyclic_truncated_epsilon_pld_at_resolvable_delta": exact(sigma, resolvable),
                }
            )
    return rows, throughput


# --- part 3: the cost of a certified check -----------------------------------------------------

SAMPLE_COLUMNS = (
    "check",
    "base_delta_over_delta",
    "samples_per_direction",
    "sample_steps",
    "gpu_hours_projected",
)


def sample_rows(settings: ProductionSettings) -> list[dict[str, Any]]:
    """Samples per direction of a certified verification at delta, and their GPU projection.

    sample-steps = 2 directions x samples x n; GPU hours at 1e10 sample-steps/s (projection).
    """
    delta, n = settings.delta, settings.n_steps
    checks: list[tuple[str, float, int]] = []
    for fraction, label in ((0.5, "base delta = delta/2"), (0.25, "base delta = delta/4")):
        checks.append((label, fraction, min_samples(fraction * delta, delta)))
    checks.append(
        (
            "paper's 7.5e9 samples",
            base_delta(PAPER_SAMPLES, delta) / delta,
            PAPER_SAMPLES,
        )
    )
    out = []
    for label, fraction, m in checks:
        steps = 2 * m * n
        out.append(
            {
                "check": label,
                "base_delta_over_delta": fraction,
                "samples_per_direction": m,
                "sample_steps": float(steps),
                "gpu_hours_projected": steps / GPU_SAMPLE_STEPS_PER_SECOND / 3600.0,
            }
        )
    return out


def cpu_projection(
    samples: Sequence[dict[str, Any]], throughput: dict[str, Any]
) -> list[dict[str, Any]]:
    """Core-days of each certified check from the measured throughput (per worker)."""
    out = []
    for label, measured in throughput.items():
        per_core = measured["samples_per_s_both_directions"] / max(measured["workers"], 1)
        for row in samples:
            seconds = 2 * row["samples_per_direction"] / per_core
            out.append(
                {
                    "scheme": label,
                    "check": row["check"],
                    "cpu_core_days": seconds / 86400.0,
                    "measured_samples_per_core_s": per_core,
                }
            )
    return out


# --- output ----------------------------------------------------------------------------------


def markdown(
    settings: ProductionSettings,
    pld: Sequence[dict[str, Any]],
    mc: Sequence[dict[str, Any]],
    samples: Sequence[dict[str, Any]],
    assumptions: Sequence[dict[str, Any]] = (),
) -> str:
    """The tables of parts 1-4."""
    parts = [
        f"n = {settings.n_steps}, expected batch {settings.expected_batch}, B_max = "
        f"{settings.max_batch}, |D| = {settings.dataset_size}, ε = {settings.epsilon:g}, "
        f"δ = |D|^-{settings.delta_exponent:g} = {settings.delta:.5g}, "
        f"{settings.bands}-BandMF.",
        "",
        "Exact (PLD) calibrations:",
        "",
        markdown_table(
            ["configuration", "σ (ours)", "ε at σ", "σ (paper)"],
            [
                [r["configuration"], r["sigma"], r["epsilon_at_sigma"], r["paper_sigma"]]
                for r in pld
            ],
        ),
        "",
        "Monte Carlo point estimates (not certified) of "
        f"{settings.bands}-min-sep, draws shared across σ; exact ε of truncated cyclic "
        "Poisson at the same σ for reference:",
        "",
        markdown_table(
            [
                "σ",
                "scheme",
                "samples/direction",
                "ε̂(δ)",
                "δ̂(ε=10)",
                "cyclic ε(δ)",
                "δ_r",
                "ε̂(δ_r)",
                "cyclic ε(δ_r)",
            ],
            [
                [
                    r["sigma"],
                    r["scheme"],
                    r["samples"],
                    r["epsilon_hat"],
                    f"{r['delta_hat_at_epsilon']:.3g}",
                    r["cyclic_truncated_epsilon_pld"],
                    f"{r['resolvable_delta']:.3g}",
                    r["epsilon_hat_at_resolvable_delta"],
                    r["cyclic_truncated_epsilon_pld_at_resolvable_delta"],
                ]
                for r in mc
            ],
        ),
        "",
        f"δ_r = {RESOLVABLE_HITS:g} / (fewest samples): a δ the sample can resolve, where "
        "the two schemes compare meaningfully at the same σ. At δ itself the estimate rests on "
        "the few largest losses of the sample and under-reports (its delta-method standard "
        "error, in the CSV, does not capture that).",
        "",
        "Samples for a certified check at δ (per direction; GPU time projected at 1e10 "
        "sample-steps/s, not measured):",
        "",
        markdown_table(
            ["check", "δ_b/δ", "samples/direction", "sample-steps", "GPU hours (projected)"],
            [
                [
                    r["check"],
                    r["base_delta_over_delta"],
                    f"{r['samples_per_direction']:.4g}",
                    f"{r['sample_steps']:.3g}",
                    r["gpu_hours_projected"],
                ]
                for r in samples
            ],
        ),
    ]
    if assumptions:
        parts += [
            "",
            "Which assumption reproduces the paper's σ (untruncated events; the rate from the "
            "expected batch B or the padded batch B_max; σ rounded up to 3 decimals):",
            "",
            markdown_table(
                ["configuration", "accountant", "rate from", "q", "σ", "σ ↑ 3 dp", "σ (paper)"],
                [
                    [
                        r["configuration"],
                        r["accountant"],
                        r["batch_for_rate"],
                        f"{r['sampling_rate']:.6g}",
                        r["sigma"],
                        r["sigma_rounded_up_3dp"],
                        r["paper_sigma"],
                    ]
                    for r in assumptions
                ],
            ),
        ]
    return "\n".join(parts)


def plot(
    path: Path,
    settings: ProductionSettings,
    pld: Sequence[dict[str, Any]],
    mc: Sequence[dict[str, Any]],
) -> Path | None:
    """epsilon against sigma for b-min-sep (Monte Carlo estimates, uncertified) and truncated
    cyclic Poisson (exact), at the target delta (left, with the calibrated and the paper's
    sigmas) and at the resolvable delta_r (right)."""
    plt = pyplot(path.name)
    if plt is None:
        return None
    schemes = list(dict.fromkeys(r["scheme"] for r in mc))
    first = [r for r in mc if r["scheme"] == schemes[0]]
    with plt.rc_context(STYLE):
        figure, axes = plt.subplots(1, 2, figsize=(11.0, 4.6))
        panels = (
            ("epsilon_hat", "cyclic_truncated_epsilon_pld", f"{settings.delta:.4g}"),
            (
                "epsilon_hat_at_resolvable_delta",
                "cyclic_truncated_epsilon_pld_at_resolvable_delta",
                f"{first[0]['resolvable_delta']:.3g} (resolvable)",
            ),
        )
        for axis, (mc_key, exact_key, delta_text) in zip(axes, panels, strict=True):
            for label in schemes:
                rows = [r for r in mc if r["scheme"] == label]
                axis.plot(
                    [r["sigma"] for r in rows],
                    [r[mc_key] for r in rows],
                    marker="o",
                    label=f"{label}: Monte Carlo ε̂, {rows[0]['samples']} samples (uncertified)",
                )
            axis.plot(
                [r["sigma"] for r in first],
                [r[exact_key] for r in first],
                marker="s",
                label="cyclic Poisson, truncated: exact ε (PLD)",
            )
            axis.set_xlabel("noise multiplier σ")
            axis.set_ylabel(f"ε at δ = {delta_text}")
            axis.grid(True, alpha=0.3)
        left = axes[0]
        left.axhline(settings.epsilon, color="0.3", linestyle="--", label="target ε")
        # The reference sigmas are labelled on the lines themselves, so that the legend keeps
        # only the curves (a legend of eight entries was unreadable).
        marks = [
            (pld[0]["sigma"], "tab:gray", "-.", f"DP-SGD {pld[0]['sigma']:.3f}"),
            (pld[-1]["sigma"], "tab:green", "-.", f"cyclic {pld[-1]['sigma']:.3f}"),
            (PAPER_SIGMA_CYCLIC_TRUNCATED, "tab:green", ":", "cyclic 0.627 (paper)"),
            (PAPER_SIGMA_B_MIN_SEP, "tab:blue", ":", "b-min-sep 0.47 (paper, cert.)"),
        ]
        for sigma, colour, style, label in marks:
            left.axvline(sigma, color=colour, linestyle=style, linewidth=1.0)
            left.text(
                sigma,
                0.98,
                f" σ = {label}",
                transform=left.get_xaxis_transform(),
                rotation=90,
                va="top",
                ha="right",
                fontsize=7.5,
                color=colour,
            )
        left.set_title("At the target δ: the sample cannot see the tail")
        axes[1].set_title("At a δ the sample resolves")
        handles, labels = left.get_legend_handles_labels()
        figure.legend(
            handles,
            labels,
            loc="lower center",
            bbox_to_anchor=(0.5, -0.02),
            ncol=2,
            fontsize=9,
            frameon=False,
        )
        figure.subplots_adjust(bottom=0.27)
        figure.suptitle(
            f"Production setting: n = {settings.n_steps}, {settings.bands}-BandMF, "
            f"|D| = {settings.dataset_size}",
            y=1.0,
        )
        try:
            return save_figure(figure, path)
        finally:
            plt.close(figure)


def certified(output_dir: Path) -> str:
    """Part 4, when ``python -m paper.production_certified`` has written its report into
    ``output_dir``: the escort-certified 256-min-sep sigma (docs/rdp-escort.md §8)."""
    path = output_dir / "production_certified.md"
    if not path.exists():
        return ""
    return "\n## Certified (escort importance sampling, paper/production_certified.py)\n\n" + (
        path.read_text()
    )


def run_experiment(
    settings: ProductionSettings,
    engine: EngineOptions,
    output_dir: Path,
    *,
    plots: bool = True,
    mode: str = "custom",
) -> dict[str, Path]:
    """Run parts 1-4 and write ``production_{pld,monte_carlo,samples,assumptions}.csv``,
    ``.json``, ``.md`` and ``production.png`` into ``output_dir``."""
    clock = Stopwatch()
    report = Reporter(NAME, engine.progress, clock)
    accountant = PLDAccountant(value_discretization_interval=settings.pld_interval)
    report(f"strategy: MSE-optimal {settings.bands}-BandMF for n = {settings.n_steps}")
    banded = BandedToeplitz.optimal(settings.n_steps, settings.bands)
    cases = pld_cases(settings, banded)
    report("exact PLD calibrations")
    pld_clock = Stopwatch()
    pld = pld_rows(settings, cases, accountant)
    pld_seconds = pld_clock.wall
    report("PLD and RDP under the expected and the padded batch (the paper's 0.627)")
    assumptions = assumption_rows(settings, banded, accountant)
    mc, throughput = monte_carlo_rows(settings, banded, engine, cases[-1], accountant, report)
    samples = sample_rows(settings)
    written = {
        "pld": write_csv(output_dir / f"{NAME}_pld.csv", PLD_COLUMNS, pld),
        "monte_carlo": write_csv(output_dir / f"{NAME}_monte_carlo.csv", MC_COLUMNS, mc),
        "samples": write_csv(output_dir / f"{NAME}_samples.csv", SAMPLE_COLUMNS, samples),
        "assumptions": write_csv(
            output_dir / f"{NAME}_assumptions.csv", ASSUMPTION_COLUMNS, assumptions
        ),
        "markdown": write_text(
            output_dir / f"{NAME}.md",
            markdown(settings, pld, mc, samples, assumptions) + certified(output_dir),
        ),
    }
    if plots:
        figure = plot(output_dir / f"{NAME}.png", settings, pld, mc)
        if figure is not None:
            written["figure"] = figure
    written["metadata"] = write_metadata(
        output_dir / f"{NAME}.json",
        {
            "mode": mode,
            "settings": settings,
            "delta": settings.delta,
            "rate": settings.rate,
            "engine": engine.record(),
            "gpu_sample_steps_per_s_assumed": GPU_SAMPLE_STEPS_PER_SECOND,
        },
        {
            "wall_s": clock.wall,
            "cpu_s_main_process": clock.cpu,
            "pld_wall_s": pld_seconds,
            "monte_carlo": throughput,
            "cpu_projection": cpu_projection(samples, throughput),
        },
    )
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The script's options (``--samples`` sets both Monte Carlo sample counts)."""
    add_common_arguments(parser, DEFAULT_SEED)


def settings_from_args(args: argparse.Namespace) -> tuple[ProductionSettings, str]:
    """The settings of parsed arguments and the mode's name."""
    settings, mode = (QUICK, "quick") if args.quick else (FULL, "full")
    if args.samples is not None:
        settings = attrs.evolve(settings, samples=args.samples, truncated_samples=args.samples)
    return settings, mode


def run(args: argparse.Namespace) -> int:
    """Run from parsed arguments; prints the markdown tables."""
    return run_script(args, settings_from_args, run_experiment, NAME)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paper.production``."""
    return script_main("production", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "FULL",
    "QUICK",
    "ProductionSettings",
    "add_arguments",
    "assumption_rows",
    "main",
    "run",
    "run_experiment",
    "sample_rows",
]
