"""The participation laws whose integer-order Renyi moments minsep computes exactly.

The ``rdp`` accountant asks a scheme for the law of its sensitive unit through the hooks
:meth:`~minsep.framework.interfaces.SamplingScheme.participation_chain` (b-min-sep, Poisson;
docs/rdp-escort.md §2-§3) and :meth:`~minsep.framework.interfaces.SamplingScheme.phase_mixture`
(random-phase cyclic Poisson; §10), and talks to it through one :class:`MomentLaw`: the state
budget, the forward pass, ``pi(empty)`` and the add-direction bound that the law supports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np

from minsep.accountants import multiset_moments, phase_moments
from minsep.accountants import rdp_moments as moments
from minsep.accountants.add_bound import (
    AddDirectionBound,
    ChernoffAddBound,
    add_direction_bound,
    phase_add_bound,
)
from minsep.framework.participation import ParticipationChain
from minsep.framework.phase_mixture import PhaseMixture

if TYPE_CHECKING:
    from minsep.framework.interfaces import SamplingScheme, Strategy

__all__ = ["ChainMoments", "MomentLaw", "PhaseMoments", "moment_law", "moments_of"]


class MomentLaw(Protocol):
    """What the ``rdp`` accountant needs from a participation law."""

    @property
    def n_steps(self) -> int: ...

    @property
    def min_sep(self) -> int: ...

    @property
    def states_formula(self) -> str:
        """How the state count grows with the order (messages): ``C(min_sep + order - 1, order)``
        for a chain (docs/rdp-escort.md §3.1)."""

    def stored_states(self, order: int) -> int: ...

    def work(self, order: int) -> int: ...

    def fits(self, order: int, sigma: float, products: moments.ColumnProducts) -> bool: ...

    def log_moment(
        self, coefficients: np.ndarray, sigma: float, order: int, max_states: int
    ) -> float: ...

    def log_no_participation(self) -> float: ...

    def add_covered(self, strategy: Strategy) -> bool: ...

    def add_bound(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float
    ) -> ChernoffAddBound | None: ...


@attrs.frozen
class ChainMoments:
    """A b-min-sep availability chain (docs/rdp-escort.md §2-§3; Poisson as b = 1), by the
    multiset pass of §3.1."""

    chain: ParticipationChain
    states_formula: str = "C(min_sep + order - 1, order)"

    @property
    def n_steps(self) -> int:
        return self.chain.n_steps

    @property
    def min_sep(self) -> int:
        return self.chain.min_sep

    def stored_states(self, order: int) -> int:
        return multiset_moments.stored_states(self.chain.min_sep, order)

    def work(self, order: int) -> int:
        return multiset_moments.work(self.chain.n_steps, self.chain.min_sep, order)

    def fits(self, order: int, sigma: float, products: moments.ColumnProducts) -> bool:
        """b = 1 is a closed form in log space; otherwise one step must fit float64."""
        exponent = moments.step_exponent(order, sigma, products)
        return self.chain.min_sep == 1 or exponent <= moments.MAX_STEP_EXPONENT

    def log_moment(
        self, coefficients: np.ndarray, sigma: float, order: int, max_states: int
    ) -> float:
        return multiset_moments.log_moment(
            self.chain, coefficients, sigma, order, max_states=max_states
        )

    def log_no_participation(self) -> float:
        return self.chain.log_no_participation()

    def add_covered(self, strategy: Strategy) -> bool:
        """b = 1 with one band is Poisson: Mironov, Talwar & Zhang (2019) order the add
        direction below the remove direction."""
        return self.chain.min_sep == 1 and strategy.bands == 1

    def add_bound(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float
    ) -> AddDirectionBound | None:
        return add_direction_bound(scheme, strategy, sigma)


@attrs.frozen
class PhaseMoments:
    """Random-phase cyclic Poisson (docs/rdp-escort.md §10; b = 1 is Poisson)."""

    mixture: PhaseMixture
    states_formula: str = "C(min_sep + order - 1, order) * 2^order"

    @property
    def n_steps(self) -> int:
        return self.mixture.n_steps

    @property
    def min_sep(self) -> int:
        return self.mixture.phases

    def _poisson(self) -> ParticipationChain:
        return ParticipationChain(
            n_steps=self.mixture.n_steps, min_sep=1, probability=self.mixture.probability
        )

    def stored_states(self, order: int) -> int:
        if self.mixture.phases == 1:
            return 1
        return phase_moments.stored_entries(self.mixture.phases, order)

    def work(self, order: int) -> int:
        if self.mixture.phases == 1:
            return moments.work(self.mixture.n_steps, 1, order)
        return phase_moments.work(self.mixture.n_steps, self.mixture.phases, order)

    def fits(self, order: int, sigma: float, products: moments.ColumnProducts) -> bool:
        """b = 1 is the Poisson closed form; otherwise one step must fit float64."""
        exponent = moments.step_exponent(order, sigma, products)
        return self.mixture.phases == 1 or exponent <= moments.MAX_STEP_EXPONENT

    def log_moment(
        self, coefficients: np.ndarray, sigma: float, order: int, max_states: int
    ) -> float:
        if self.mixture.phases == 1:  # equal to the pass (tested), without its float64 limit
            return moments.log_moment(
                self._poisson(), coefficients, sigma, order, max_states=max_states
            )
        return phase_moments.log_moment(
            self.mixture, coefficients, sigma, order, max_entries=max_states
        )

    def log_no_participation(self) -> float:
        return self.mixture.log_no_participation()

    def add_covered(self, strategy: Strategy) -> bool:
        """One phase and one band is Poisson (Mironov, Talwar & Zhang 2019)."""
        return self.mixture.phases == 1 and strategy.bands == 1

    def add_bound(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float
    ) -> AddDirectionBound | None:
        """The per-phase Chernoff bound (docs/rdp-escort.md §10), unit contributions only."""
        if float(scheme.max_step_contribution) != 1.0:
            return None
        coefficients = np.asarray(strategy.coefficients, dtype=np.float64)
        return phase_add_bound(self.mixture, coefficients, sigma)


#: The adapter of each law type a scheme's hooks return.
_ADAPTERS: dict[type, Callable[[Any], MomentLaw]] = {
    ParticipationChain: ChainMoments,
    PhaseMixture: PhaseMoments,
}


def moments_of(law: ParticipationChain | PhaseMixture) -> MomentLaw:
    """The :class:`MomentLaw` of a law returned by a scheme's hook."""
    return _ADAPTERS[type(law)](law)


def moment_law(scheme: SamplingScheme) -> MomentLaw | None:
    """The scheme's law with exact moments: its participation chain, else its phase mixture,
    else None."""
    law: ParticipationChain | PhaseMixture | None = scheme.participation_chain()
    if law is None:
        law = scheme.phase_mixture()
    return None if law is None else moments_of(law)
