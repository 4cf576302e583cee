"""Parts 2 and 3 of paper §7.4 (:mod:`minsep.paper.production`): what sampling sees and
what certifying would cost.

Part 2: Monte Carlo point estimates eps_hat(delta) of 256-min-sep BandMF (truncated and not) at
the paper's sigmas on one set of draws, beside the exact epsilon of truncated cyclic Poisson;
NOT certified (at delta ~ 1.3e-8 the sample cannot see the tail). Part 3: the samples per
direction a certified check needs (``min_samples``, Fact 4.2), their sample-steps and projected
GPU hours, and the CPU core-days at the throughput measured in part 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from minsep.accountants.pld import PLDAccountant
from minsep.framework.interfaces import Strategy
from minsep.framework.montecarlo import (
    EngineConfig,
    base_delta,
    estimate_delta,
    estimate_epsilon,
    get_executor,
    min_samples,
    sample,
)
from minsep.paper.options import EngineOptions
from minsep.paper.production_exact import Case
from minsep.paper.production_settings import (
    GPU_SAMPLE_STEPS_PER_SECOND,
    PAPER_SAMPLES,
    ProductionSettings,
)
from minsep.paper.script import Reporter, Stopwatch
from minsep.schemes import BMinSep, Truncated

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


__all__ = [
    "MC_COLUMNS",
    "RESOLVABLE_HITS",
    "SAMPLE_COLUMNS",
    "cpu_projection",
    "monte_carlo_rows",
    "sample_rows",
]
