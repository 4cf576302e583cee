"""The Monte Carlo estimate-verify-release (EVR) engine (docs/math.md §7, paper App. A).

Modules, each with one job:

* :mod:`.bounds` — Fact 4.2, ``overall_delta``, ``base_delta``, ``min_samples`` and the KL
  upper confidence bound.
* :mod:`.accumulators` — mergeable, serialisable tallies: a conservative histogram of L plus
  exact sums of X and X^2 at the epsilons under verification.
* :mod:`.executors` — the :class:`Executor` protocol, ``LocalExecutor``, ``ProcessExecutor``.
* :mod:`.dask_executor` — ``DaskExecutor`` (a Dask cluster; imports dask lazily).
* :mod:`.warmup` — start a process pool's workers early and warm (``start_workers``).
* :mod:`.checkpoint` — ``Checkpoint``: save the merged tally, resume after a crash.
* :mod:`.sampling` — chunked sampling with per-chunk seeds (``SeedSequence(seed,
  spawn_key=(stream, chunk, direction))``), common random numbers across sigma.
* :mod:`.estimates` — point estimates ``delta_hat(eps)``, ``eps_hat(delta)`` with standard
  errors.
* :mod:`.proposals` — a proposal as data: per direction route, a sampler of the verified
  variable ``X = w (1 - e^{eps - L})_+ / s`` in [0, 1] with its support bound ``s``, and the
  plans (candidates, thresholds, sweeps) a proposal's pilot fixes before verification.
* :mod:`.plain` — the plain proposal (the dominating pair: ``w = 1``, ``s = 1``).
* :mod:`.certificates` — the records the questions return.
* :mod:`.evr` — the one verifier: certified epsilon, certified delta (any proposal), the
  certified epsilon(delta) curve.
* :mod:`.calibration` — Algorithm 5's one walk over a sigma sweep (any proposal);
  :mod:`.sweeps` — geometric sweeps.
* :mod:`.planning` — memory per chunk, chunk sizes from a memory budget, time estimates.
* :mod:`.cache` — seeded answers reused; :mod:`.trust` — what is read back checked first.
"""

from minsep.framework.montecarlo.accumulators import (
    BinSpec,
    LossHistogram,
    LossTally,
    SweepTally,
    hockey_stick,
)
from minsep.framework.montecarlo.bounds import (
    base_delta,
    fact42_bound,
    kl_bernoulli,
    kl_upper_confidence,
    min_samples,
    overall_delta,
    verification_failure,
)
from minsep.framework.montecarlo.calibration import (
    SweepCalibration,
    calibrate_sweep,
    geometric_sweep,
    locate_sigma,
)
from minsep.framework.montecarlo.checkpoint import Checkpoint
from minsep.framework.montecarlo.dask_executor import (
    DaskExecutor,
    DaskUnavailableError,
    shutdown_clusters,
)
from minsep.framework.montecarlo.estimates import Estimate, estimate_delta, estimate_epsilon
from minsep.framework.montecarlo.evr import (
    CertifiedCurve,
    DeltaCertificate,
    EpsilonCertificate,
    certified_curve,
    certify_delta,
    certify_epsilon,
)
from minsep.framework.montecarlo.executors import (
    EXECUTOR_KINDS,
    Executor,
    LocalExecutor,
    ProcessExecutor,
    get_executor,
    shutdown_pools,
)
from minsep.framework.montecarlo.planning import (
    DEFAULT_MEMORY_BUDGET,
    RunPlan,
    Stage,
    chunk_size_for,
    measure_rates,
)
from minsep.framework.montecarlo.sampling import (
    BOTH,
    PILOT_STREAM,
    VERIFY_STREAM,
    ChunkTask,
    EngineConfig,
    chunk_seed,
    sample,
    sample_chunks,
)

__all__ = [
    "BOTH",
    "DEFAULT_MEMORY_BUDGET",
    "EXECUTOR_KINDS",
    "PILOT_STREAM",
    "VERIFY_STREAM",
    "BinSpec",
    "CertifiedCurve",
    "Checkpoint",
    "ChunkTask",
    "DaskExecutor",
    "DaskUnavailableError",
    "DeltaCertificate",
    "EngineConfig",
    "EpsilonCertificate",
    "Estimate",
    "Executor",
    "LocalExecutor",
    "LossHistogram",
    "LossTally",
    "ProcessExecutor",
    "RunPlan",
    "Stage",
    "SweepCalibration",
    "SweepTally",
    "base_delta",
    "calibrate_sweep",
    "certified_curve",
    "certify_delta",
    "certify_epsilon",
    "chunk_seed",
    "chunk_size_for",
    "estimate_delta",
    "estimate_epsilon",
    "fact42_bound",
    "geometric_sweep",
    "get_executor",
    "hockey_stick",
    "kl_bernoulli",
    "kl_upper_confidence",
    "locate_sigma",
    "measure_rates",
    "min_samples",
    "overall_delta",
    "sample",
    "sample_chunks",
    "shutdown_clusters",
    "shutdown_pools",
    "verification_failure",
]
