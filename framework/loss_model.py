"""The loss-model contract: a dominating pair (P, Q) sampled in two stages (docs/math.md §1, §7).

Notation follows ``docs/math.md`` (paper: Dong & Ganesh, "Privacy Amplification for BandMF via
b-Min-Sep Subsampling"). The mechanism is ``y = C x + z`` with ``z ~ N(0, sigma^2 I_n)``; ``x``
is the participation vector of the sensitive unit, drawn from the scheme's law under P and
identically zero under Q (zero-out adjacency).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from minsep.framework.backend import array_path_note
from minsep.framework.kernel_table import KernelTable

if TYPE_CHECKING:
    from minsep.framework.backend import Backend, RandomSource

#: Float64 arrays of ``n_steps`` values per sample that :meth:`PrivacyLossModel.bytes_per_sample`
#: assumes for a model that does not declare its own figure.
DEFAULT_WORKING_ARRAYS = 16


class Direction(enum.Enum):
    """Which neighbouring order a privacy-loss sample is drawn for (docs/math.md §1).

    REMOVE: y ~ P, L = ln P(y)/Q(y).   ADD: y ~ Q, L = -ln P(y)/Q(y).
    """

    REMOVE = "remove"
    ADD = "add"

    @property
    def sign(self) -> float:
        """+1 for REMOVE, -1 for ADD: ``L = sign * ln P/Q``."""
        return 1.0 if self is Direction.REMOVE else -1.0


@runtime_checkable
class Transcript(Protocol):
    """sigma-free draws for ``n_samples`` privacy-loss samples (common random numbers).

    Concrete transcripts hold e.g. the participation pattern and the standard-normal
    correlations ``<c_i, z>``; a loss model turns them into ``ln P/Q`` for any sigma.
    """

    @property
    def n_samples(self) -> int:
        """Number of samples held."""

    @property
    def direction(self) -> Direction:
        """The direction the samples were drawn for."""


class PrivacyLossModel(ABC):
    """A dominating pair (P, Q) for one scheme and strategy, sampled in two stages.

    ``draw`` produces sigma-free transcripts; ``log_ratio`` maps a transcript and a noise
    multiplier to ``ln P(y)/Q(y)``. Splitting the two lets calibration re-use one set of draws
    across many sigma values (common random numbers, docs/math.md §7).
    """

    #: True when the accounting rests on an unproven conjecture (Algorithm 4).
    conjectured: ClassVar[bool] = False
    #: True when ``log_ratio`` returns a bound of ``ln P/Q`` instead of its value: an upper
    #: bound on REMOVE transcripts and a lower bound on ADD ones, y drawn from the true
    #: mechanism. The loss L is then over-estimated in both directions, so no delta(eps) is
    #: under-estimated, and ``E[exp(-L)] <= 1`` replaces ``= 1`` (docs/math.md §2.1).
    bounds_ratio: ClassVar[bool] = False
    #: The compiled entry points by kernel set (:class:`~minsep.framework.kernel_table.
    #: KernelTable`); empty: the model runs the portable array code everywhere.
    kernel_table: ClassVar[KernelTable] = KernelTable()

    @property
    @abstractmethod
    def n_steps(self) -> int:
        """The number of steps n of the mechanism."""

    @abstractmethod
    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> Transcript:
        """Draw ``n_samples`` sigma-free transcripts for ``direction`` on ``backend``."""

    @abstractmethod
    def log_ratio(self, transcript: Transcript, sigma: float) -> Any:
        """``ln P(y)/Q(y)`` per sample (a length-``n_samples`` array of the backend).

        ``y = C x + sigma z`` under REMOVE and ``y = sigma z`` under ADD, rebuilt from the
        transcript. Must be finite for every sigma > 0 the model accepts.
        """

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes one sample of a chunk occupies while it is drawn and evaluated: its
        transcript plus the working arrays of :meth:`draw` and :meth:`log_ratio` on
        ``backend``. The engine multiplies it by the chunk size to plan memory before it
        allocates (:mod:`~minsep.framework.montecarlo.planning`).

        The default assumes ``DEFAULT_WORKING_ARRAYS`` float64 arrays of ``n_steps`` values;
        a model whose working set is larger (or that is not O(n) per sample) must override it.
        """
        return 8 * DEFAULT_WORKING_ARRAYS * max(int(self.n_steps), 1)

    def privacy_loss(self, transcript: Transcript, sigma: float) -> Any:
        """The privacy loss ``L = sign(direction) * ln P/Q`` per sample (docs/math.md §1)."""
        return transcript.direction.sign * self.log_ratio(transcript, sigma)

    def privacy_losses(
        self,
        n_samples: int,
        direction: Direction,
        rng: RandomSource,
        backend: Backend,
        sigmas: Sequence[float],
    ) -> list[Any]:
        """The privacy losses of one draw at every sigma of ``sigmas`` (common random numbers):
        ``privacy_loss(draw(...), sigma)`` for each. What the Monte Carlo engine calls per chunk
        and direction. A model may fuse the draw with the evaluation (evaluating each block of
        samples as soon as it is drawn, never holding the whole transcript) provided it returns
        the same values from the same stream."""
        transcript = self.draw(n_samples, direction, rng, backend)
        return [self.privacy_loss(transcript, sigma) for sigma in sigmas]

    def kernel_set(self, backend: Backend) -> str:
        """Which code evaluates this model on ``backend`` in this process: ``backend.kernels``
        (``"numba"``, ``"cuda"``) when :attr:`kernel_table` has entries for it, else
        ``"array"`` (portable array code). Monte Carlo results record it."""
        return self.kernel_table.kernel_set(backend.kernels)

    def kernel_notes(self, backend: Backend) -> tuple[str, ...]:
        """Notes for a result computed on ``backend``: none on a compiled path; on the array
        path (:meth:`kernel_set`) one note, saying that this model has no compiled kernels and
        where the kernel interface is described (an empty :attr:`kernel_table`), or why host
        numpy runs the array code and how to get the compiled one."""
        if self.kernel_set(backend) != "array":
            return ()
        if not self.kernel_table.kernel_sets:
            return (
                f"loss model {type(self).__name__} has no compiled kernels: it ran on the "
                "portable array code (docs/adding-a-scheme.md, 'Compiled kernels', describes "
                "the kernel table a model fills for the compiled path)",
            )
        import numpy as np

        return (array_path_note(),) if backend.xp is np else ()
