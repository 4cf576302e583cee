"""What the built-in strategies share: argument checks named after the class, and the streaming
noise and the sensitivity's exactness written once over per-class hooks (docs/math.md §4, §8)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from minsep.framework.backend import Backend, RandomSource
from minsep.framework.interfaces import Strategy
from minsep.strategies.noise import check_shape
from minsep.strategies.toeplitz import check_steps


class CheckedStrategy(Strategy):
    """A built-in strategy: :meth:`noise` and :meth:`sensitivity_is_exact` check their
    arguments here, at the call, and hand them to :meth:`_stream` and :meth:`_exact`."""

    def _owner(self, method: str) -> str:
        return f"{type(self).__name__}.{method}"

    def _steps(self, method: str, n_steps: int) -> int:
        """``n_steps`` checked for ``method`` (a positive integer; a class may bound it)."""
        return check_steps(self._owner(method), n_steps)

    def noise(
        self,
        shape: Sequence[int],
        n_steps: int,
        rng: RandomSource,
        backend: Backend,
    ) -> Iterator[Any]:
        """Stream ``(C^-1 Z)[i]``, i = 1..n (:meth:`_stream`), the arguments checked at the
        call, not at the first ``next``."""
        dims = check_shape(self._owner("noise"), shape)
        return self._stream(dims, self._steps("noise", n_steps), rng, backend.xp)

    def _stream(self, shape: tuple[int, ...], n: int, rng: RandomSource, xp: Any) -> Iterator[Any]:
        """``(C^-1 Z)[i]`` for i = 1..n, ``Z[i] = rng.standard_normal(shape)`` drawn in order.
        Every built-in strategy implements it; a subclass may override :meth:`noise` instead."""
        raise NotImplementedError(f"{type(self).__name__} implements neither noise nor _stream")

    def sensitivity_is_exact(
        self,
        min_sep: int,
        n_steps: int | None = None,
        max_participations: int | None = None,
    ) -> bool:
        """True when :meth:`sensitivity` is the exact maximum for these arguments, False when
        it may be an upper bound (:meth:`_exact`)."""
        return self._exact(min_sep, n_steps, max_participations)

    def _exact(self, min_sep: int, n_steps: int | None, max_participations: int | None) -> bool:
        """:meth:`sensitivity_is_exact` (default: False, it may be a bound)."""
        return False
