"""The tables and the figure of paper §7.4 (:mod:`minsep.paper.production`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from minsep.paper.output import markdown_table
from minsep.paper.plots import STYLE, pyplot, save_figure
from minsep.paper.production_sampling import RESOLVABLE_HITS
from minsep.paper.production_settings import (
    PAPER_SIGMA_B_MIN_SEP,
    PAPER_SIGMA_CYCLIC_TRUNCATED,
    ProductionSettings,
)


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
        _exact_table(pld),
        "",
        "Monte Carlo point estimates (not certified) of "
        f"{settings.bands}-min-sep, draws shared across σ; exact ε of truncated cyclic "
        "Poisson at the same σ for reference:",
        "",
        _monte_carlo_table(mc),
        "",
        f"δ_r = {RESOLVABLE_HITS:g} / (fewest samples): a δ the sample can resolve, where "
        "the two schemes compare meaningfully at the same σ. At δ itself the estimate rests on "
        "the few largest losses of the sample and under-reports (its delta-method standard "
        "error, in the CSV, does not capture that).",
        "",
        "Samples for a certified check at δ (per direction; GPU time projected at 1e10 "
        "sample-steps/s, not measured):",
        "",
        _samples_table(samples),
    ]
    if assumptions:
        parts += [
            "",
            "Which assumption reproduces the paper's σ (untruncated events; the rate from the "
            "expected batch B or the padded batch B_max; σ rounded up to 3 decimals):",
            "",
            _assumptions_table(assumptions),
        ]
    return "\n".join(parts)


def _exact_table(pld: Sequence[dict[str, Any]]) -> str:
    """Part 1: the calibrated sigma of each configuration against the paper's."""
    return markdown_table(
        ["configuration", "σ (ours)", "ε at σ", "σ (paper)"],
        [[r["configuration"], r["sigma"], r["epsilon_at_sigma"], r["paper_sigma"]] for r in pld],
    )


def _monte_carlo_table(mc: Sequence[dict[str, Any]]) -> str:
    """Part 2: the uncertified estimates at delta and at the resolvable delta_r."""
    heads = [
        "σ",
        "scheme",
        "samples/direction",
        "ε̂(δ)",
        "δ̂(ε=10)",
        "cyclic ε(δ)",
        "δ_r",
        "ε̂(δ_r)",
        "cyclic ε(δ_r)",
    ]
    rows = [
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
    ]
    return markdown_table(heads, rows)


def _samples_table(samples: Sequence[dict[str, Any]]) -> str:
    """Part 3: the samples a certified check needs and their projected GPU time."""
    return markdown_table(
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
    )


def _assumptions_table(assumptions: Sequence[dict[str, Any]]) -> str:
    """Part 4: sigma by PLD and RDP under the expected and the padded batch."""
    return markdown_table(
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
    )


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
    first = [r for r in mc if r["scheme"] == mc[0]["scheme"]]
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
            _draw_curves(axis, mc, mc_key, exact_key)
            axis.set_xlabel("noise multiplier σ")
            axis.set_ylabel(f"ε at δ = {delta_text}")
            axis.grid(True, alpha=0.3)
        left = axes[0]
        left.axhline(settings.epsilon, color="0.3", linestyle="--", label="target ε")
        _mark_sigmas(left, pld)
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


def _draw_curves(axis: Any, mc: Sequence[dict[str, Any]], mc_key: str, exact_key: str) -> None:
    """One panel's curves: each scheme's Monte Carlo estimate ``mc_key`` against sigma, then
    the exact epsilon ``exact_key`` of truncated cyclic Poisson (read off the first scheme's
    rows: the same at every scheme)."""
    schemes = list(dict.fromkeys(r["scheme"] for r in mc))
    for label in schemes:
        rows = [r for r in mc if r["scheme"] == label]
        axis.plot(
            [r["sigma"] for r in rows],
            [r[mc_key] for r in rows],
            marker="o",
            label=f"{label}: Monte Carlo ε̂, {rows[0]['samples']} samples (uncertified)",
        )
    first = [r for r in mc if r["scheme"] == schemes[0]]
    axis.plot(
        [r["sigma"] for r in first],
        [r[exact_key] for r in first],
        marker="s",
        label="cyclic Poisson, truncated: exact ε (PLD)",
    )


def _mark_sigmas(axis: Any, pld: Sequence[dict[str, Any]]) -> None:
    """Vertical lines at the calibrated and the paper's sigmas, labelled on the lines
    themselves so that the legend keeps only the curves (a legend of eight entries was
    unreadable)."""
    marks = [
        (pld[0]["sigma"], "tab:gray", "-.", f"DP-SGD {pld[0]['sigma']:.3f}"),
        (pld[-1]["sigma"], "tab:green", "-.", f"cyclic {pld[-1]['sigma']:.3f}"),
        (PAPER_SIGMA_CYCLIC_TRUNCATED, "tab:green", ":", "cyclic 0.627 (paper)"),
        (PAPER_SIGMA_B_MIN_SEP, "tab:blue", ":", "b-min-sep 0.47 (paper, cert.)"),
    ]
    for sigma, colour, style, label in marks:
        axis.axvline(sigma, color=colour, linestyle=style, linewidth=1.0)
        axis.text(
            sigma,
            0.98,
            f" σ = {label}",
            transform=axis.get_xaxis_transform(),
            rotation=90,
            va="top",
            ha="right",
            fontsize=7.5,
            color=colour,
        )


def certified(output_dir: Path) -> str:
    """Part 4, when ``python -m paper.production_certified`` has written its report into
    ``output_dir``: the escort-certified 256-min-sep sigma (docs/rdp-escort.md §8)."""
    path = output_dir / "production_certified.md"
    if not path.exists():
        return ""
    return "\n## Certified (escort importance sampling, paper/production_certified.py)\n\n" + (
        path.read_text()
    )


__all__ = ["certified", "markdown", "plot"]
