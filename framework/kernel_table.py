"""The kernel table of a loss model: its compiled entry points, by kernel set.

A kernel set is the code that evaluates a model on a backend (``"numba"`` on host numpy,
``"cuda"`` on cupy, ``"array"``: the portable array code every model has). A model declares
the entry points it has for each set in one :class:`KernelTable` (the class variable
``kernel_table`` of :class:`~minsep.framework.loss_model.PrivacyLossModel`); every dispatch
reads that table, and a set no entry names runs the array code. docs/adding-a-scheme.md,
"Compiled kernels", states the calling conventions with an example.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

#: A compiled entry point (its calling convention: :class:`KernelTable`).
Entry = Callable[..., Any]


@attrs.frozen(eq=False)
class Participation:
    """What one draw fixes besides the noise, in the form the entries read (all optional).

    Attributes:
        signal: ``<c_i, C x>`` as a dense float64 ``(S, n)`` array, or None.
        steps: x kept sparsely: the steps where it is nonzero, int32 ``(S, m)`` ascending and
            padded with n, or None.
        weights: x at ``steps`` (``(S, m)``), or None when every entry there is 1.
        counts: public side information of the output (the truncated family's counts r_i),
            or None.
    """

    signal: Any = None
    steps: Any = None
    weights: Any = None
    counts: Any = None


def _table(value: Mapping[str, Entry]) -> dict[str, Entry]:
    return dict(value)


@attrs.frozen(eq=False)
class KernelTable:
    """The compiled entry points of a loss model, keyed by kernel set (module docstring).

    ``model`` below is the loss model itself (an entry reads its parameters there), ``given`` a
    :class:`Participation`, ``values`` float64 ``(S, n)``: the noise correlations ``<c_i, z>``
    with ``value_scale = 1/sigma``, or the dots ``<c_i, y>`` with ``value_scale = 1/sigma^2``.

    Attributes:
        noise: ``noise[k](n_samples, n_steps, coefficients, rng)``: ``<c_i, z>`` for ``z =
            rng.standard_normal((n_samples, n_steps))``, the same stream as the array code.
        sparse_ratio: ``sparse_ratio[k](values, given, sigma, value_scale, model)``:
            ``ln P/Q`` per row, the signal read from ``given.steps``/``given.weights`` (None:
            no signal). Its set draws the participation sparsely.
        dense_ratio: ``dense_ratio[k](values, given, sigma, value_scale, model)``, the
            signal read from the dense ``given.signal`` (None: no signal).
        losses: ``losses[k](n_samples, given, rng, sigmas, model)``: ``ln P/Q`` at every
            sigma of one draw whose participation is ``given`` (drawn sparsely), the noise
            drawn and evaluated block by block.
        sets: further sets on which the array code itself runs compiled pieces (a model whose
            only kernel is the numba recursion).
    """

    noise: Mapping[str, Entry] = attrs.field(factory=dict, converter=_table)
    sparse_ratio: Mapping[str, Entry] = attrs.field(factory=dict, converter=_table)
    dense_ratio: Mapping[str, Entry] = attrs.field(factory=dict, converter=_table)
    losses: Mapping[str, Entry] = attrs.field(factory=dict, converter=_table)
    sets: tuple[str, ...] = ()

    @property
    def kernel_sets(self) -> frozenset[str]:
        """Every kernel set some entry (or :attr:`sets`) names."""
        entries = (self.noise, self.sparse_ratio, self.dense_ratio, self.losses)
        return frozenset(self.sets).union(*entries)

    def kernel_set(self, requested: str) -> str:
        """``requested`` (the backend's set) when the table names it, else ``"array"``."""
        return requested if requested in self.kernel_sets else "array"

    def ratio(self, kernels: str, dense_signal: bool) -> Entry | None:
        """The entry that evaluates ``ln P/Q`` on ``kernels``: the sparse one unless the signal
        is held densely, then the dense one; None: the array code."""
        entry = None if dense_signal else self.sparse_ratio.get(kernels)
        return entry if entry is not None else self.dense_ratio.get(kernels)
