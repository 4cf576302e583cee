"""The accounting of paper §7.3's analogue (:mod:`minsep.paper.multi_attribution`): every
(epsilon, method, bands) row, user-level (zero-out of all of a user's examples).

DP-SGD by the exact PLD of the Binomial(k_u, p0) Gaussian mixture; b-min-sep BandMF
(Algorithm 3) by Monte Carlo calibration; unamplified BandMF by the Gaussian mechanism at k_u
times the example-level sensitivity (the module docstring of
:mod:`~minsep.paper.multi_attribution` states why each is sound).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.accountants.pld import conservative_sigma
from minsep.framework.errors import CalibrationError, InfeasibleError
from minsep.framework.interfaces import Strategy
from minsep.framework.option_groups import grouped
from minsep.paper.multi_attribution_settings import MASettings
from minsep.paper.options import EngineOptions
from minsep.paper.script import Stopwatch
from minsep.schemes import AttributionGraph, BMinSep, MultiAttribution
from minsep.strategies import BandedToeplitz, Identity

if TYPE_CHECKING:
    from dp_accounting import dp_event


def dp_sgd_event(sigma: float, rate: float, k_u: int, n_steps: int) -> dp_event.DpEvent:
    """n-fold composition of sum_j Binom(k_u, p0)(j) N(j, sigma^2) vs N(0, sigma^2)."""
    # lazy: dp_accounting and scipy.stats cost about a second to import, and the CLI imports
    # this module to build `minsep paper --help`
    from dp_accounting import dp_event as events
    from scipy import stats

    weights = stats.binom.pmf(np.arange(k_u + 1), k_u, rate)
    return events.SelfComposedDpEvent(
        events.MixtureOfGaussiansDpEvent(
            sigma, [float(j) for j in range(k_u + 1)], [float(w) for w in weights]
        ),
        n_steps,
    )


def dp_sgd_epsilon(
    sigma: float, rate: float, k_u: int, n_steps: int, delta: float, interval: float = 1e-3
) -> float:
    """User-level epsilon(delta) of DP-SGD by PLD (add-or-remove, pessimistic rounding on a
    grid of ``interval``)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=interval,
    )
    accountant.compose(dp_sgd_event(sigma, rate, k_u, n_steps))
    return max(float(accountant.get_epsilon(delta)), 0.0)


def dp_sgd_sigma(
    epsilon: float, rate: float, k_u: int, n_steps: int, delta: float, interval: float = 1e-3
) -> float:
    """The smallest sigma (within 0.1 %) whose user-level epsilon(delta) <= ``epsilon``."""
    sigma, _, _ = conservative_sigma(
        lambda s: dp_sgd_epsilon(s, rate, k_u, n_steps, delta, interval), epsilon, rtol=1e-3
    )
    return sigma


ROW_COLUMNS = (
    "epsilon_target",
    "method",
    "bands",
    "min_sep",
    "accountant",
    "sigma",
    "mse",
    "probability",
    "failure_probability",
    "note",
)


def calibrate_all(
    settings: MASettings,
    graph: AttributionGraph,
    engine: EngineOptions,
    report: Callable[[str], None] = lambda _: None,
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """Every (epsilon, method, bands) row, and the seconds each method took."""
    n, delta = settings.n_steps, settings.delta
    k_u = graph.max_user_examples
    rate = settings.rate(graph.n_examples)
    samples = settings.resolved_samples()
    options = grouped(MonteCarloAccountant, engine.accountant_options(samples))
    monte_carlo = MonteCarloAccountant(**options)
    gaussian = GaussianAccountant()
    strategies = {k: BandedToeplitz.optimal(n, k) for k in settings.bands}
    identity_mse = Identity().prefix_mse(n)
    b_epoch = max(math.floor(1.0 / rate * (1 + 1e-12)), 1)
    epoch_scheme = BMinSep(n_steps=n, rate=min(rate, 1.0 / b_epoch), min_sep=b_epoch)
    schemes = _holding_set_schemes(settings, graph, rate)
    rows: list[dict[str, Any]] = []
    seconds: dict[str, list[float]] = {"dp_sgd": [], "b_min_sep": [], "unamplified": []}
    for epsilon in settings.epsilons:
        report(f"epsilon {epsilon:g}: DP-SGD (PLD of the Binomial({k_u}, p0) Gaussian mixture)")
        clock = Stopwatch()
        sigma = dp_sgd_sigma(epsilon, rate, k_u, n, delta, settings.pld_interval)
        seconds["dp_sgd"].append(clock.wall)
        rows.append(
            {
                "epsilon_target": epsilon,
                "method": "dp_sgd",
                "bands": 1,
                "min_sep": 1,
                "accountant": "pld (mixture of Gaussians)",
                "sigma": sigma,
                "mse": identity_mse * sigma**2,
                "probability": rate,
                "failure_probability": 0.0,
                "note": "",
            }
        )
        for k in settings.bands:
            report(f"epsilon {epsilon:g}: b-min-sep BandMF, bands = b = {k} (Monte Carlo)")
            row = {"epsilon_target": epsilon, "method": "b_min_sep", "bands": k, "min_sep": k}
            row.update(
                _b_min_sep_cells(
                    schemes[k], strategies[k], monte_carlo, settings, epsilon, seconds["b_min_sep"]
                )
            )
            rows.append(row)
        for k in settings.bands:
            clock = Stopwatch()
            cal = gaussian.calibrate(epoch_scheme, strategies[k], epsilon, delta)
            seconds["unamplified"].append(clock.wall)
            sigma = k_u * cal.sigma
            rows.append(
                {
                    "epsilon_target": epsilon,
                    "method": "unamplified",
                    "bands": k,
                    "min_sep": b_epoch,
                    "accountant": "gaussian",
                    "sigma": sigma,
                    "mse": strategies[k].prefix_mse(n) * sigma**2,
                    "failure_probability": 0.0,
                    "note": f"user sensitivity {k_u} x example sensitivity "
                    f"({epoch_scheme.max_participations} participations)",
                }
            )
    return rows, seconds


def _holding_set_schemes(
    settings: MASettings, graph: AttributionGraph, rate: float
) -> dict[int, MultiAttribution | str]:
    """Algorithm 3 at min-sep b = k for every bands k, with its holding-set probability solved
    on ``graph``; the reason instead where no probability gives the expected batch."""
    schemes: dict[int, MultiAttribution | str] = {}
    for k in settings.bands:
        try:
            built = MultiAttribution.from_rate(
                settings.n_steps,
                rate,
                min_sep=k,
                max_user_examples=graph.max_user_examples,
                graph=graph,
            )
            assert isinstance(built, MultiAttribution)
            schemes[k] = built
        except InfeasibleError as exc:
            schemes[k] = f"infeasible: {exc}"
    return schemes


def _b_min_sep_cells(
    scheme: MultiAttribution | str,
    strategy: Strategy,
    accountant: MonteCarloAccountant,
    settings: MASettings,
    epsilon: float,
    seconds: list[float],
) -> dict[str, Any]:
    """The accountant's cells of one b-min-sep row: the Monte Carlo calibration (its wall
    seconds appended to ``seconds``), or a note when the scheme is infeasible or the
    calibration certifies nothing."""
    cells: dict[str, Any] = {"accountant": "monte_carlo"}
    if isinstance(scheme, str):
        cells["note"] = scheme
        return cells
    clock = Stopwatch()
    try:
        cal = accountant.calibrate(scheme, strategy, epsilon, settings.delta)
        cells.update(
            sigma=cal.sigma,
            mse=strategy.prefix_mse(settings.n_steps) * cal.sigma**2,
            failure_probability=cal.failure_probability,
        )
    except CalibrationError as exc:
        cells["note"] = f"not certified: {exc}"
    seconds.append(clock.wall)
    cells["probability"] = scheme.probability
    return cells


__all__ = [
    "ROW_COLUMNS",
    "calibrate_all",
    "dp_sgd_epsilon",
    "dp_sgd_event",
    "dp_sgd_sigma",
]
