"""The privacy-critical wiring of a training run, in one object.

A :class:`PrivateRun` holds the scheme, the strategy, the noise multiplier σ and the clip norm.
The trainer draws its batches from :meth:`PrivateRun.batches` and its noise from
:meth:`PrivateRun.noise`, and the accountant analysed exactly ``(run.scheme, run.strategy,
run.sigma)``; nothing else carries these parameters, so the sampler, the noise and the
accounting cannot diverge (checked again at construction against the calibration result).

Step i of the run releases (paper §2, docs/math.md §1)

    g_i = Σ_{j ∈ B_i} clip(∇ℓ(θ; d_j), C) + σ·C·(C⁻¹Z)[i],   Z with i.i.d. N(0, 1) rows,

which is the matrix mechanism ``C·x + σ·Z`` at clip norm 1 after scaling by 1/C.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import Backend, RandomSource
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.results import CalibrationResult
from minsep.framework.setup import strategy_bands
from minsep.framework.validation import check_range


def _plain(value: Any) -> Any:
    """JSON-normal form (tuples -> lists, numpy scalars -> Python) for comparisons."""

    def default(obj: Any) -> Any:
        if hasattr(obj, "tolist"):
            return obj.tolist()
        return repr(obj)

    return json.loads(json.dumps(value, default=default))


def strategy_description(strategy: Strategy) -> dict[str, Any]:
    """The strategy's public description: name, and bands and first-column coefficients when
    it is banded Toeplitz (``Strategy.public_parameters``)."""
    return strategy.public_parameters()


@attrs.frozen
class PrivateRun:
    """Scheme, strategy, σ and clip norm of one run: the single source of truth.

    Attributes:
        scheme: the batch sampler (and what the accountant analysed).
        strategy: the correlation matrix C (bands k; identity for DP-SGD).
        sigma: the noise multiplier (0: a non-private run, no noise).
        dataset_size: |D|, the number of training examples.
        clip_norm: the per-example clip norm C; ``None`` only for non-private runs.
        calibration: the accountant's result that produced ``sigma`` (if calibrated).
        population: what ``scheme.batches`` takes when it is not ``dataset_size`` (e.g. an
            attribution graph); ``None`` means ``dataset_size``.
    """

    scheme: SamplingScheme
    strategy: Strategy
    sigma: float
    dataset_size: int
    clip_norm: float | None = 1.0
    calibration: CalibrationResult | None = None
    population: Any = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        check_range("PrivateRun", "sigma", self.sigma, low=0.0)
        check_range("PrivateRun", "dataset_size", self.dataset_size, low=1, integer=True)
        if self.clip_norm is not None:
            check_range("PrivateRun", "clip_norm", self.clip_norm, low=0.0, low_open=True)
        elif self.sigma > 0:
            raise ConfigurationError(
                "PrivateRun.clip_norm = None is invalid: must be a number > 0 when sigma > 0 "
                "(noise is calibrated to the clip norm)"
            )
        declared = self.scheme.public_parameters().get("dataset_size")
        if declared is not None and declared != self.dataset_size:
            raise ConfigurationError(
                f"PrivateRun.dataset_size = {self.dataset_size!r} is invalid: must equal the "
                f"scheme's public dataset_size = {declared!r}"
            )
        if self.expected_batch_size <= 0:
            raise ConfigurationError(
                f"PrivateRun.dataset_size = {self.dataset_size!r} is invalid: the expected "
                "batch size rate * dataset_size must be > 0"
            )
        self._check_calibration()

    def _check_calibration(self) -> None:
        cal = self.calibration
        if cal is None:
            return
        if self.sigma == 0:
            raise ConfigurationError(
                "PrivateRun.calibration is invalid: a non-private run (sigma = 0) has none"
            )
        if not cal.certified:
            raise ConfigurationError(
                f"PrivateRun.calibration is invalid: sigma = {cal.sigma!r} was not certified "
                f"({cal.epsilon}, {cal.delta})-DP by {cal.accountant!r}"
            )
        if cal.sigma != self.sigma:
            raise ConfigurationError(
                f"PrivateRun.sigma = {self.sigma!r} is invalid: must equal the calibrated "
                f"sigma = {cal.sigma!r}"
            )
        if cal.scheme and _plain(cal.scheme) != _plain(self.scheme.public_parameters()):
            raise ConfigurationError(
                f"PrivateRun.scheme = {self.scheme!r} is invalid: the calibration analysed "
                f"{cal.scheme!r}"
            )
        if cal.strategy:
            mine = _plain(strategy_description(self.strategy))
            for key, value in _plain(cal.strategy).items():
                if key in mine and mine[key] != value:
                    raise ConfigurationError(
                        f"PrivateRun.strategy has {key} = {mine[key]!r}: the calibration "
                        f"analysed {key} = {value!r}"
                    )

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def calibrated(
        cls,
        scheme: SamplingScheme,
        strategy: Strategy,
        accountant: Accountant,
        *,
        epsilon: float,
        delta: float,
        dataset_size: int,
        clip_norm: float = 1.0,
        population: Any = None,
    ) -> PrivateRun:
        """Calibrate σ for (ε, δ) with ``accountant`` and wire it to the same scheme/strategy."""
        accountant.require(scheme, strategy)
        result = accountant.calibrate(scheme, strategy, epsilon, delta)
        return cls(
            scheme, strategy, float(result.sigma), dataset_size, clip_norm, result, population
        )

    @classmethod
    def non_private(
        cls,
        scheme: SamplingScheme,
        strategy: Strategy,
        *,
        dataset_size: int,
        population: Any = None,
    ) -> PrivateRun:
        """A baseline run: same batches, no clipping, no noise (σ = 0)."""
        return cls(scheme, strategy, 0.0, dataset_size, None, None, population)

    # -- what the trainer reads --------------------------------------------------------------

    @property
    def private(self) -> bool:
        """True when noise is added (σ > 0)."""
        return self.sigma > 0

    @property
    def n_steps(self) -> int:
        """The number of steps n (the scheme's, which the accountant analysed)."""
        return int(self.scheme.n_steps)

    @property
    def expected_batch_size(self) -> float:
        """p₀·|D|: the public divisor of the noisy gradient sum (never the realised size)."""
        return float(self.scheme.expected_batch_size(self.dataset_size))

    @property
    def noise_std(self) -> float:
        """σ·C, the scale of the correlated noise added to each clipped gradient sum."""
        return self.sigma * (self.clip_norm or 0.0)

    def batches(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """The scheme's batches for this dataset (int64 indices; negative = padding)."""
        population = self.dataset_size if self.population is None else self.population
        batches: Iterator[np.ndarray] = self.scheme.batches(population, rng)
        return batches

    def noise(self, shape: Sequence[int], rng: RandomSource, backend: Backend) -> Iterator[Any]:
        """σ·C·(C⁻¹Z)[i] for i = 1..n, streamed by the strategy (O(bands·d) memory).

        Raises ConfigurationError for a non-private run (there is no noise to draw).
        """
        if not self.private:
            raise ConfigurationError(
                "PrivateRun.sigma = 0.0 is invalid for noise(): a non-private run adds none"
            )
        scale = self.noise_std
        for row in self.strategy.noise(shape, self.n_steps, rng, backend):
            yield scale * row

    def accounted_parameters(self) -> dict[str, Any]:
        """(p₀, b, bands, n, σ) and friends: what the accountant analysed, as plain data (bands
        0: a strategy that is not banded)."""
        return {
            "n_steps": self.n_steps,
            "rate": float(self.scheme.rate),
            "min_separation": self.scheme.min_separation,
            "bands": strategy_bands(self.strategy),
            "sigma": self.sigma,
        }

    def describe(self) -> dict[str, Any]:
        """Plain-data record of the run's privacy parameters (for JSON records)."""
        described: dict[str, Any] = _plain(
            {
                "private": self.private,
                "sigma": self.sigma,
                "clip_norm": self.clip_norm,
                "dataset_size": self.dataset_size,
                "expected_batch_size": self.expected_batch_size,
                "scheme": self.scheme.public_parameters(),
                "strategy": strategy_description(self.strategy),
                "accounted": self.accounted_parameters(),
                "calibration": None if self.calibration is None else self.calibration.to_dict(),
            }
        )
        return described
