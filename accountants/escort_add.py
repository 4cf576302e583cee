"""The escort's add direction, settled without escort draws (docs/rdp-escort.md §5, §8).

The escort serves the remove direction only. The add direction is handled, in this order of
preference, by route ``"exact zero"`` (``u >= pi(empty)``, so ``delta_add(eps) = 0`` exactly
when ``eps >= ln(1 / pi(empty))``, :func:`add_threshold`), route ``"deterministic"`` (the
Chernoff bound of docs/math.md §10, :func:`add_bound`, no sample), route ``"block bound"``
(the sampled block bound of docs/math.md §10.1, :func:`chosen_add_bound`: a few seconds of
block draws, none from the pair) or route ``"plain"`` (plain Monte Carlo of the add direction
on its own draws, when they fit: :func:`plain_add_fits`).
"""

from __future__ import annotations

import math

from minsep.accountants.add_bound import ChernoffAddBound
from minsep.accountants.block_add_bound import BlockAddBound
from minsep.accountants.escort_setup import INFLATE, escort_law
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.bounds import base_delta
from minsep.framework.montecarlo.plain import PlainSampler
from minsep.framework.montecarlo.precision import samples_for_precision
from minsep.framework.montecarlo.sampling import EngineConfig

__all__ = [
    "PLAIN_ADD_LIMIT",
    "AddBound",
    "add_bound",
    "add_delta_ceiling",
    "add_sampler",
    "add_threshold",
    "chosen_add_bound",
    "plain_add_fits",
]

#: An add-direction bound: ``delta(eps)`` and ``epsilon(delta)``, both upper bounds.
AddBound = ChernoffAddBound | BlockAddBound

#: A run sized by precision samples the add direction (plain) only up to this many draws;
#: beyond it the deterministic bound of docs/math.md §10 certifies it (and may bind).
PLAIN_ADD_LIMIT = 10**7


def add_threshold(model: PrivacyLossModel) -> float:
    """``ln(1 / pi(empty))`` (inflated): at or above it the add direction's delta is 0."""
    value = -escort_law("add_threshold", model).log_no_participation()
    return value * (1.0 + INFLATE) if math.isfinite(value) else math.inf


def add_bound(model: PrivacyLossModel, sigma: float) -> ChernoffAddBound:
    """The deterministic add-direction bound of docs/math.md §10 for the escort's model (its
    law's: :meth:`~.escort_law.EscortLaw.add_bound`)."""
    return escort_law("add_bound", model).add_bound(sigma)


def chosen_add_bound(
    model: PrivacyLossModel, sigma: float, delta: float, seed: int, needed: float = 0.0
) -> tuple[str, AddBound]:
    """The add-direction bound an escort run uses below ``ln(1/pi(empty))``, with its route.

    The deterministic §10 bound (route ``"deterministic"``) when its epsilon at ``delta`` is at
    most ``needed`` (it then costs nothing); else the sampled block bound of docs/math.md §10.1
    (route ``"block bound"``, aimed at ``delta``, from ``seed``'s block stream) when its epsilon
    is the smaller; else the deterministic one. Choosing between two valid bounds before any
    verification draw of the pair leaves both guarantees intact.
    """
    bound = add_bound(model, sigma)
    epsilon = bound.epsilon(delta)
    if epsilon <= needed:
        return "deterministic", bound
    law = escort_law("chosen_add_bound", model)
    block = law.sampled_add_bound(sigma, delta, seed, enough=needed if needed > 0 else None)
    if block is not None and block.epsilon(delta) < epsilon:
        return "block bound", block
    return "deterministic", bound


def add_delta_ceiling(
    model: PrivacyLossModel, sigma: float, epsilon: float, expected: float, seed: int
) -> tuple[str, float]:
    """The add direction's delta at ``epsilon`` without add draws of the pair, for a delta
    question whose remove direction is expected near ``expected``: ``(route, delta)`` of the
    deterministic §10 bound when it is at most ``expected``, else the smaller of it and the
    sampled block bound of docs/math.md §10.1 aimed at ``epsilon`` (failure budget
    ``1e-3 expected``, folded in). Chosen before any verification draw."""
    deterministic = add_bound(model, sigma).delta(epsilon)
    if deterministic <= expected:
        return "deterministic", deterministic
    law = escort_law("add_delta_ceiling", model)
    block = law.sampled_add_bound(
        sigma, min(expected, 0.5), seed, at_epsilon=epsilon, enough=math.log(expected)
    )
    if block is not None and block.delta(epsilon) < deterministic:
        return "block bound", block.delta(epsilon)
    return "deterministic", deterministic


def plain_add_fits(samples: int, delta: float, candidates: int, precision: float | None) -> bool:
    """Whether plain add draws can verify ``delta`` with ``samples`` and, when the run is
    sized by ``precision``, reach it on at most ``min(samples, PLAIN_ADD_LIMIT)`` draws
    (a route that sized ``samples`` for the escort leaves too few for the add direction);
    where they do not, the deterministic bound of docs/math.md §10 certifies it."""
    try:
        base_delta(samples, delta, candidates=candidates)
        if precision is None:
            return True
        need = samples_for_precision(delta, precision, candidates=candidates)
    except ConfigurationError:
        return False
    return need <= min(samples, PLAIN_ADD_LIMIT)


def add_sampler(model: PrivacyLossModel, sigma: float, config: EngineConfig | None) -> PlainSampler:
    """Plain draws of the add direction alone at ``sigma`` (exact sums, no histogram)."""
    return PlainSampler(model, sigma, config, directions=(Direction.ADD,), histograms=False)
