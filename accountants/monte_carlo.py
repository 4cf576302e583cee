"""Monte Carlo accounting by estimate-verify-release (docs/math.md §7, paper App. A).

Works with any scheme whose ``loss_model(strategy)`` returns a
:class:`~minsep.framework.interfaces.PrivacyLossModel`. Every answer carries the point
estimate, the certified bound, the verification samples ``m``, the failure probability already
folded into delta, the seed that reproduces it and the time it took. The guarantees are those
of :mod:`minsep.framework.montecarlo.evr` (epsilon, delta) and
:mod:`minsep.framework.montecarlo.calibration` (Algorithm 5).
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import BACKEND_NAMES, get_backend
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import (
    Accountant,
    PrivacyLossModel,
    SamplingScheme,
    Strategy,
)
from minsep.framework.montecarlo import (
    EXECUTOR_KINDS,
    CertifiedCurve,
    Checkpoint,
    EngineConfig,
    Executor,
    base_delta,
    calibrate_sweep,
    certified_curve,
    certify_delta,
    certify_epsilon,
    geometric_sweep,
    get_executor,
    locate_sigma,
)
from minsep.framework.montecarlo.bounds import check_feasible_delta
from minsep.framework.registries import accountants
from minsep.framework.results import CalibrationResult, DeltaResult, EpsilonResult

__all__ = ["MonteCarloAccountant"]

#: Target size of one transcript array per chunk (float64 values): chunk = this / n_steps.
_VALUES_PER_CHUNK = 1 << 23


def _finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


@accountants.register("monte_carlo")
@attrs.frozen
class MonteCarloAccountant(Accountant):
    """Monte Carlo EVR accountant for any scheme exposing a privacy-loss model.

    Attributes:
        samples: verification samples ``m`` per direction (the ``m`` of Fact 4.2).
        pilot_samples: estimation samples per direction (default ``max(samples // 4, 1000)``);
            they choose the claims but never certify them.
        seed: root seed of every stream; None draws fresh entropy, reported in the result.
        backend: ``"numpy"``, ``"cupy"`` or ``"auto"``.
        chunk_size: samples per chunk; None picks ``clip(2**23 / n_steps, 1024, 65536)`` so a
            transcript array stays near 64 MiB. Part of the reproducibility key with ``seed``.
        workers: worker processes (1 = in-process); with ``executor="dask"`` and no
            ``scheduler``, the processes of an in-process Dask LocalCluster.
        executor: ``"local"``, ``"processes"`` or ``"dask"``; None picks ``"dask"`` when
            ``scheduler`` is set, else ``"local"`` for 1 worker and ``"processes"`` otherwise.
        scheduler: address of a running Dask scheduler (``"tcp://host:8786"``) or its
            scheduler file (``*.json``); implies ``executor="dask"``.
        checkpoint: a file where every sampling stage of a question saves its merged tally
            (stages ``pilot``/``verify``, ``pilot coarse``/``pilot fine``/``calibrate``,
            ``curve``); rerunning the same question resumes from it without redoing or
            double-counting a chunk. Another question (other parameters) with the same file is
            refused (CheckpointError). With ``seed`` None the checkpoint's seed is reused.
        checkpoint_interval: seconds between checkpoint saves (0: after every chunk).
        progress: progress bar (None: only on a terminal).
        sweep_ratio, sweep_size: Algorithm 5's geometric sweep (resolution and length).
        sigma_low, sigma_high: the range the calibration pilot searches.
    """

    samples: int = attrs.field(default=1_000_000, validator=v.integer(low=100))
    pilot_samples: int | None = attrs.field(default=None, validator=v.optional(v.integer(low=100)))
    seed: int | None = attrs.field(default=None, validator=v.optional(v.integer(low=0)))
    backend: str = attrs.field(default="numpy", validator=v.one_of(*BACKEND_NAMES))
    chunk_size: int | None = attrs.field(
        default=None, validator=v.optional(v.integer(low=1, high=1 << 24))
    )
    workers: int = attrs.field(default=1, validator=v.integer(low=1, high=1024))
    executor: str | None = attrs.field(
        default=None, validator=v.optional(v.one_of(*EXECUTOR_KINDS))
    )
    scheduler: str | None = None
    checkpoint: str | None = None
    checkpoint_interval: float = attrs.field(default=60.0, validator=v.number(low=0.0))
    progress: bool | None = None
    sweep_ratio: float = attrs.field(
        default=1.01, validator=v.number(low=1.0, high=2.0, low_open=True)
    )
    sweep_size: int = attrs.field(default=24, validator=v.integer(low=2, high=10_000))
    sigma_low: float = attrs.field(default=2.0**-4, validator=v.positive())
    sigma_high: float = attrs.field(default=2.0**8, validator=v.positive())

    def __attrs_post_init__(self) -> None:
        if self.sigma_high <= self.sigma_low:
            raise v.fail(self, "sigma_high", self.sigma_high, f"> sigma_low = {self.sigma_low}")
        if self.scheduler is not None and self.executor not in (None, "dask"):
            raise v.fail(self, "scheduler", self.scheduler, f"None with executor {self.executor!r}")
        if self.executor == "local" and self.workers != 1:
            raise v.fail(self, "workers", self.workers, "1 with executor 'local'")
        if self.checkpoint is not None and not (
            self.checkpoint and Path(self.checkpoint).parent.is_dir()
        ):
            raise v.fail(self, "checkpoint", self.checkpoint, "a file path in an existing folder")
        self._executor()  # validates the scheduler address; needs dask for "dask"

    @classmethod
    def example(cls) -> MonteCarloAccountant:
        """A cheap instance (20k verification samples, fixed seed) for the contract tests."""
        return cls(samples=20_000, pilot_samples=5_000, seed=20260214, chunk_size=4096)

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        return [
            ({"samples": 0}, "samples"),
            ({"samples": 2.5}, "samples"),
            ({"pilot_samples": 10}, "pilot_samples"),
            ({"seed": -1}, "seed"),
            ({"backend": "tpu"}, "backend"),
            ({"chunk_size": 0}, "chunk_size"),
            ({"workers": 0}, "workers"),
            ({"executor": "mpi"}, "executor"),
            ({"executor": "local", "workers": 2}, "workers"),
            ({"executor": "processes", "scheduler": "tcp://127.0.0.1:8786"}, "scheduler"),
            ({"scheduler": "not an address"}, "scheduler"),
            ({"checkpoint": "/nonexistent-folder/run.ckpt"}, "checkpoint"),
            ({"checkpoint_interval": -1.0}, "checkpoint_interval"),
            ({"sweep_ratio": 1.0}, "sweep_ratio"),
            ({"sweep_size": 1}, "sweep_size"),
            ({"sigma_low": 0.0}, "sigma_low"),
            ({"sigma_low": 2.0, "sigma_high": 1.0}, "sigma_high"),
        ]

    # -- plumbing -------------------------------------------------------------------------

    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None when ``scheme.loss_model(strategy)`` exists, else the text of the
        NotAccountableError (or ConfigurationError, e.g. bands > min-sep) it raises."""
        try:
            scheme.loss_model(strategy)
        except (NotAccountableError, ConfigurationError) as exc:
            return str(exc)
        return None

    def _model(self, scheme: SamplingScheme, strategy: Strategy) -> PrivacyLossModel:
        try:
            model = scheme.loss_model(strategy)
        except (NotAccountableError, ConfigurationError):
            self.require(scheme, strategy)  # raises, naming the accountants that can
            raise
        if model.conjectured:
            warnings.warn(
                f"scheme {scheme.name!r}: its Monte Carlo accounting rests on an unproven "
                "conjecture (docs/math.md §5, Algorithm 4); the certified bounds assume it holds",
                UserWarning,
                stacklevel=3,
            )
        return model

    def _seed(self) -> int:
        if self.seed is not None:
            return self.seed
        checkpoint = self._checkpoint()
        if checkpoint is not None:  # resume a fresh-entropy run with its own seed
            stored = checkpoint.stored_seed()
            if stored is not None:
                return stored
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]

    def _executor(self) -> Executor:
        return get_executor(self.workers, self.executor, self.scheduler)

    def _checkpoint(self) -> Checkpoint | None:
        if self.checkpoint is None:
            return None
        return Checkpoint(self.checkpoint, every_seconds=self.checkpoint_interval)

    def _pilot(self) -> int:
        return self.pilot_samples or max(self.samples // 4, 1000)

    def _config(self, model: PrivacyLossModel) -> EngineConfig:
        chunk = self.chunk_size or int(
            min(max(_VALUES_PER_CHUNK // max(model.n_steps, 1), 1024), 65536)
        )
        return EngineConfig(
            chunk_size=chunk,
            backend=get_backend(self.backend).name,
            executor=self._executor(),
            progress=self.progress,
            checkpoint=self._checkpoint(),
        )

    def _provenance(self, scheme: SamplingScheme, strategy: Strategy) -> dict[str, Any]:
        return {
            **self.provenance(scheme, strategy, "monte_carlo"),
            "backend": get_backend(self.backend).name,
        }

    # -- questions ------------------------------------------------------------------------

    def epsilon(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, delta: float
    ) -> EpsilonResult:
        """Certified epsilon at ``delta`` by EVR; ``epsilon`` is the point estimate.

        ``certified_epsilon``: the run is ``(certified_epsilon, delta)``-DP, the verification
        failure ``failure_probability`` folded into ``delta`` (``inf`` when nothing verified).
        """
        v.check_range("MonteCarloAccountant.epsilon", "sigma", sigma, low=0.0, low_open=True)
        check_feasible_delta("MonteCarloAccountant.epsilon", delta)
        model = self._model(scheme, strategy)
        seed = self._seed()
        cert = certify_epsilon(
            model,
            float(sigma),
            float(delta),
            samples=self.samples,
            pilot_samples=self._pilot(),
            seed=seed,
            config=self._config(model),
        )
        return EpsilonResult(
            **self._provenance(scheme, strategy),
            seconds=cert.seconds,
            notes=cert.notes(),
            epsilon=cert.estimate,
            certified_epsilon=cert.certified,
            delta=float(delta),
            sigma=float(sigma),
            samples=self.samples,
            seed=seed,
            failure_probability=cert.failure_probability,
            std_error=_finite_or_none(cert.std_error),
            base_delta=cert.base_delta,
            pilot_samples=cert.pilot_samples,
        )

    def delta(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, epsilon: float
    ) -> DeltaResult:
        """Certified delta at ``epsilon`` by EVR; ``delta`` is the empirical estimate."""
        v.check_range("MonteCarloAccountant.delta", "sigma", sigma, low=0.0, low_open=True)
        model = self._model(scheme, strategy)
        seed = self._seed()
        cert = certify_delta(
            model,
            float(sigma),
            float(epsilon),
            samples=self.samples,
            pilot_samples=self._pilot(),
            seed=seed,
            config=self._config(model),
        )
        return DeltaResult(
            **self._provenance(scheme, strategy),
            seconds=cert.seconds,
            notes=cert.notes(),
            delta=cert.estimate,
            certified_delta=cert.certified,
            epsilon=float(epsilon),
            sigma=float(sigma),
            samples=self.samples,
            seed=seed,
            failure_probability=cert.failure_probability,
            std_error=_finite_or_none(cert.std_error),
            base_delta=_finite_or_none(cert.base_delta),
            pilot_samples=cert.pilot_samples,
        )

    def calibrate(
        self, scheme: SamplingScheme, strategy: Strategy, epsilon: float, delta: float
    ) -> CalibrationResult:
        """Smallest certified sigma by Algorithm 5 over a geometric sweep.

        The pilot (stream 0) locates where ``delta_hat(epsilon)`` crosses the base delta; the
        sweep ``centre * ratio**(size // 3 - j)``, ``j = 0..size-1``, is then verified on
        fresh draws (stream 1) shared by all sigmas. Raises CalibrationError when the most
        private entry fails (fall back to an exact accountant).
        """
        start = time.perf_counter()
        v.check_range("MonteCarloAccountant.calibrate", "epsilon", epsilon, low=0.0)
        check_feasible_delta("MonteCarloAccountant.calibrate", delta)
        model = self._model(scheme, strategy)
        seed = self._seed()
        config = self._config(model)
        delta_b = base_delta(self.samples, float(delta))
        centre = locate_sigma(
            model,
            float(epsilon),
            delta_b,
            samples=self._pilot(),
            seed=seed,
            config=config,
            low=self.sigma_low,
            high=self.sigma_high,
        )
        above = max(self.sweep_size // 3, 1)
        sweep = geometric_sweep(centre * self.sweep_ratio**above, self.sweep_ratio, self.sweep_size)
        result = calibrate_sweep(
            model,
            sweep,
            float(epsilon),
            float(delta),
            samples=self.samples,
            seed=seed,
            config=config,
        )
        notes = [
            f"certified ({result.epsilon:.6g}, {result.delta:.6g})-DP at sigma "
            f"{result.sigma:.6g} by Algorithm 5: every sweep entry down to it had delta_hat <= "
            f"base delta {result.base_delta:.6g} in both directions on {result.samples} shared "
            f"fresh samples; the failure probability {result.failure_probability:.3g} (one Fact "
            "4.2 event, privacy being monotone in sigma) is folded into delta."
        ]
        if result.at_bottom:
            notes.append(
                "every sweep entry passed: a smaller sigma may also be certifiable (lower "
                "sigma_low or widen the sweep)."
            )
        return CalibrationResult(
            **self._provenance(scheme, strategy),
            seconds=time.perf_counter() - start,
            notes=tuple(notes),
            sigma=result.sigma,
            epsilon=float(epsilon),
            delta=float(delta),
            certified=True,
            candidates=result.sweep,
            samples=self.samples,
            seed=seed,
            failure_probability=result.failure_probability,
            base_delta=result.base_delta,
            pilot_samples=self._pilot(),
        )

    def curve(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        sigma: float,
        epsilons: list[float] | tuple[float, ...],
        failure_probability: float = 1e-6,
    ) -> CertifiedCurve:
        """Upper bounds on delta(eps) holding simultaneously on the grid ``epsilons``."""
        model = self._model(scheme, strategy)
        return certified_curve(
            model,
            float(sigma),
            epsilons,
            samples=self.samples,
            seed=self._seed(),
            failure_probability=failure_probability,
            config=self._config(model),
        )
