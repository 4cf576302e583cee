"""The block laws of the sampled add-direction bound (docs/math.md §10.1 and §10.1.1).

The n steps are cut into blocks of length L (the last one takes the rest) and only the
participation patterns whose participations lie in each block's *zone* are kept. Two variants:

* ``"zone"`` (§10.1): the zone is a block's first ``L - b + 1`` steps, so the chain restarts
  available at every block boundary and each block law is one forward pass from its initial law.
  Each block but the last drops about ``(b - 1) p`` of its mass.
* ``"entry-min"`` (§10.1.1): the zone is a block's first ``L - k + 1`` steps (k bands), so the
  columns stay inside the block but a participation's barred steps may spill into the next one;
  the next block's factor is the minimum over the entry states it can have (barred counts
  ``s = 0..b-k``), ``M_B = min_s G_{B,s}``, computed for all s at once by one backward pass
  (``V_s`` is the weight of the block from "available at step s"). Each block but the last
  drops about ``(k - 1) p``; with ``k = b`` it is the zone variant.

Both give ``U(y) >= prod_B F_B(y_B)`` pointwise, the factors depending on disjoint rows.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import positive_int

__all__ = [
    "ENTRY_MIN",
    "ZONE",
    "BlockKind",
    "block_factors",
    "block_kinds",
    "entry_min_factors",
    "entry_min_kinds",
    "variant_kinds",
]

#: The restart variant of §10.1 and the entry-minimum variant of §10.1.1.
ZONE = "zone"
ENTRY_MIN = "entry-min"


@attrs.frozen
class BlockKind:
    """One block law: ``length`` steps, participation allowed at steps ``< zone``, availability
    law ``initial`` over the barred counts 0..b-1 at the block's start, ``count`` such blocks.
    ``entries`` > 0: the factor is the minimum over the entry states 0..entries-1 (§10.1.1);
    ``initial`` is then the point mass at 0, whose empty weight ``(1 - p)^L`` is the smallest
    of theirs."""

    length: int = attrs.field(validator=positive_int())
    zone: int = attrs.field(validator=positive_int())
    initial: tuple[float, ...]
    count: int = attrs.field(validator=positive_int())
    entries: int = attrs.field(default=0)

    @entries.validator
    def _check_entries(self, attribute: attrs.Attribute[int], value: int) -> None:
        if not 0 <= value <= len(self.initial):
            raise ConfigurationError(
                f"BlockKind.entries = {value} is invalid: it must be in [0, {len(self.initial)}]"
            )

    @property
    def entry_min(self) -> bool:
        """Whether the factor is a minimum over entry states (§10.1.1)."""
        return self.entries > 0

    def log_empty(self, probability: float) -> float:
        """``ln G_B(empty)``: the weight of declining every available step of the block."""
        log1mp = math.log1p(-probability) if probability < 1.0 else -math.inf
        terms = [
            math.log(w) + max(self.length - a, 0) * log1mp
            for a, w in enumerate(self.initial)
            if w > 0.0
        ]
        top = max(terms)
        if top == -math.inf:
            return top
        return top + math.log(sum(math.exp(t - top) for t in terms))


def _check_length(chain: ParticipationChain, length: int) -> None:
    n, b = chain.n_steps, chain.min_sep
    if length < min(b, n):
        raise ConfigurationError(
            f"block_kinds.length = {length} is invalid: it must be at least min_sep = {b} "
            f"(or the {n} steps)"
        )


def block_kinds(chain: ParticipationChain, length: int) -> list[BlockKind]:
    """The ``"zone"`` block laws of ``chain`` cut into blocks of ``length`` (§10.1).

    Every block but the last allows participation in its first ``length - b + 1`` steps, so a
    participation's barred steps end inside it and the next block starts available; the first
    block starts from the chain's initial law (cold: available), the others available.
    """
    _check_length(chain, length)
    n, b = chain.n_steps, chain.min_sep
    cold = (1.0,) + (0.0,) * (b - 1)
    first = tuple(float(x) for x in chain.initial_law())
    blocks = max(n // length, 1)
    last_length = n - (blocks - 1) * length
    zone = length - b + 1
    if blocks == 1:
        return [BlockKind(n, n, first, 1)]
    kinds: list[BlockKind] = []
    middle = blocks - 2
    if first != cold:
        kinds.append(BlockKind(length, zone, first, 1))
    else:
        middle += 1
    if middle > 0:
        kinds.append(BlockKind(length, zone, cold, middle))
    kinds.append(BlockKind(last_length, last_length, cold, 1))
    return kinds


def entry_min_kinds(chain: ParticipationChain, length: int, bands: int) -> list[BlockKind]:
    """The ``"entry-min"`` block laws (§10.1.1): zones of ``length - bands + 1`` steps; the first
    block from the chain's initial law, every later one the minimum over the entry states a
    zone participation can leave (barred counts ``0..b - bands``; the last block's zone is all of
    it). One block (``n < 2 length``) is the whole exact mixture, and ``bands = b`` the zone
    variant itself (:func:`block_kinds`: entry state 0 only)."""
    _check_length(chain, length)
    n, b = chain.n_steps, chain.min_sep
    if not 1 <= bands <= min(b, length):
        raise ConfigurationError(
            f"entry_min_kinds.bands = {bands} is invalid: it must be in [1, min_sep = {b}]"
        )
    cold = (1.0,) + (0.0,) * (b - 1)
    first = tuple(float(x) for x in chain.initial_law())
    blocks = max(n // length, 1)
    if blocks == 1 or bands == b:
        return block_kinds(chain, length)
    last_length = n - (blocks - 1) * length
    zone = length - bands + 1
    entries = b - bands + 1
    kinds = [BlockKind(length, zone, first, 1)]
    if blocks > 2:
        kinds.append(BlockKind(length, zone, cold, blocks - 2, entries=entries))
    kinds.append(BlockKind(last_length, last_length, cold, 1, entries=entries))
    return kinds


def variant_kinds(
    chain: ParticipationChain, length: int, variant: str, bands: int
) -> list[BlockKind]:
    """The block laws of ``variant`` (:data:`ZONE` or :data:`ENTRY_MIN`)."""
    if variant == ZONE:
        return block_kinds(chain, length)
    if variant == ENTRY_MIN:
        return entry_min_kinds(chain, length, bands)
    raise ConfigurationError(
        f"variant_kinds.variant = {variant!r} is invalid: it must be {ZONE!r} or {ENTRY_MIN!r}"
    )


def _compiled() -> bool:
    """Whether the block factors run compiled (:mod:`.block_kernels`; numba importable and
    ``MINSEP_KERNELS`` not ``array``)."""
    from minsep.framework.backend import numba_unavailable_reason

    return numba_unavailable_reason() is None


def _kernel_inputs(coefficients: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``z`` (C-contiguous float64, rows x block length) and the coefficients as float64."""
    return (
        np.ascontiguousarray(z, dtype=np.float64),
        np.ascontiguousarray(coefficients, dtype=np.float64),
    )


def _cut_norms(kind: BlockKind, coefficients: np.ndarray) -> np.ndarray:
    """``||c_j||^2`` cut at the block's end for the zone steps j (``0 + c_0^2 + c_1^2 + ...``
    over the rows inside the block)."""
    k = len(coefficients)
    norms = np.zeros(kind.zone)
    ones = np.concatenate([np.ones(kind.length), np.zeros(k - 1)])
    for i, c in enumerate(np.asarray(coefficients, dtype=np.float64)):
        norms += c * c * ones[i : i + kind.zone]
    return norms


def _gains(kind: BlockKind, coefficients: np.ndarray, sigma: float, z: np.ndarray) -> np.ndarray:
    """``g_j = exp(<c_j, z> / sigma - ||c_j||^2 / (2 sigma^2))`` at the zone steps j, the
    column c_j cut at the block's end (rows x ``kind.zone``)."""
    k = coefficients.size
    rows = z.shape[0]
    padded = np.concatenate([z, np.zeros((rows, k - 1))], axis=1)
    dots = np.zeros((rows, kind.zone))
    for i, c in enumerate(coefficients):
        dots += c * padded[:, i : i + kind.zone]
    norms = _cut_norms(kind, coefficients)
    with np.errstate(over="ignore"):
        return np.asarray(np.exp(dots / sigma - norms / (2.0 * sigma * sigma)))


def block_factors(
    kind: BlockKind, coefficients: np.ndarray, sigma: float, probability: float, z: np.ndarray
) -> np.ndarray:
    """``ln G_B`` for each row of standard normals ``z`` (rows x ``kind.length``).

    ``y = sigma z``; forward pass over "available at step t": ``A[t + b] += p g_t A[t]`` (zone
    steps), ``A[t + 1] += (1 - p) A[t]``; ``G = sum A[>= L]``. An ``entry_min`` kind is
    :func:`entry_min_factors`.
    """
    if kind.entry_min:
        return entry_min_factors(kind, coefficients, sigma, probability, z)
    if _compiled():
        from minsep.accountants.block_kernels import zone_log_factors

        out = np.empty(z.shape[0])
        zone_log_factors(*_kernel_inputs(coefficients, z), sigma, probability,
                         np.asarray(kind.initial, dtype=np.float64), kind.zone,
                         _cut_norms(kind, coefficients), out)  # fmt: skip
        return out
    b = len(kind.initial)
    rows, length = z.shape
    g = _gains(kind, coefficients, sigma, z)
    p = probability
    avail = np.zeros((rows, length + b))
    avail[:, :b] = np.asarray(kind.initial)
    for t in range(length):
        here = avail[:, t]
        if t < kind.zone:
            avail[:, t + b] += p * g[:, t] * here
        avail[:, t + 1] += (1.0 - p) * here
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        total = avail[:, length:].sum(axis=1)
        return np.asarray(np.log(total), dtype=np.float64)


def entry_values(
    kind: BlockKind, coefficients: np.ndarray, sigma: float, probability: float, z: np.ndarray
) -> np.ndarray:
    """``G_{B,s}`` for every entry state s = 0..b-1 (rows x b): the backward pass
    ``V_t = (1 - p) V_{t+1} + p g_t V_{t+b}`` (the second term at zone steps only), ``V_t = 1``
    for ``t >= L``; ``G_{B,s} = V_s``, the weight of the block from "available at step s"
    (the same sum as the forward pass from the point mass at s, for all s at once)."""
    b = len(kind.initial)
    rows, length = z.shape
    g = _gains(kind, coefficients, sigma, z)
    p = probability
    value = np.ones((rows, length + b))
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(length - 1, -1, -1):
            if t < kind.zone:
                value[:, t] = (1.0 - p) * value[:, t + 1] + p * g[:, t] * value[:, t + b]
            else:
                value[:, t] = (1.0 - p) * value[:, t + 1]
    return value[:, :b]


def entry_min_factors(
    kind: BlockKind, coefficients: np.ndarray, sigma: float, probability: float, z: np.ndarray
) -> np.ndarray:
    """``ln M_B = ln min_{s < entries} G_{B,s}`` for each row of ``z`` (§10.1.1;
    :func:`entry_values`)."""
    if _compiled():
        from minsep.accountants.block_kernels import entry_log_minima

        out = np.empty(z.shape[0])
        entry_log_minima(*_kernel_inputs(coefficients, z), sigma, probability,
                         len(kind.initial), kind.zone, kind.entries,
                         _cut_norms(kind, coefficients), out)  # fmt: skip
        return out
    values = entry_values(kind, coefficients, sigma, probability, z)[:, : kind.entries]
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(values.min(axis=1)), dtype=np.float64)
