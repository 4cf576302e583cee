"""b-min-sep with a strategy C that is not banded: the r-min-sep bound (paper App. B.1,
docs/math.md §2.1).

With full columns c_i = C[:, i] and ``G = C^T C``,

    P/Q(y) = sum_x mu(x) exp((<Cx, y> - ||Cx||^2 / 2) / sigma^2),
    ||Cx||^2 = sum_{i in x} ||c_i||^2 + 2 sum_{i < j in x} G[i, j].

Bounding the cross terms per participation (:func:`~.columns.cross_term_budgets`: ``-down[j]
<= sum_{i < j in x} G[i, j] <= up[j]`` summed over j in x) makes both bounds products over the
participations, which the recursion of Theorem 5.1 sums over the b-min-sep chain exactly:

    upper:  f with weights exp((<c_i, y> - ||c_i||^2 / 2 + down[i]) / sigma^2)  >= P/Q(y),
    lower:  f with weights exp((<c_i, y> - ||c_i||^2 / 2 - up[i]) / sigma^2)    <= P/Q(y).

For non-negative C, ``down = 0`` and the upper bound simply drops the cross terms. For a banded
C with min-sep b >= bands both budgets vanish and both bounds equal P/Q.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.kernel_table import KernelTable
from minsep.schemes.b_min_sep.columns import (
    DenseColumns,
    ToeplitzColumns,
    cross_term_budgets,
)
from minsep.schemes.kernels.fields import boolean
from minsep.schemes.kernels.recursion import chain_log_ratio
from minsep.schemes.kernels.sampling import model_chain_steps, steps_to_pattern
from minsep.schemes.kernels.transcript import BlockTranscript


def _columns(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, ToeplitzColumns | DenseColumns):
        raise v.fail(instance, attribute.name, value, "ToeplitzColumns or DenseColumns")


@attrs.frozen(eq=False)
class ColumnBoundLossModel(PrivacyLossModel):
    """b-min-sep subsampling with any non-negative C: bounds of ``ln P/Q`` (App. B.1).

    ``log_ratio`` returns an **upper** bound of ``ln P(y)/Q(y)`` on REMOVE transcripts and a
    **lower** bound on ADD transcripts; y is always drawn from the true mechanism (y = Cx + sigma
    z with x from the b-min-sep chain under REMOVE, y = sigma z under ADD). The privacy loss L
    is therefore over-estimated pointwise in both directions, and since ``(1 - e^{eps - L})_+``
    increases in L, every Monte Carlo delta(eps) -- the mean, and the certified bounds built on
    it -- is at least its exact value in each direction (docs/math.md §2.1). ``E[exp(-L)] <= 1``
    replaces the identity ``= 1``. Exact (both bounds equal P/Q) when ``G[i, j] = 0`` for every
    pair at least ``min_sep`` apart, e.g. banded C with bands <= min_sep.

    Attributes:
        columns: the columns of C (:class:`~.columns.ToeplitzColumns` or
            :class:`~.columns.DenseColumns`); n = its size.
        min_sep: b (the r of App. B), the minimum separation between two participations.
        probability: the per-step sampling probability p of an available example (not p0).
        warm_start: Algorithm 2 (initial state from the stationary law) instead of Algorithm 1.

    Transcript: :class:`~minsep.schemes.kernels.transcript.BlockTranscript` with the noise
    products ``<c_i, z>`` and, under REMOVE, the dense signal ``<c_i, Cx>`` (8 n bytes each per
    sample); sigma-free. Setup: the Gram matrix (O(n^2) memory, O(n^3) for dense C) and the
    budgets (O(n^2)), once per model. Per sample: ``C^T z`` (O(n log n) Toeplitz, O(n^2)
    dense) and one O(n) recursion per sigma.
    """

    bounds_ratio: ClassVar[bool] = True
    #: The compiled piece is the numba recursion its array code runs.
    kernel_table: ClassVar[KernelTable] = KernelTable(sets=("numba",))

    columns: ToeplitzColumns | DenseColumns = attrs.field(validator=_columns)
    min_sep: int = attrs.field(validator=v.positive_int())
    probability: float = attrs.field(validator=v.probability())
    warm_start: bool = attrs.field(validator=boolean)
    _norms: np.ndarray = attrs.field(init=False, repr=False)
    _up: np.ndarray = attrs.field(init=False, repr=False)
    _down: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        up, down = cross_term_budgets(self.columns.gram(), self.min_sep)
        object.__setattr__(self, "_norms", self.columns.norms())
        object.__setattr__(self, "_up", up)
        object.__setattr__(self, "_down", down)

    @property
    def n_steps(self) -> int:
        return self.columns.n_steps

    @property
    def budgets(self) -> tuple[np.ndarray, np.ndarray]:
        """``(up, down)`` of :func:`~.columns.cross_term_budgets` (copies)."""
        return self._up.copy(), self._down.copy()

    def is_exact(self) -> bool:
        """True when both budgets vanish: the bounds are ``ln P/Q`` itself."""
        return not (np.any(self._up > 0.0) or np.any(self._down > 0.0))

    def steps(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Participation steps of the sensitive example (those of Theorem 5.1's model)."""
        return model_chain_steps(self, n_samples, rng, backend)

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Noise and signal rows plus the working rows of the products and the recursion
        (12 rows of n under REMOVE, 8 under ADD; FFT buffers included)."""
        rows = 12 if direction is Direction.REMOVE else 8
        return 8 * self.n_steps * rows

    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> BlockTranscript:
        """Under REMOVE the pattern x from the chain, then z; under ADD only z (x = 0)."""
        xp = backend.xp
        signal = None
        if direction is Direction.REMOVE:
            steps = self.steps(n_samples, rng, backend)
            pattern = xp.astype(steps_to_pattern(steps, self.n_steps, xp), xp.float64)
            signal = self.columns.correlate(self.columns.apply(pattern, xp), xp)
        z = rng.standard_normal((n_samples, self.n_steps))
        noise = self.columns.correlate(z, xp)
        return BlockTranscript(
            direction=direction, xp=xp, noise=noise, signal=signal, kernels=backend.kernels
        )

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        """The bound of ``ln P(y)/Q(y)`` for the transcript's direction (upper under REMOVE,
        lower under ADD) with ``<c_i, y> = signal_i + sigma noise_i``."""
        dots = sigma * transcript.noise
        if transcript.stored_signal is not None:
            dots = transcript.stored_signal + dots
        return self.bound_from_dots(
            dots, sigma, transcript.direction, transcript.xp, transcript.kernels
        )

    def bound_at(self, outputs: Any, sigma: float, direction: Direction, xp: Any) -> Any:
        """The bound of ``ln P(y)/Q(y)`` for ``direction`` at given outputs y (float64
        ``(n_samples, n)`` of ``xp``): upper for REMOVE, lower for ADD (array kernels)."""
        return self.bound_from_dots(
            self.columns.correlate(outputs, xp), sigma, direction, xp, "array"
        )

    def bound_from_dots(
        self, dots: Any, sigma: float, direction: Direction, xp: Any, kernels: str
    ) -> Any:
        """The recursion of Theorem 5.1 on the bounded block log-ratios (module docstring)."""
        shift = self._down if direction is Direction.REMOVE else -self._up
        centre = xp.asarray(0.5 * self._norms - shift)
        log_block = (dots - centre) / sigma**2
        recursion = "numba" if kernels == "numba" else "array"
        chain = (self.probability, self.min_sep, self.warm_start, xp)
        return chain_log_ratio(log_block, *chain, kernels=recursion)


__all__ = ["ColumnBoundLossModel"]
