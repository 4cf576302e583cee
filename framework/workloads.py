"""Workloads: the lower-triangular matrix A whose rows a training run releases (docs/math.md §8).

A strategy C releases ``A x`` as ``A C^-1 (C x + z)``; its error at noise multiplier sigma is
``sigma^2 (1/n) ||A C^-1||_F^2``. Every workload here is the SGD model update of a run with
per-step learning rates ``eta`` and heavy-ball momentum ``beta``: the parameter change after step
t is ``sum_{s<=t} A[t, s] g_s`` with

    A[t, s] = sum_{u=s}^{t} eta_u beta^(u-s),    i.e.   A = P diag(eta) M,

``P`` the all-ones lower triangle (prefix sums) and ``M`` the lower-triangular Toeplitz matrix
with first column ``m_k = beta^k``. Prefix sums are ``eta = 1, beta = 0``; momentum keeps
``eta = 1``; learning-rate decay lets ``eta`` fall from 1 to ``final`` (linear, cosine or
exponential). A is Toeplitz exactly when ``eta`` is constant.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import MAX_STEPS, check_range, number, one_of


def _check_steps(owner: str, n_steps: int) -> int:
    check_range(owner, "n_steps", n_steps, low=1, high=MAX_STEPS, integer=True)
    return int(n_steps)


class Workload(ABC):
    """A lower-triangular workload ``A = P diag(eta) M`` (module docstring)."""

    #: The workload's name in specs (``"prefix"``, ``"momentum"``, ...).
    kind: ClassVar[str]

    @abstractmethod
    def learning_rates(self, n_steps: int) -> np.ndarray:
        """``eta_0..eta_{n-1}`` (positive)."""

    @property
    def momentum(self) -> float:
        """The heavy-ball coefficient ``beta`` in [0, 1) (0: none)."""
        return 0.0

    @property
    def is_toeplitz(self) -> bool:
        """True when ``A`` is Toeplitz (constant learning rate)."""
        return False

    @property
    @abstractmethod
    def spec(self) -> str:
        """The workload as a string :func:`workload_from_spec` reads back (cache keys, records)."""

    def momentum_column(self, n_steps: int) -> np.ndarray:
        """First column of ``M``: ``beta^k`` for k = 0..n-1."""
        n = _check_steps(f"{type(self).__name__}.momentum_column", n_steps)
        return np.asarray(self.momentum ** np.arange(n), dtype=np.float64)

    def matrix(self, n_steps: int) -> np.ndarray:
        """The dense n x n ``A`` (small n: tests and the dense fallback)."""
        n = _check_steps(f"{type(self).__name__}.matrix", n_steps)
        eta = self.learning_rates(n)
        m = self.momentum_column(n)
        lag = np.subtract.outer(np.arange(n), np.arange(n))
        M = np.where(lag >= 0, m[np.clip(lag, 0, None)], 0.0)
        return np.asarray(np.tril(np.ones((n, n))) @ (eta[:, None] * M), dtype=np.float64)

    def toeplitz_column(self, n_steps: int) -> np.ndarray | None:
        """First column of ``A`` when it is Toeplitz (``cumsum(eta_0 m)``), else None."""
        if not self.is_toeplitz:
            return None
        n = _check_steps(f"{type(self).__name__}.toeplitz_column", n_steps)
        return np.asarray(np.cumsum(self.learning_rates(n)[0] * self.momentum_column(n)))


@attrs.frozen
class PrefixSums(Workload):
    """``A = P``: the n prefix sums (the objective of BandMF, docs/math.md §8)."""

    kind: ClassVar[str] = "prefix"

    def learning_rates(self, n_steps: int) -> np.ndarray:
        return np.ones(_check_steps("PrefixSums.learning_rates", n_steps))

    @property
    def is_toeplitz(self) -> bool:
        return True

    @property
    def spec(self) -> str:
        return "prefix"


@attrs.frozen
class Momentum(Workload):
    """Heavy-ball momentum ``beta`` at a constant learning rate: ``A[t, s] = sum_{u<=t-s}
    beta^u = (1 - beta^(t-s+1)) / (1 - beta)``.

    Attributes:
        beta: momentum coefficient in [0, 1).
    """

    kind: ClassVar[str] = "momentum"
    beta: float = attrs.field(default=0.9, validator=number(low=0.0, high=1.0, high_open=True))

    @property
    def momentum(self) -> float:
        return float(self.beta)

    def learning_rates(self, n_steps: int) -> np.ndarray:
        return np.ones(_check_steps("Momentum.learning_rates", n_steps))

    @property
    def is_toeplitz(self) -> bool:
        return True

    @property
    def spec(self) -> str:
        return f"momentum:{self.beta!r}"


SCHEDULES: tuple[str, ...] = ("linear", "cosine", "exponential")


@attrs.frozen
class LearningRateDecay(Workload):
    """SGD with a learning rate decaying from 1 (step 0) to ``final`` (step n-1), optionally
    with momentum ``beta``.

    ``linear``: ``eta_t = 1 - (1 - final) t/(n-1)``; ``cosine``: ``eta_t = final + (1 - final)
    (1 + cos(pi t/(n-1)))/2``; ``exponential``: ``eta_t = final^(t/(n-1))``.

    Attributes:
        schedule: one of ``linear``, ``cosine``, ``exponential``.
        final: learning rate at the last step relative to the first, in (0, 1].
        beta: momentum coefficient in [0, 1).
    """

    kind: ClassVar[str] = "decay"
    schedule: str = attrs.field(default="cosine", validator=one_of(*SCHEDULES))
    final: float = attrs.field(default=0.1, validator=number(low=0.0, high=1.0, low_open=True))
    beta: float = attrs.field(default=0.0, validator=number(low=0.0, high=1.0, high_open=True))

    @property
    def momentum(self) -> float:
        return float(self.beta)

    def learning_rates(self, n_steps: int) -> np.ndarray:
        n = _check_steps("LearningRateDecay.learning_rates", n_steps)
        frac = np.arange(n) / max(n - 1, 1)
        f = float(self.final)
        if self.schedule == "linear":
            eta = 1.0 - (1.0 - f) * frac
        elif self.schedule == "cosine":
            eta = f + (1.0 - f) * 0.5 * (1.0 + np.cos(math.pi * frac))
        else:
            eta = f**frac
        return np.asarray(eta, dtype=np.float64)

    @property
    def spec(self) -> str:
        return f"{self.schedule}:{self.final!r}:{self.beta!r}"


def workload_from_spec(spec: Any) -> Workload:
    """A workload from a :class:`Workload` (returned as is) or a spec string: ``prefix``,
    ``momentum[:beta]``, ``linear|cosine|exponential[:final[:beta]]``. Raises
    ConfigurationError naming ``workload``."""
    if isinstance(spec, Workload):
        return spec
    allowed = (
        "a Workload or one of 'prefix', 'momentum[:beta]', "
        "'linear|cosine|exponential[:final[:beta]]'"
    )
    problem = ConfigurationError(
        f"workload = {spec!r} is invalid: must be {allowed}", parameter="workload"
    )
    if not isinstance(spec, str):
        raise problem
    name, *args = spec.strip().split(":")
    try:
        values = [float(a) for a in args]
    except ValueError:
        raise problem from None
    if name == "prefix" and not values:
        return PrefixSums()
    if name == "momentum" and len(values) <= 1:
        return Momentum(*values)
    if name in SCHEDULES and len(values) <= 2:
        return LearningRateDecay(name, *values)
    raise problem
