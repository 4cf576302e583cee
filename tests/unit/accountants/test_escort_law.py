"""The escort laws loss models provide (accountants/escort_law.py, docs/rdp-escort.md §8, §10.6):
which models have one, which orders they afford, and that the engine refuses the others by name."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.accountants.escort_engine import EscortProposal, add_bound, add_threshold
from minsep.accountants.escort_law import ChainEscortLaw, PhaseEscortLaw
from minsep.accountants.escort_setup import escort_setups
from minsep.accountants.phase_moments import log_moment
from minsep.framework.errors import ConfigurationError
from minsep.schemes.b_min_sep import BMinSep
from minsep.schemes.cyclic_poisson.scheme import CyclicPoisson
from minsep.schemes.truncated.scheme import Truncated
from minsep.strategies import BandedToeplitz

BANDS = BandedToeplitz(coefficients=(0.8, 0.6))


def random_phase(n: int = 1024, b: int = 8) -> CyclicPoisson:
    return CyclicPoisson(n_steps=n, rate=1 / 256, min_sep=b, partition="random")


def test_each_scheme_gives_its_law() -> None:
    chain = BMinSep(n_steps=20, rate=0.05, min_sep=4).loss_model(BANDS).escort_law()  # type: ignore[attr-defined]
    phase = random_phase(20, 4).loss_model(BANDS).escort_law()  # type: ignore[attr-defined]
    assert isinstance(chain, ChainEscortLaw) and isinstance(phase, PhaseEscortLaw)
    assert "min-sep 4" in chain.budget_note and "4 phases" in phase.budget_note


def test_phase_orders_are_limited_by_time_and_memory() -> None:
    """b = 8, n = 1024: orders 2-4 fit the per-pass work (as in the rdp accountant); a tiny
    state budget affords none and the engine says why, naming the phases."""
    model = random_phase().loss_model(BandedToeplitz(coefficients=(1.0,) * 8))
    law = model.escort_law()  # type: ignore[attr-defined]
    affordable = [lam for lam in (2, 3, 4, 5, 6, 8) if law.affordable(lam, 2**24)]
    assert affordable == [2, 3, 4]
    assert EscortProposal().unavailable(model) is None
    reason = EscortProposal(max_states=64).unavailable(model)
    assert reason is not None and "8 phases" in reason and "max_states = 64" in reason
    setups = escort_setups(model, 1.0)
    assert [s.order for s in setups] == [2, 3, 4]
    exact = log_moment(law.mixture, law.coefficients, 1.0, 3)
    assert np.allclose(law.coefficients, 8**-0.5)  # the model's (normalised) coefficients
    assert setups[1].log_z == pytest.approx(exact, rel=2e-10) and setups[1].log_z > exact


def test_chain_orders_are_limited_by_multiset_states_and_time() -> None:
    """The chain's escort runs the multiset pass (docs/rdp-escort.md §3.1): every default order
    at b = 8, n = 1024 (order 8: C(15, 8) = 6435 states); at b = 64 order 5 exceeds the work
    of a pass, at the paper's b = 256, n = 7200 order 3 does; b = 9 order 2 needs C(10, 2) = 45
    states."""

    def orders(
        n: int, b: int, bands: int, max_states: int = 2**24, rate: float = 1 / 256
    ) -> list[int]:
        c = np.ones(bands) / np.sqrt(bands)
        law = (
            BMinSep(n_steps=n, rate=rate, min_sep=b)
            .loss_model(BandedToeplitz(coefficients=tuple(c)))
            .escort_law()
        )  # type: ignore[attr-defined]
        return [lam for lam in (2, 3, 4, 5, 6, 8) if law.affordable(lam, max_states)]

    assert orders(1024, 8, 8) == [2, 3, 4, 5, 6, 8]
    assert orders(1024, 64, 4) == [2, 3, 4]
    assert orders(7200, 256, 8, rate=1 / 512) == [2]  # p = 1/257: the chain
    assert orders(7200, 256, 8) == [2, 3, 4, 5, 6]  # p = 1: balls-in-bins (§10.9)
    assert orders(1024, 9, 8, max_states=44) == [] and orders(1024, 9, 8, 45) == [2]


def test_add_routes_come_from_the_law() -> None:
    model = random_phase(20, 4).loss_model(BANDS)
    mixture = model.escort_law().mixture  # type: ignore[attr-defined]
    assert add_threshold(model) == pytest.approx(-mixture.log_no_participation(), rel=1e-9)
    assert add_threshold(model) > -mixture.log_no_participation()  # inflated upward
    assert add_bound(model, 1.0).n_steps == 5  # the per-phase bound: ceil(n / b) steps


def test_a_model_without_an_escort_law_is_refused_by_name() -> None:
    scheme = Truncated(base=BMinSep(n_steps=5, rate=0.1, min_sep=2), max_batch_size=30,
                       dataset_size=100)  # fmt: skip
    model = scheme.loss_model(BANDS)
    assert EscortProposal().unavailable(model) == f"{type(model).__name__} has no escort law"
    with pytest.raises(ConfigurationError, match="escort_law"):
        escort_setups(model, 1.0)


def test_one_phase_is_poisson() -> None:
    """b = 1: the phase law's pass gives Poisson's ln Z (the chain's closed form)."""
    phase = CyclicPoisson(n_steps=50, rate=0.05, min_sep=1, partition="random")
    poisson = BMinSep(n_steps=50, rate=0.05, min_sep=1, warm_start=False)
    one = BandedToeplitz(coefficients=(1.0,))
    mixed = escort_setups(phase.loss_model(one), 0.7, (2, 3, 4))
    chained = escort_setups(poisson.loss_model(one), 0.7, (2, 3, 4))
    assert [s.log_z for s in mixed] == pytest.approx([s.log_z for s in chained], rel=1e-12)
