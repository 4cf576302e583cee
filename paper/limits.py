"""Paper §4.1's limits: b-min-sep against random-phase cyclic Poisson over a sigma grid.

At equal participation rate p0 and min-sep b, b-min-sep (warm start, docs/math.md §3) should be
strictly better than cyclic Poisson as sigma -> 0 and equal to first order as sigma -> infinity
(docs/math.md §4, §4.1). The fair cyclic baseline is the random-phase one (§4.1), itself never
worse than the fixed partition. For every sigma both schemes' losses are sampled (sigma-free
transcripts: one draw per scheme and direction serves the whole grid) and epsilon(delta) is
bracketed with certified bounds on both sides:

* delta(eps) is the mean of X = (1 - e^(eps - L))_+ in [0, 1]; a Chernoff-KL confidence bound
  on each side of each direction, union-bounded over the eps grid, the directions, both sides
  and the sigmas (total failure probability ``failure``), brackets it;
* eps_upper is the smallest grid eps whose upper delta bound is <= delta, eps_lower the largest
  grid eps whose lower delta bound is >= delta; outside the failure event the true epsilon(delta)
  lies in [eps_lower, eps_upper].

Run ``python -m paper.limits [--quick]``; writes ``limits.csv`` and ``limits.png``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.bounds import kl_upper_confidence
from minsep.framework.validation import integer, positive, positive_int, probability
from minsep.paper.common import (
    OUTPUT_DIR,
    STYLE,
    Stopwatch,
    fresh_output_dir,
    pyplot,
    save_figure,
    tuple_of,
    write_csv,
    write_metadata,
)
from minsep.schemes import BMinSep, CyclicPoisson
from minsep.strategies import BandedToeplitz

NAME = "limits"
COLUMNS = ("sigma", "scheme", "epsilon_hat", "epsilon_lower", "epsilon_upper")


@attrs.frozen(kw_only=True)
class LimitSettings:
    """One run: the setup, the sigma grid and the Monte Carlo budget."""

    n_steps: int = attrs.field(default=64, validator=positive_int())
    bands: int = attrs.field(default=4, validator=positive_int())
    min_sep: int = attrs.field(default=4, validator=positive_int())
    rate: float = attrs.field(default=1 / 16, validator=probability())
    delta: float = attrs.field(default=1e-2, validator=probability(open_high=True))
    sigmas: tuple[float, ...] = attrs.field(
        default=(0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0), validator=tuple_of(positive())
    )
    samples: int = attrs.field(default=200_000, validator=integer(low=100))
    failure: float = attrs.field(default=1e-3, validator=probability(open_high=True))
    grid_step: float = attrs.field(default=1e-3, validator=positive())
    seed: int = attrs.field(default=41, validator=integer(low=0))


FULL = LimitSettings()
QUICK = LimitSettings(samples=50_000)


def models(settings: LimitSettings) -> dict[str, PrivacyLossModel]:
    """The two loss models at equal p0 and b (bands <= b)."""
    strategy = BandedToeplitz.optimal(settings.n_steps, settings.bands)
    n, rate, b = settings.n_steps, settings.rate, settings.min_sep
    return {
        "b-min-sep": BMinSep(n_steps=n, rate=rate, min_sep=b).loss_model(strategy),
        "cyclic Poisson (random phase)": CyclicPoisson(
            n_steps=n, rate=rate, min_sep=b, partition="random"
        ).loss_model(strategy),
    }


@attrs.frozen(eq=False)
class LossSample:
    """Sorted losses of one direction with suffix sums, for O(log m) evaluations of
    ``mean((1 - e^(eps - L))_+) = (#{L > eps} - sum_{L > eps} e^(eps - L)) / m``."""

    sorted_losses: np.ndarray
    suffix: np.ndarray  # suffix[i] = sum_{j >= i} exp(-(L_j - L_0)) over the sorted losses

    @classmethod
    def of(cls, losses: np.ndarray) -> LossSample:
        ordered = np.sort(np.asarray(losses, dtype=np.float64))
        shifted = np.exp(-(ordered - ordered[0]))
        suffix = np.concatenate([np.cumsum(shifted[::-1])[::-1], [0.0]])
        return cls(ordered, suffix)

    def delta(self, eps: float) -> float:
        m = self.sorted_losses.size
        first = int(np.searchsorted(self.sorted_losses, eps, side="right"))
        tail = float(self.suffix[first]) * math.exp(eps - float(self.sorted_losses[0]))
        return max((m - first - tail) / m, 0.0)


def delta_value(samples: Sequence[LossSample], eps: float, side: str, log_inv: float) -> float:
    """Max over directions of the estimate (``side="hat"``) or a KL confidence bound."""
    out = 0.0
    for sample in samples:
        mean = min(sample.delta(eps), 1.0)
        m = sample.sorted_losses.size
        if side == "upper":
            mean = kl_upper_confidence(mean, m, log_inv)
        elif side == "lower":
            mean = 1.0 - kl_upper_confidence(1.0 - mean, m, log_inv)
        out = max(out, mean)
    return out


def epsilon_bracket(
    samples: Sequence[LossSample], delta: float, side: str, log_inv: float, step: float
) -> float:
    """On the grid eps = j·step (j >= 0): the smallest eps whose ``side`` value is <= delta
    (estimate or upper bound), or for ``side="lower"`` the largest whose lower bound is >= delta
    (0 when none). The values decrease in eps, so a bisection finds it."""
    top = max(float(s.sorted_losses[-1]) for s in samples)
    hi = max(math.ceil(top / step) + 1, 1)  # delta(hi * step) = 0
    if side == "lower":
        if delta_value(samples, 0.0, side, log_inv) < delta:
            return 0.0
        lo = 0  # invariant: value(lo) >= delta, value(hi) < delta
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if delta_value(samples, mid * step, side, log_inv) >= delta:
                lo = mid
            else:
                hi = mid
        return lo * step
    if delta_value(samples, 0.0, side, log_inv) <= delta:
        return 0.0
    if delta_value(samples, hi * step, side, log_inv) > delta:
        return math.inf
    lo = 0  # invariant: value(lo) > delta, value(hi) <= delta
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delta_value(samples, mid * step, side, log_inv) <= delta:
            hi = mid
        else:
            lo = mid
    return hi * step


def limit_rows(settings: LimitSettings) -> list[dict[str, Any]]:
    """epsilon(delta) estimate and certified bracket per sigma and scheme."""
    backend = numpy_backend()
    rows = []
    named = models(settings)
    checks = 2 * 2 * len(settings.sigmas) * len(named)  # sides x directions x sigmas x schemes
    for offset, (label, model) in enumerate(named.items()):
        transcripts = [
            model.draw(
                settings.samples,
                direction,
                backend.rng(np.random.SeedSequence((settings.seed, offset, index))),
                backend,
            )
            for index, direction in enumerate((Direction.REMOVE, Direction.ADD))
        ]
        for sigma in settings.sigmas:
            samples = [LossSample.of(np.asarray(model.log_ratio(t, sigma))) for t in transcripts]
            top = max(float(x.sorted_losses[-1]) for x in samples)
            grid = max(math.ceil(top / settings.grid_step) + 2, 2)
            log_inv = math.log(checks * grid / settings.failure)
            row: dict[str, Any] = {"sigma": sigma, "scheme": label}
            for column, side in (
                ("epsilon_hat", "hat"),
                ("epsilon_lower", "lower"),
                ("epsilon_upper", "upper"),
            ):
                row[column] = epsilon_bracket(
                    samples, settings.delta, side, log_inv, settings.grid_step
                )
            rows.append(row)
    return rows


def plot(path: Path, settings: LimitSettings, rows: Sequence[dict[str, Any]]) -> Path | None:
    """epsilon(delta) brackets against sigma (left) and the ratio of the estimates (right)."""
    plt = pyplot(path.name)
    if plt is None:
        return None
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    with plt.rc_context(STYLE):
        figure, (left, right) = plt.subplots(1, 2, figsize=(10.0, 4.2))
        for label in schemes:
            mine = [r for r in rows if r["scheme"] == label]
            sig = [r["sigma"] for r in mine]
            left.plot(sig, [r["epsilon_hat"] for r in mine], marker="o", label=label)
            left.fill_between(
                sig,
                [r["epsilon_lower"] for r in mine],
                [r["epsilon_upper"] for r in mine],
                alpha=0.25,
            )
        for axis in (left, right):
            axis.set_xscale("log")
            axis.set_xticks(list(settings.sigmas), [f"{x:g}" for x in settings.sigmas])
            axis.minorticks_off()
        left.set_yscale("log")
        left.set_xlabel("noise multiplier σ")
        left.set_ylabel(f"ε at δ = {settings.delta:g} (certified bracket)")
        left.legend(fontsize=8)
        by = {(r["sigma"], r["scheme"]): r["epsilon_hat"] for r in rows}
        ratio = [by[(s, schemes[0])] / by[(s, schemes[1])] for s in settings.sigmas]
        right.plot(settings.sigmas, ratio, marker="o")
        right.axhline(1.0, color="0.4", linestyle="--")
        right.set_xlabel("noise multiplier σ")
        right.set_ylabel("ε ratio b-min-sep / cyclic (random phase)")
        figure.suptitle(
            f"§4.1 limits: n = {settings.n_steps}, {settings.bands} bands, b = "
            f"{settings.min_sep}, p0 = {settings.rate:g}"
        )
        try:
            return save_figure(figure, path)
        finally:
            plt.close(figure)


def run_experiment(settings: LimitSettings, output_dir: Path, *, plots: bool = True) -> Path:
    """Write ``limits.csv``, ``limits.json`` (the settings, the wall and CPU seconds, and the
    environment: package versions and git commit) and ``limits.png`` into ``output_dir``;
    returns the CSV path."""
    watch = Stopwatch()
    rows = limit_rows(settings)
    csv_path = write_csv(output_dir / f"{NAME}.csv", COLUMNS, rows)
    write_metadata(
        output_dir / f"{NAME}.json",
        attrs.asdict(settings),
        {"wall_s": watch.wall, "cpu_s_main_process": watch.cpu},
    )
    if plots:
        plot(output_dir / f"{NAME}.png", settings, rows)
    return csv_path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paper.limits [--quick] [--output-dir DIR] [--no-plot]``."""
    parser = argparse.ArgumentParser(prog="paper.limits", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--output-dir",
        "--output",
        type=Path,
        default=None,
        help=f"output folder (default: a fresh runs/paper-limits-<UTC time>/; '--output "
        f"{OUTPUT_DIR}' overwrites the committed results)",
    )
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    output = fresh_output_dir(NAME) if args.output_dir is None else args.output_dir
    path = run_experiment(settings, output, plots=not args.no_plot)
    print(path.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
