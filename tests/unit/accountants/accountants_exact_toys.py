"""Small schemes and strategies with hand-written accounting hooks, for the exact accountants.

They stand in for the real schemes so that the accountants are tested on their own: each toy
builds its dp_accounting event exactly as docs/math.md §4 / §6 describe.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import dp_accounting as dpa
import numpy as np

from minsep.framework import validation as v
from minsep.framework.errors import NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy


@attrs.frozen
class ToyBanded(Strategy):
    """Banded Toeplitz C from given (unit-norm) coefficients; brute-force helpers."""

    coeffs: tuple[float, ...] = (1.0,)

    @property
    def coefficients(self) -> np.ndarray:
        c = np.asarray(self.coeffs, dtype=float)
        return c / np.linalg.norm(c)

    def matrix(self, n_steps: int) -> np.ndarray:
        c = self.coefficients
        C = np.zeros((n_steps, n_steps))
        for j, cj in enumerate(c):
            C += cj * np.eye(n_steps, k=-j)
        return C

    def prefix_mse(self, n_steps: int) -> float:
        A = np.tril(np.ones((n_steps, n_steps)))
        return float(np.linalg.norm(A @ np.linalg.inv(self.matrix(n_steps)), "fro") ** 2 / n_steps)

    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        # Disjoint untruncated columns (min_sep >= bands, earliest columns): S = sqrt(K).
        assert min_sep >= self.bands
        return math.sqrt(min(max_participations, -(-n_steps // min_sep)))

    def noise(
        self, shape: Sequence[int], n_steps: int, rng: Any, backend: Any
    ) -> Iterator[Any]:  # pragma: no cover - not used by the accountants
        raise NotImplementedError


IDENTITY = ToyBanded((1.0,))
BANDED = ToyBanded((1.0, 0.5, 0.25))


def _poisson_batches(
    steps: int, p: float, population: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    for _ in range(steps):
        yield np.flatnonzero(rng.random(population) < p).astype(np.int64)


@attrs.frozen
class ToyPoisson(SamplingScheme):
    """Poisson DP-SGD: n-fold Poisson-subsampled Gaussian (identity strategy only)."""

    steps: int = attrs.field(validator=v.positive_int())
    p: float = attrs.field(validator=v.probability())

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return self.p

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        return _poisson_batches(self.steps, self.p, population, rng)

    def dp_event(self, strategy: Strategy, sigma: float) -> dpa.DpEvent:
        if strategy.bands != 1:
            raise NotAccountableError("toy Poisson needs the identity strategy")
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(self.p, dpa.GaussianDpEvent(sigma)), self.steps
        )


@attrs.frozen
class ToyCyclic(SamplingScheme):
    """Cyclic Poisson with ``groups`` groups: ceil(n/b)-fold at rate b p0 (bands <= b)."""

    steps: int = attrs.field(validator=v.positive_int())
    p: float = attrs.field(validator=v.probability())
    groups: int = attrs.field(validator=v.positive_int())

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return self.p

    @property
    def min_separation(self) -> int:
        return self.groups

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        return _poisson_batches(self.steps, self.p, population, rng)  # not the real sampler

    def dp_event(self, strategy: Strategy, sigma: float) -> dpa.DpEvent:
        if strategy.bands > self.groups:
            raise NotAccountableError(f"cyclic Poisson needs bands <= groups = {self.groups}")
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(self.groups * self.p, dpa.GaussianDpEvent(sigma)),
            -(-self.steps // self.groups),
        )


@attrs.frozen
class ToyTruncated(SamplingScheme):
    """Truncated (cyclic when groups > 1) Poisson: the group is the dataset of the event."""

    steps: int = attrs.field(validator=v.positive_int())
    p: float = attrs.field(validator=v.probability())
    dataset_size: int = attrs.field(validator=v.positive_int())
    max_batch_size: int = attrs.field(validator=v.positive_int())
    groups: int = attrs.field(default=1, validator=v.positive_int())

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return self.p

    @property
    def min_separation(self) -> int:
        return self.groups

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        return _poisson_batches(self.steps, self.p, population, rng)  # not the real sampler

    def dp_event(self, strategy: Strategy, sigma: float) -> dpa.DpEvent:
        if strategy.bands > self.groups:
            raise NotAccountableError(f"needs bands <= groups = {self.groups}")
        event = dpa.TruncatedSubsampledGaussianDpEvent(
            dataset_size=self.dataset_size // self.groups,
            sampling_probability=self.groups * self.p,
            truncated_batch_size=self.max_batch_size,
            noise_multiplier=sigma,
        )
        return dpa.SelfComposedDpEvent(event, -(-self.steps // self.groups))


@attrs.frozen
class ToyOpaque(SamplingScheme):
    """A scheme with no exact event and no loss model: only the Gaussian accountant applies."""

    steps: int = attrs.field(validator=v.positive_int())
    p: float = attrs.field(validator=v.probability())
    sep: int = attrs.field(default=1, validator=v.positive_int())

    @property
    def n_steps(self) -> int:
        return self.steps

    @property
    def rate(self) -> float:
        return self.p

    @property
    def min_separation(self) -> int:
        return self.sep

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        return _poisson_batches(self.steps, self.p, population, rng)
