"""A small, correct b-min-sep loss model written the way a plugin author would (C = I), and three
planted faults of the kinds the loss-model contract must catch.

The model: one unit follows the availability chain of docs/math.md §3 (cold start; after a
participation it is blocked for ``min_sep - 1`` steps), ``y = x + sigma z``, and ``ln P/Q`` is a
forward recursion over the chain's states with the per-step ratio ``exp((y_t - 1/2)/sigma^2)``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.testing import ZeroOutOracle, min_sep_law


@attrs.frozen
class PatternTranscript:
    """The participation patterns ``x`` and standard normals ``z`` of each sample."""

    x: np.ndarray
    z: np.ndarray
    direction: Direction

    @property
    def n_samples(self) -> int:
        return int(self.z.shape[0])


@attrs.frozen
class MinSepToy(PrivacyLossModel):
    """b-min-sep with C = I, cold start."""

    steps: int = 6
    probability: float = 0.3
    min_sep: int = 3

    @property
    def n_steps(self) -> int:
        return self.steps

    def oracle(self) -> ZeroOutOracle:
        law = min_sep_law(self.steps, self.probability, self.min_sep, warm=False)
        return ZeroOutOracle(matrix=np.eye(self.steps), law=law)

    def participations(self, uniforms: np.ndarray) -> np.ndarray:
        """The chain's pattern from one uniform per step: participate when available and
        ``u < p``, then stay blocked for ``min_sep - 1`` steps."""
        x = np.zeros_like(uniforms)
        blocked = np.zeros(uniforms.shape[0], dtype=int)
        for t in range(self.steps):
            x[:, t] = (blocked == 0) & (uniforms[:, t] < self.probability)
            blocked = np.where(x[:, t] > 0, self.min_sep - 1, np.maximum(blocked - 1, 0))
        return x

    def draw(self, n_samples: int, direction: Direction, rng: Any, backend: Any) -> Any:
        uniforms = rng.random((n_samples, self.steps))
        z = rng.standard_normal((n_samples, self.steps))
        x = self.participations(uniforms)
        return PatternTranscript(x if direction is Direction.REMOVE else 0 * x, z, direction)

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        return self.log_ratio_at(transcript.x + sigma * transcript.z, sigma, np)

    def blocked_after_participation(self) -> int:
        """The chain state entered on a participation (steps still blocked)."""
        return self.min_sep - 1

    def log_ratio_at(self, outputs: Any, sigma: float, xp: Any) -> Any:
        """Forward recursion: ``alpha[s]`` is the ratio mass of paths in state s so far."""
        p, top = self.probability, self.blocked_after_participation()
        alpha = np.zeros((outputs.shape[0], max(self.min_sep, top + 1)))
        alpha[:, 0] = 1.0
        for t in range(self.steps):
            ratio = np.exp((outputs[:, t] - 0.5) / sigma**2)
            new = np.zeros_like(alpha)
            new[:, 0] = (1 - p) * alpha[:, 0]
            new[:, :-1] += alpha[:, 1:]
            new[:, top] += p * ratio * alpha[:, 0]
            alpha = new
        return np.log(alpha.sum(axis=1))


@attrs.frozen
class FlippedSign(MinSepToy):
    """Fault 1: returns ``ln Q/P``."""

    def log_ratio_at(self, outputs: Any, sigma: float, xp: Any) -> Any:
        return -super().log_ratio_at(outputs, sigma, xp)


@attrs.frozen
class IgnoresMinSep(MinSepToy):
    """Fault 2: the sampler ignores the min-sep constraint (independent coins every step)."""

    def participations(self, uniforms: np.ndarray) -> np.ndarray:
        return (uniforms < self.probability).astype(float)


@attrs.frozen
class OffByOne(MinSepToy):
    """Fault 3: the recursion blocks ``min_sep - 2`` steps after a participation, not
    ``min_sep - 1`` (the sampler is right)."""

    def blocked_after_participation(self) -> int:
        return self.min_sep - 2
