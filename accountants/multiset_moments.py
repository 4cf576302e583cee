"""The forward pass of ``Z_lam`` for b-min-sep BandMF over multisets of copies (docs/rdp-escort.md
§3.1).

The ``lam`` copies of the availability chain are exchangeable and the weight of a step depends
on them only through how many sit in each ring slot, so the joint chain of
:mod:`minsep.accountants.rdp_moments` lumps onto the multiset of their slots: ``C(b + lam - 1,
lam)`` states instead of ``(b + 1)^lam`` (b = 8, lam = 6: 1,716 instead of 531,441). The
message of a multiset is the total mass of the ordered tuples with that multiset, so the same
``Z_lam`` comes out. States are ranked by :mod:`.multiset_kernels` (colex order of the sorted
tuple); a step moves only the states with a copy in the free slot (``C(b + lam - 2, lam - 1)``
of them) and rescales like the array pass (:data:`~.rdp_moments.RESCALE`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import numpy as np

from minsep.accountants import rdp_moments as moments
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range


def compiled_kernels() -> Any:
    """The compiled kernels, imported on first use (numba stays out of start-up)."""
    from minsep.accountants import multiset_kernels

    return multiset_kernels


__all__ = [
    "MultisetTables",
    "StepRunner",
    "compiled_kernels",
    "initial_message",
    "log_moment",
    "prepare",
    "run_steps",
    "state_count",
    "stored_states",
    "tables",
    "work",
]


def state_count(min_sep: int, order: int) -> int:
    """Multisets of ``order`` copies over ``min_sep`` ring slots: ``C(b + lam - 1, lam)``."""
    return math.comb(min_sep + order - 1, order)


def stored_states(min_sep: int, order: int) -> int:
    """Entries of the multiset message (1 when b = 1: the closed form)."""
    return 1 if min_sep == 1 else state_count(min_sep, order)


def work(n_steps: int, min_sep: int, order: int) -> int:
    """Operations of one pass: per step, each of the ``C(b + lam - 2, lam - 1)`` states with a
    free copy is ranked and moved to at most ``lam + 1`` targets of ``lam`` slots each; about
    ``n (lam + 1) lam C(b + lam - 2, lam - 1)`` (``n (lam + 1)`` when b = 1)."""
    if min_sep == 1:
        return n_steps * (order + 1)
    return n_steps * (order + 1) * order * math.comb(min_sep + order - 2, order - 1)


@attrs.frozen(eq=False)
class MultisetTables:
    """What a pass at (b, lam) needs: every sorted ``(lam - 1)``-tuple and the binomials."""

    min_sep: int
    order: int
    lower: np.ndarray
    binom: np.ndarray

    @property
    def states(self) -> int:
        return state_count(self.min_sep, self.order)


@functools.lru_cache(maxsize=8)
def tables(min_sep: int, order: int) -> MultisetTables:
    """The :class:`MultisetTables` at (b, lam) (cached: a few per process)."""
    b, lam = min_sep, order
    lower = compiled_kernels().enumerate_multisets(b, lam - 1, state_count(b, lam - 1))
    binom = compiled_kernels().binomials(b + lam, lam)
    lower.setflags(write=False)
    binom.setflags(write=False)
    return MultisetTables(b, lam, lower, binom)


def prepare(
    owner: str,
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    max_states: int,
) -> tuple[int, moments.ColumnProducts]:
    """Check the inputs of a pass as :func:`~.rdp_moments.prepare` does, with the multiset
    count ``C(b + lam - 1, lam)`` against ``max_states``; returns the order and products."""
    lam = moments.check_order(owner, order)
    check_range(owner, "max_states", max_states, low=1, integer=True)
    b = chain.min_sep
    ceiling = max(int(max_states), moments.stored_states(b, lam))  # the array's count is moot
    lam, products = moments.prepare(owner, chain, coefficients, sigma, lam, ceiling)
    states = stored_states(b, lam)
    if states > max_states:
        raise ConfigurationError(
            f"{owner}.order = {lam} is invalid: its multiset message has C(min_sep + order - "
            f"1, order) = C({b + lam - 1}, {lam}) = {states} entries, above max_states = "
            f"{max_states}; use a lower order or raise max_states"
        )
    return lam, products


def initial_message(chain: ParticipationChain, table: MultisetTables) -> np.ndarray:
    """The multiset message before step 0: ``lam! / prod n_v! prod_v pi_v^{n_v}`` with ``pi``
    the chain's initial law (slot a holds countdown a at step 0)."""
    out = np.empty(table.states)
    law = np.asarray(chain.initial_law(), dtype=np.float64)
    compiled_kernels().initial_masses(law, table.order, table.states, out)
    return out


@attrs.frozen(eq=False)
class StepRunner:
    """One step's constants: the tables, the powers of p and 1 - p, a scratch buffer."""

    chain: ParticipationChain
    products: moments.ColumnProducts
    sigma: float
    table: MultisetTables
    join_pow: np.ndarray
    decline_pow: np.ndarray
    scratch: np.ndarray

    @classmethod
    def build(
        cls,
        chain: ParticipationChain,
        products: moments.ColumnProducts,
        sigma: float,
        order: int,
    ) -> StepRunner:
        p = chain.probability
        powers = np.arange(order + 1, dtype=np.float64)
        join = p**powers
        decline = (1.0 - p) ** powers  # 0^0 = 1: p = 1 keeps only j = m
        table = tables(chain.min_sep, order)
        scratch = np.empty(table.lower.shape[0])
        return cls(chain, products, sigma, table, join, decline, scratch)

    def exponents(self, t: int) -> np.ndarray:
        return moments.interaction_exponents(t, self.chain.min_sep, self.products, self.sigma)

    def step(self, message: np.ndarray, t: int) -> float:
        """Advance ``message`` over step t in place; returns the change of its mass."""
        b, kernels = self.chain.min_sep, compiled_kernels()
        return float(
            kernels.forward_step(message, self.table.lower, self.table.binom,
                                 self.exponents(t), t % b, b, self.join_pow,
                                 self.decline_pow, self.scratch)
        )  # fmt: skip


def run_steps(
    runner: StepRunner,
    message: np.ndarray,
    start: int,
    stop: int,
    mass: float,
    log_scale: float = 0.0,
) -> tuple[float, float]:
    """Steps ``start .. stop - 1`` in place, rescaling to mass 1 when the mass leaves
    ``[1/RESCALE, RESCALE]``; returns the mass and ``log_scale`` plus the log of the scale
    divided out (so a pass split into pieces adds up the same floats)."""
    for t in range(start, stop):
        mass += runner.step(message, t)
        if not (1.0 / moments.RESCALE <= mass <= moments.RESCALE):
            total = float(message.sum())
            message /= total
            log_scale += math.log(total)
            mass = 1.0
    return mass, log_scale


def log_moment(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> float:
    """``ln Z_lam`` by the multiset pass (b = 1: the closed form of
    :func:`~.rdp_moments.log_moment`). Same refusals as that function, with the multiset
    count against ``max_states``."""
    lam, products = prepare("log_moment", chain, coefficients, sigma, order, max_states)
    if chain.min_sep == 1:
        return moments.log_moment(chain, coefficients, sigma, lam, max_states=max_states)
    runner = StepRunner.build(chain, products, float(sigma), lam)
    message = initial_message(chain, runner.table)
    _, log_scale = run_steps(runner, message, 0, chain.n_steps, float(message.sum()))
    return log_scale + math.log(float(message.sum()))
