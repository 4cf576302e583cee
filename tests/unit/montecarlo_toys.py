"""Toy privacy-loss models with closed-form privacy curves, for the Monte Carlo engine tests.

* :class:`GaussianToy`: the Gaussian mechanism ``N(s, sigma^2)`` vs ``N(0, sigma^2)``; with
  ``mu = s / sigma``, ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` in both
  directions.
* :class:`SubsampledGaussianToy`: one Poisson-subsampled Gaussian step, ``P = (1-q) N(0,
  sigma^2) + q N(s, sigma^2)``, ``Q = N(0, sigma^2)``; the two directions differ. Closed forms
  below (the likelihood ratio is monotone in y).

Kept in a module (not a test file) so process pools can import them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import numpy as np
from scipy import optimize, special, stats

from minsep.framework import validation as v
from minsep.framework.errors import NotAccountableError
from minsep.framework.interfaces import Direction, PrivacyLossModel, SamplingScheme, Strategy


@attrs.frozen
class NormalTranscript:
    """Standard normals ``z`` (and uniforms ``u`` for participation)."""

    z: Any
    u: Any
    direction: Direction

    @property
    def n_samples(self) -> int:
        return int(self.z.shape[0])


@attrs.frozen
class GaussianToy(PrivacyLossModel):
    """Gaussian mechanism with sensitivity ``s``: ``L ~ N(mu^2/2, mu^2)`` both directions."""

    sensitivity: float = 1.0

    @property
    def n_steps(self) -> int:
        return 1

    def draw(self, n_samples: int, direction: Direction, rng: Any, backend: Any) -> Any:
        return NormalTranscript(rng.standard_normal((n_samples,)), None, direction)

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        s = self.sensitivity
        if transcript.direction is Direction.REMOVE:
            y = s + sigma * transcript.z
        else:
            y = sigma * transcript.z
        return (s * y - 0.5 * s * s) / (sigma * sigma)

    def exact_delta(self, epsilon: float, sigma: float) -> float:
        mu = self.sensitivity / sigma
        return float(
            special.ndtr(mu / 2 - epsilon / mu)
            - math.exp(epsilon) * special.ndtr(-mu / 2 - epsilon / mu)
        )

    def exact_epsilon(self, delta: float, sigma: float) -> float:
        if self.exact_delta(0.0, sigma) <= delta:
            return 0.0
        return float(optimize.brentq(lambda e: self.exact_delta(e, sigma) - delta, 0.0, 500.0))


@attrs.frozen
class ConjecturedGaussianToy(GaussianToy):
    """Same, flagged as resting on a conjecture."""

    conjectured: ClassVar[bool] = True


@attrs.frozen
class SubsampledGaussianToy(PrivacyLossModel):
    """One Poisson(q)-subsampled Gaussian step (asymmetric directions)."""

    rate: float = 0.1
    sensitivity: float = 1.0

    @property
    def n_steps(self) -> int:
        return 1

    def draw(self, n_samples: int, direction: Direction, rng: Any, backend: Any) -> Any:
        return NormalTranscript(
            rng.standard_normal((n_samples,)), rng.random((n_samples,)), direction
        )

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        s, q = self.sensitivity, self.rate
        y = sigma * transcript.z
        if transcript.direction is Direction.REMOVE:
            y = y + s * (transcript.u < q)
        exponent = (s * y - 0.5 * s * s) / (sigma * sigma)
        return np.logaddexp(math.log1p(-q), math.log(q) + exponent)

    def exact_delta_direction(self, epsilon: float, sigma: float, direction: Direction) -> float:
        s, q = self.sensitivity, self.rate
        if direction is Direction.REMOVE:
            ratio = (math.expm1(epsilon) + q) / q
            y = sigma * sigma / s * math.log(ratio) + s / 2
            tail = stats.norm.sf
            p_mass = (1 - q) * tail(y / sigma) + q * tail((y - s) / sigma)
            return float(max(p_mass - math.exp(epsilon) * tail(y / sigma), 0.0))
        ratio = (math.expm1(-epsilon) + q) / q
        if ratio <= 0:
            return 0.0
        y = sigma * sigma / s * math.log(ratio) + s / 2
        cdf = stats.norm.cdf
        p_mass = (1 - q) * cdf(y / sigma) + q * cdf((y - s) / sigma)
        return float(max(cdf(y / sigma) - math.exp(epsilon) * p_mass, 0.0))

    def exact_delta(self, epsilon: float, sigma: float) -> float:
        return max(self.exact_delta_direction(epsilon, sigma, d) for d in Direction)

    def exact_epsilon(self, delta: float, sigma: float) -> float:
        if self.exact_delta(0.0, sigma) <= delta:
            return 0.0
        return float(optimize.brentq(lambda e: self.exact_delta(e, sigma) - delta, 0.0, 200.0))


@attrs.frozen
class NaNToy(GaussianToy):
    """Returns NaN losses (a broken model)."""

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        out = super().log_ratio(transcript, sigma)
        out[0] = np.nan
        return out


@attrs.frozen
class ToyScheme(SamplingScheme):
    """One Poisson-subsampled Gaussian step per run (a test scheme for the accountant/CLI)."""

    n_steps: int = attrs.field(default=1, validator=v.positive_int())
    rate: float = attrs.field(default=0.1, validator=v.probability())
    conjecture: bool = False
    accountable: bool = True

    @classmethod
    def example(cls) -> ToyScheme:
        return cls()

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(self.n_steps):
            yield np.flatnonzero(rng.random(int(population)) < self.rate).astype(np.int64)

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        if not self.accountable:
            raise NotAccountableError("toy scheme marked not accountable")
        if self.conjecture:
            return ConjecturedGaussianToy()
        return SubsampledGaussianToy(rate=self.rate)


@attrs.frozen
class ToyStrategy(Strategy):
    """C = I; only what the accountant and CLI tests touch."""

    @property
    def coefficients(self) -> np.ndarray:
        return np.ones(1)

    def matrix(self, n_steps: int) -> np.ndarray:
        return np.eye(n_steps)

    def prefix_mse(self, n_steps: int) -> float:
        return (n_steps + 1) / 2

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        return math.sqrt(min(max_participations, -(-n_steps // min_sep)))

    def noise(self, shape: Any, n_steps: int, rng: Any, backend: Any) -> Iterator[Any]:
        for _ in range(n_steps):
            yield rng.standard_normal(tuple(shape))


#: The registry name the command-line tests give :class:`ToyScheme` (the ``toy`` fixture of
#: tests/unit/framework/conftest.py registers it).
TOY_NAME = "mc_toy_hardening_cli_test"


def toy_epsilon_args(*extra: str) -> list[str]:
    """``minsep epsilon`` on the registered toy: 8000 samples in chunks of 1000, one worker."""
    return ["epsilon", "--scheme", TOY_NAME, "--steps", "1", "--rate", "3/10", "--samples",
            "8000", "--pilot-samples", "2000", "--chunk-size", "1000", "--delta", "1e-2",
            "--sigma", "1", "--seed", "4", "--workers", "1", *extra]  # fmt: skip


def one_error_line(err: str) -> str:
    """The one error line of ``err`` (the first-answer and planned-work lines a run prints
    first aside); fails on a traceback or on more than one line."""
    before = ("minsep: plan:", "minsep: first answer")
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(before)]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]
