"""The loss-model base of the built-in families: draw, log-ratio and privacy losses written once.

Every family's ``ln P/Q`` is a function of the column dot products ``<c_i, y>`` (docs/math.md
§2): with ``y = C x + sigma z``, ``<c_i, y> = signal_i + sigma noise_i``, the signal fixed by
the sensitive unit's participation and the noise ``<c_i, z>`` by the normals. A family supplies
its participation draw (:meth:`BlockLossModel.participation_draw`), its ratio from the dot
products (:meth:`BlockLossModel.ratio`) and its :class:`~minsep.framework.kernel_table.
KernelTable` of compiled entries (each given the model, to read its parameters);
:class:`BlockLossModel` draws the transcript, evaluates it and fuses the two, dispatching
through the table only.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.backend import Backend, RandomSource, default_kernels
from minsep.framework.kernel_table import Participation
from minsep.framework.loss_model import Direction, PrivacyLossModel
from minsep.schemes.kernels.blocks import signal_dots, sliding_dot, tail_norms
from minsep.schemes.kernels.fields import (
    as_coefficients,
    boolean,
    check_bands_fit,
    coefficients_validator,
)
from minsep.schemes.kernels.sampling import model_chain_steps
from minsep.schemes.kernels.transcript import BlockTranscript


class BlockLossModel(PrivacyLossModel):
    """A loss model whose ratio reads the column dot products (module docstring).

    Subclasses are attrs classes with the fields ``coefficients`` (c_0..c_{k-1} of the banded
    C) and ``n_steps``. The participation is drawn first, then the normals, on every kernel
    set (the same random stream): sparsely (steps) on a set with a ``sparse_ratio`` entry,
    else as a dense signal.
    """

    #: The transcript type :meth:`draw` returns.
    transcript_type: ClassVar[type[BlockTranscript]] = BlockTranscript

    coefficients: tuple[float, ...]

    @abstractmethod
    def participation_draw(
        self, samples: int, direction: Direction, rng: RandomSource, backend: Backend, sparse: bool
    ) -> Participation:
        """The sensitive unit's part of a draw for ``direction``: its steps (``sparse``) or its
        dense signal (:meth:`signal_of`), and any public counts; empty when x = 0."""

    @abstractmethod
    def ratio(self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str) -> Any:
        """``ln P/Q`` per row from ``dots[:, i] = <c_i, y>`` (float64 ``(S, n)``; the columns
        of :meth:`columns`) and the public part of ``given``: the portable array code."""

    def columns(self, values: Any, xp: Any) -> Any:
        """The per-step values ``(S, n)`` as the columns :meth:`ratio` reads (default: as
        they are)."""
        return values

    def signal_of(self, pattern: Any, xp: Any) -> Any:
        """The dense signal ``<c_i, C x>`` of patterns x (``(S, n)``, any numeric dtype)."""
        return signal_dots(xp.astype(pattern, xp.float64), self.coefficients, xp)

    def tail_norms(self, xp: Any) -> Any:
        """``||c_i||^2`` per step as an ``(n,)`` array of ``xp``."""
        return xp.asarray(tail_norms(self.coefficients, self.n_steps))

    def _note(self) -> None:
        """Called on every draw and evaluation (a model that must flag its use overrides it)."""

    def noise(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """``<c_i, z>`` for ``z = rng.standard_normal((n_samples, n))``: the table's entry for
        the kernel set, else the array code (the same stream)."""
        entry = self.kernel_table.noise.get(self.kernel_set(backend))
        if entry is not None:
            return entry(n_samples, self.n_steps, self.coefficients, rng)
        z = rng.standard_normal((n_samples, self.n_steps))
        return sliding_dot(z, self.coefficients, backend.xp)

    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> BlockTranscript:
        """The participation for ``direction`` (:meth:`participation_draw`), then z."""
        self._note()
        kernels = self.kernel_set(backend)
        sparse = kernels in self.kernel_table.sparse_ratio
        given = self.participation_draw(n_samples, direction, rng, backend, sparse)
        noise = self.columns(self.noise(n_samples, rng, backend), backend.xp)
        parts = attrs.asdict(given, recurse=False)  # signal, steps, weights and counts
        parts["step_weights"] = parts.pop("weights")
        return self.transcript_type(
            direction, backend.xp, noise, kernels=kernels, coefficients=self.coefficients, **parts
        )

    def log_ratio(self, transcript: Any, sigma: float) -> Any:
        """``ln P(y)/Q(y)`` with ``<c_i, y> = signal_i + sigma noise_i``."""
        self._note()
        stored = transcript.stored_signal
        sparse = stored is None and transcript.kernels in self.kernel_table.sparse_ratio
        entry = self.kernel_table.ratio(transcript.kernels, dense_signal=not sparse)
        if entry is not None:
            # a dense entry reads given.signal: the stored one, or one rebuilt from the steps
            # (a transcript drawn sparsely on another kernel set, e.g. moved to the GPU)
            signal = None if sparse else transcript.signal
            given = Participation(signal, transcript.steps, transcript.step_weights,
                                  transcript.counts)  # fmt: skip
            return entry(transcript.noise, given, sigma, 1.0 / sigma, self)
        dots = sigma * transcript.noise
        signal = transcript.signal
        if signal is not None:
            dots = signal + dots
        given = Participation(counts=transcript.counts)
        return self.ratio(dots, given, sigma, transcript.xp, transcript.kernels)

    def log_ratio_at(self, outputs: Any, sigma: float, xp: Any, kernels: str | None = None) -> Any:
        """``ln P(y)/Q(y)`` at given outputs ``y`` (float64 ``(n_samples, n)`` of ``xp``), with
        ``kernels`` (default: those of a default backend over ``xp``)."""
        self._note()
        return self.ratio_at(outputs, Participation(), sigma, xp, kernels)

    def ratio_at(
        self, outputs: Any, given: Participation, sigma: float, xp: Any, kernels: str | None
    ) -> Any:
        """:meth:`log_ratio_at` with the public part ``given`` of the output."""
        dots = self.columns(sliding_dot(outputs, self.coefficients, xp), xp)
        return self.ratio_of_dots(dots, given, sigma, xp, kernels)

    def count_dots(
        self, counts: np.ndarray, sigma: float, rng: RandomSource, backend: Backend
    ) -> Any:
        """``<c_i, y>`` per step (float64 ``(S, n)``, before :meth:`columns`) at ``y = C x +
        sigma z`` with x = ``counts`` (integer ``(S, n)``, host) and ``z =
        rng.standard_normal((S, n))``: the noise correlations by :meth:`noise` (the fused
        kernels where the table has them), the signal from the nonzero counts
        (:func:`~minsep.schemes.kernels.count_dots.add_count_signal`); y is never formed
        (docs/rdp-escort.md §7). Host backends only; the result may be a reused buffer."""
        # lazy: the module compiles with numba, which building the CLI must not import
        from minsep.schemes.kernels.count_dots import add_count_signal

        noise = np.ascontiguousarray(self.noise(int(counts.shape[0]), rng, backend))
        compiled = backend.kernels == "numba"
        return add_count_signal(noise, counts, self.coefficients, sigma, compiled)

    def log_ratio_of_counts(
        self, counts: np.ndarray, sigma: float, rng: RandomSource, backend: Backend
    ) -> Any:
        """``ln P(y)/Q(y)`` at ``y = C counts + sigma z`` (:meth:`count_dots`): what
        :meth:`log_ratio_at` gives on that y, without forming it (the escort's draws)."""
        self._note()
        dots = self.columns(self.count_dots(counts, sigma, rng, backend), backend.xp)
        kernels = self.kernel_set(backend)
        return self.ratio_of_dots(dots, Participation(), sigma, backend.xp, kernels)

    def ratio_of_dots(
        self, dots: Any, given: Participation, sigma: float, xp: Any, kernels: str | None
    ) -> Any:
        """``ln P/Q`` from the column dots ``<c_i, y>`` (after :meth:`columns`): the table's
        ratio entry for ``kernels`` (value scale ``1/sigma^2``, no sparse signal), else
        :meth:`ratio`."""
        kernels = self.kernel_table.kernel_set(kernels or default_kernels(xp))
        entry = self.kernel_table.ratio(kernels, dense_signal=False)
        if entry is not None:
            return entry(dots, given, sigma, 1.0 / sigma**2, self)
        return self.ratio(dots, given, sigma, xp, kernels)

    def privacy_losses(
        self,
        n_samples: int,
        direction: Direction,
        rng: RandomSource,
        backend: Backend,
        sigmas: Sequence[float],
    ) -> list[Any]:
        """The losses of one draw at every sigma; fused block by block by the table's
        ``losses`` entry where there is one (the same values as ``privacy_loss(draw(...),
        sigma)``, from the same stream, without holding the transcript)."""
        kernels = self.kernel_set(backend)
        entry = self.kernel_table.losses.get(kernels)
        if entry is None:
            return super().privacy_losses(n_samples, direction, rng, backend, sigmas)
        sparse = kernels in self.kernel_table.sparse_ratio
        given = self.participation_draw(n_samples, direction, rng, backend, sparse)
        losses = entry(n_samples, given, rng, sigmas, self)
        return [direction.sign * loss for loss in losses]


@attrs.frozen
class ChainLossModel(BlockLossModel):
    """A block model of the b-min-sep availability chain (docs/math.md §3): the fields of
    Theorem 5.1 and the sensitive example's participation steps.

    Attributes:
        coefficients: c_0..c_{k-1} of C (non-negative; not renormalised), k <= ``min_sep``.
        n_steps: number of steps n.
        min_sep: b, the minimum separation between two participations.
        probability: the per-step sampling probability p of an available example (not p0).
        warm_start: Algorithm 2 (initial state from the stationary law) instead of Algorithm 1.
    """

    coefficients: tuple[float, ...] = attrs.field(
        converter=as_coefficients, validator=coefficients_validator
    )
    n_steps: int = attrs.field(validator=v.positive_int())
    min_sep: int = attrs.field(validator=v.positive_int())
    probability: float = attrs.field(validator=v.probability())
    warm_start: bool = attrs.field(validator=boolean)

    def __attrs_post_init__(self) -> None:
        check_bands_fit(self, self.coefficients, self.min_sep)

    def steps(self, n_samples: int, rng: RandomSource, backend: Backend) -> Any:
        """Participation steps of the sensitive example, int32 ``(n_samples, ceil(n / b))``
        (ascending, then padded with n): :func:`~minsep.schemes.kernels.sampling.chain_steps`."""
        return model_chain_steps(self, n_samples, rng, backend)
