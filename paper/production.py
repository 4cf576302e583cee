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

The parts live in :mod:`~minsep.paper.production_settings` (the setup),
:mod:`~minsep.paper.production_exact` (parts 1 and 4), :mod:`~minsep.paper.production_sampling`
(parts 2 and 3) and :mod:`~minsep.paper.production_report` (tables and figure).

Run ``python -m paper.production [--quick]`` or ``minsep paper production [--quick]``.
"""

from __future__ import annotations

import argparse

import attrs

from minsep.accountants.pld import PLDAccountant
from minsep.paper.options import EngineOptions
from minsep.paper.production_exact import (
    ASSUMPTION_COLUMNS,
    PLD_COLUMNS,
    Case,
    assumption_rows,
    pld_cases,
    pld_rows,
)
from minsep.paper.production_report import certified, markdown, plot
from minsep.paper.production_sampling import (
    MC_COLUMNS,
    SAMPLE_COLUMNS,
    cpu_projection,
    monte_carlo_rows,
    sample_rows,
)
from minsep.paper.production_settings import (
    FULL,
    GPU_SAMPLE_STEPS_PER_SECOND,
    PAPER_SAMPLES,
    PAPER_SIGMA_B_MIN_SEP,
    PAPER_SIGMA_CYCLIC_TRUNCATED,
    PAPER_SIGMA_POISSON,
    QUICK,
    ProductionSettings,
)
from minsep.paper.script import Script, ScriptRun, Stopwatch
from minsep.strategies import BandedToeplitz

__all__ = [
    "ASSUMPTION_COLUMNS",
    "FULL",
    "MC_COLUMNS",
    "PAPER_SAMPLES",
    "PAPER_SIGMA_B_MIN_SEP",
    "PAPER_SIGMA_CYCLIC_TRUNCATED",
    "PAPER_SIGMA_POISSON",
    "PLD_COLUMNS",
    "QUICK",
    "SAMPLE_COLUMNS",
    "SCRIPT",
    "Case",
    "EngineOptions",
    "ProductionSettings",
    "assumption_rows",
    "markdown",
    "monte_carlo_rows",
    "pld_cases",
    "pld_rows",
    "plot",
    "run_experiment",
    "sample_rows",
]


def settings_from_args(args: argparse.Namespace) -> tuple[ProductionSettings, str]:
    """The settings of parsed arguments and the mode's name (``--samples`` sets both Monte
    Carlo sample counts)."""
    settings, mode = (QUICK, "quick") if args.quick else (FULL, "full")
    if args.samples is not None:
        settings = attrs.evolve(settings, samples=args.samples, truncated_samples=args.samples)
    return settings, mode


def _run(settings: ProductionSettings, job: ScriptRun) -> None:
    """Run parts 1-4 and write ``production_{pld,monte_carlo,samples,assumptions}.csv``,
    ``.md``, ``production.png`` and ``.json``."""
    report = job.report
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
    mc, throughput = monte_carlo_rows(settings, banded, job.engine, cases[-1], accountant, report)
    samples = sample_rows(settings)
    job.csv("pld", PLD_COLUMNS, pld)
    job.csv("monte_carlo", MC_COLUMNS, mc)
    job.csv("samples", SAMPLE_COLUMNS, samples)
    job.csv("assumptions", ASSUMPTION_COLUMNS, assumptions)
    job.markdown(markdown(settings, pld, mc, samples, assumptions) + certified(job.output_dir))
    job.figure(lambda path: plot(path, settings, pld, mc))
    job.record(
        settings,
        facts={
            "delta": settings.delta,
            "rate": settings.rate,
            "gpu_sample_steps_per_s_assumed": GPU_SAMPLE_STEPS_PER_SECOND,
        },
        timing={
            "pld_wall_s": pld_seconds,
            "monte_carlo": throughput,
            "cpu_projection": cpu_projection(samples, throughput),
        },
    )


#: Root seed of the Monte Carlo streams (the committed outputs were made with it).
DEFAULT_SEED = 74
SCRIPT = Script("production", __doc__, DEFAULT_SEED, settings_from_args, _run)
run_experiment = SCRIPT.run_experiment

if __name__ == "__main__":
    raise SystemExit(SCRIPT.main())
