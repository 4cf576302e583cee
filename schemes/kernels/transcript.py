"""sigma-free transcripts of the loss models (the Transcript protocol of the framework).

A transcript stores what ``log_ratio`` needs to rebuild ``<c_i, y>`` for any sigma:
``y = C x + sigma z`` gives ``<c_i, y> = signal_i + sigma * noise_i`` with
``signal_i = <c_i, C x>`` and ``noise_i = <c_i, z>``, z standard normal (docs/math.md §2).
Arrays are float64 of the backend's namespace, one row per sample: each ``(n_samples, n)``
array costs ``n_samples * n * 8`` bytes. ``signal`` is None when x = 0 (the ADD direction of
the untruncated models), halving the memory.
"""

from __future__ import annotations

from typing import Any

import attrs

from minsep.framework.interfaces import Direction


def _rows(array: Any) -> int:
    return int(array.shape[0])


def _nbytes(array: Any) -> int:
    if array is None:
        return 0
    size = 1
    for extent in array.shape:
        size *= int(extent)
    itemsize = getattr(array.dtype, "itemsize", None)
    if itemsize is None:  # array-API dtypes without itemsize: ask numpy by name
        import numpy as np

        itemsize = np.dtype(str(array.dtype).rsplit(".", 1)[-1]).itemsize
    return size * int(itemsize)


@attrs.frozen(eq=False)
class BlockTranscript:
    """Per-step block correlations (b-min-sep, Poisson, cyclic Poisson, multi-attribution).

    The signal ``<c_i, C x>`` is held densely, or as the participation steps (and x there),
    from which the fused kernels add it sparsely: with min-sep b >= k bands only the 2k - 1
    steps around a participation carry signal, so a step list of ``4 ceil(n / b)`` bytes per
    sample replaces a dense ``8 n``.

    Attributes:
        direction: REMOVE (x from the scheme's law) or ADD (x = 0).
        xp: the array namespace of the arrays.
        kernels: the kernel set of the model on the backend that drew it; the model's
            ``log_ratio`` evaluates with the same set.
        noise: ``<c_i, z>``, float64 ``(n_samples, n)`` -- ``8 n`` bytes per sample.
        signal: ``<c_i, C x>``, float64 ``(n_samples, n)``, or None: given densely (``8 n``
            bytes per sample) or, when only ``steps`` is stored, rebuilt on each access (for
            inspection; the models' kernels read ``steps``). None for x = 0.
        steps: participation steps, int32 ``(n_samples, m)`` ascending then padded with n (see
            :func:`~minsep.schemes.kernels.sampling.chain_steps`), or None.
        coefficients: c, needed to rebuild a dense signal from ``steps``.
        step_weights: x at each of ``steps`` (the user's count under multi-attribution),
            ``(n_samples, m)``, or None when every participation has x = 1.
        counts: public counts of the output (:class:`TruncatedTranscript`), or None.
    """

    direction: Direction
    xp: Any = attrs.field(repr=False)
    noise: Any = attrs.field(repr=False)
    kernels: str = attrs.field(default="array", kw_only=True)
    _signal: Any = attrs.field(default=None, repr=False, alias="signal")
    steps: Any = attrs.field(default=None, repr=False)
    coefficients: tuple[float, ...] = attrs.field(default=(), repr=False)
    step_weights: Any = attrs.field(default=None, repr=False)
    counts: Any = attrs.field(default=None, repr=False, kw_only=True)

    @property
    def n_samples(self) -> int:
        return _rows(self.noise)

    @property
    def signal(self) -> Any:
        """The dense ``<c_i, C x>`` (rebuilt from ``steps`` when not stored), or None."""
        if self._signal is not None or self.steps is None:
            return self._signal
        return sparse_signal(self.steps, self.step_weights, self.noise, self.coefficients, self.xp)

    @property
    def stored_signal(self) -> Any:
        """The dense signal if it was stored, else None (no rebuilding)."""
        return self._signal

    def nbytes(self) -> int:
        """Bytes held by the arrays (the memory of a kept transcript)."""
        arrays = (self.noise, self._signal, self.counts, self.steps, self.step_weights)
        return sum(_nbytes(a) for a in arrays)


def sparse_signal(
    steps: Any, weights: Any, noise: Any, coefficients: tuple[float, ...], xp: Any
) -> Any:
    """The dense ``<c_i, C x>`` of ``x`` given by its nonzero ``steps`` (padded with n) and the
    values there (``weights``; None: all 1), shaped like ``noise``."""
    from minsep.schemes.kernels.blocks import signal_dots
    from minsep.schemes.kernels.sampling import steps_to_pattern

    n = int(noise.shape[1])
    if weights is None:
        pattern = xp.astype(steps_to_pattern(steps, n, xp), xp.float64)
    else:  # numpy / cupy scatter; the padding steps land in the dropped column n
        rows = int(steps.shape[0])
        dense = xp.zeros((rows, n + 1), dtype=xp.float64)
        dense[xp.arange(rows)[:, None], steps] = xp.astype(weights, xp.float64)
        pattern = dense[:, :n]
    return signal_dots(pattern, coefficients, xp)


@attrs.frozen(eq=False)
class BinsTranscript(BlockTranscript):
    """Per-bin correlations for balls-in-bins: one column per non-empty bin s (T' = min(T, n)).

    ``noise`` is ``<C x_s, z>``, float64 ``(n_samples, T')`` (``8 T'`` bytes per sample);
    ``signal`` is ``<C x_s, C x_{s*}>`` for the drawn bin s*, or None under ADD.
    """


@attrs.frozen(eq=False)
class TruncatedTranscript(BlockTranscript):
    """Block correlations plus the public counts r_i of truncated b-min-sep (docs/math.md §6).

    Under both directions x is drawn (entries 0/1/2 under P, 0/-1 under Q: the dominating pair
    of paper App. D is not centred at zero), so the signal is always present: stored densely
    (array path) or as the sensitive example's sampled ``steps`` with x there
    (``step_weights``: 1, 2 or 0 under REMOVE; -1 or 0 under ADD). ``counts`` holds r_i, the
    other examples sampled at step i before truncation, ``(n_samples, n)`` int64 (int16 or
    int32 on the fused host path, as narrow as |D| allows).
    """
