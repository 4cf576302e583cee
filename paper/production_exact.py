"""Parts 1 and 4 of paper §7.4 (:mod:`minsep.paper.production`): exact calibrations.

Part 1: the noise multiplier at (epsilon, delta) of DP-SGD and of cyclic Poisson BandMF, each
untruncated and truncated to B_max, by dp_accounting's PLD (pessimistic rounding). Part 4: which
accounting assumption reproduces the paper's sigma ~ 0.627 (PLD or RDP, the rate from the
expected or the padded batch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from minsep.accountants.pld import PLDAccountant
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.paper.production_settings import (
    PAPER_SIGMA_CYCLIC_TRUNCATED,
    PAPER_SIGMA_POISSON,
    ProductionSettings,
)
from minsep.paper.rdp import rdp_calibrate
from minsep.schemes import CyclicPoisson, Poisson, Truncated
from minsep.strategies import Identity


@attrs.frozen
class Case:
    """One exactly accounted configuration."""

    label: str
    scheme: SamplingScheme
    strategy: Strategy
    paper_sigma: float | None


def pld_cases(settings: ProductionSettings, banded: Strategy) -> list[Case]:
    """DP-SGD and cyclic Poisson BandMF, untruncated and truncated to B_max."""
    n, rate = settings.n_steps, settings.rate
    truncation = {"max_batch_size": settings.max_batch, "dataset_size": settings.dataset_size}
    return [
        Case("DP-SGD (Poisson)", Poisson.from_rate(n, rate), Identity(), PAPER_SIGMA_POISSON),
        Case(
            "DP-SGD (Poisson), truncated",
            Truncated.from_rate(n, rate, base="poisson", **truncation),
            Identity(),
            None,
        ),
        Case(
            f"cyclic Poisson {settings.bands}-BandMF",
            CyclicPoisson.from_rate(n, rate, min_sep=settings.bands),
            banded,
            None,
        ),
        Case(
            f"cyclic Poisson {settings.bands}-BandMF, truncated",
            Truncated.from_rate(
                n, rate, base="cyclic_poisson", min_sep=settings.bands, **truncation
            ),
            banded,
            PAPER_SIGMA_CYCLIC_TRUNCATED,
        ),
    ]


PLD_COLUMNS = ("configuration", "accountant", "sigma", "epsilon_at_sigma", "paper_sigma")


def pld_rows(
    settings: ProductionSettings, cases: Sequence[Case], accountant: PLDAccountant
) -> list[dict[str, Any]]:
    """The calibrated sigma of every case at (epsilon, delta)."""
    out = []
    for case in cases:
        cal = accountant.calibrate(case.scheme, case.strategy, settings.epsilon, settings.delta)
        eps = accountant.epsilon(case.scheme, case.strategy, cal.sigma, settings.delta)
        out.append(
            {
                "configuration": case.label,
                "accountant": "pld",
                "sigma": cal.sigma,
                "epsilon_at_sigma": eps.epsilon,
                "paper_sigma": case.paper_sigma,
            }
        )
    return out


ASSUMPTION_COLUMNS = (
    "configuration",
    "accountant",
    "batch_for_rate",
    "sampling_rate",
    "sigma",
    "sigma_rounded_up_3dp",
    "paper_sigma",
)


def _poisson(n: int) -> Callable[[float], SamplingScheme]:
    return lambda rate: Poisson.from_rate(n, rate)


def _cyclic(n: int, groups: int) -> Callable[[float], SamplingScheme]:
    return lambda rate: CyclicPoisson.from_rate(n, rate, min_sep=groups)


def assumption_rows(
    settings: ProductionSettings, banded: Strategy, accountant: PLDAccountant
) -> list[dict[str, Any]]:
    """Calibrated sigma of DP-SGD and cyclic Poisson (untruncated events) by PLD and by RDP,
    with the per-step rate from the expected batch B or from the padded batch B_max.

    The rate enters the events as q = B/|D| (DP-SGD) and q = b·B/|D| (cyclic Poisson, one of b
    groups); ``sigma_rounded_up_3dp`` is sigma rounded up to three decimals, as a deployed
    configuration would quote it.
    """
    n, b, size = settings.n_steps, settings.bands, settings.dataset_size
    families: list[tuple[str, Strategy, float, int, Callable[[float], SamplingScheme]]] = [
        ("DP-SGD (Poisson)", Identity(), PAPER_SIGMA_POISSON, 1, _poisson(n)),
        (f"cyclic Poisson {b}-BandMF", banded, PAPER_SIGMA_CYCLIC_TRUNCATED, b, _cyclic(n, b)),
    ]
    batches = (("expected B", settings.expected_batch), ("padded B_max", settings.max_batch))
    out = []
    for label, strategy, paper_sigma, groups, build in families:
        for name, batch in batches:
            scheme = build(batch / size)
            for route in ("pld", "rdp"):
                if route == "pld":
                    cal = accountant.calibrate(scheme, strategy, settings.epsilon, settings.delta)
                    sigma = cal.sigma
                else:
                    sigma = rdp_calibrate(scheme, strategy, settings.epsilon, settings.delta)
                out.append(
                    {
                        "configuration": label,
                        "accountant": route,
                        "batch_for_rate": name,
                        "sampling_rate": min(1.0, groups * batch / size),
                        "sigma": sigma,
                        "sigma_rounded_up_3dp": math.ceil(round(sigma * 1000, 9)) / 1000,
                        "paper_sigma": paper_sigma,
                    }
                )
    return out


__all__ = [
    "ASSUMPTION_COLUMNS",
    "PLD_COLUMNS",
    "Case",
    "assumption_rows",
    "pld_cases",
    "pld_rows",
]
