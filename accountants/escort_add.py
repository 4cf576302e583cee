"""The escort's add direction, settled without escort draws (docs/rdp-escort.md §5, §8).

The escort serves the remove direction only. The add direction is handled, in this order of
preference, by route ``"exact zero"`` (``u >= pi(empty)``, so ``delta_add(eps) = 0`` exactly
when ``eps >= ln(1 / pi(empty))``, :func:`add_threshold`), route ``"deterministic"`` (the
Chernoff bound of docs/math.md §10, :func:`add_bound`, no sample), route ``"block bound"``
(the sampled block bound of docs/math.md §10.1, :func:`chosen_add_bound`: a few seconds of
block draws, none from the pair) or route ``"plain"`` (plain Monte Carlo of the add direction
on its own draws, when they fit: :func:`plain_add_fits`). An epsilon question tries plain draws
before the block bound where they are cheap (:func:`plain_add_first`, docs/rdp-escort.md §8).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from minsep.accountants.add_bound import ChernoffAddBound
from minsep.accountants.block_add_bound import BlockAddBound
from minsep.accountants.escort_setup import INFLATE, escort_law
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.bounds import base_delta
from minsep.framework.montecarlo.estimates import estimate_epsilon
from minsep.framework.montecarlo.plain import PlainSampler
from minsep.framework.montecarlo.precision import samples_for_precision
from minsep.framework.montecarlo.proposals import EpsilonQuestion, Verification
from minsep.framework.montecarlo.sampling import PILOT_STREAM, EngineConfig

__all__ = [
    "PLAIN_ADD_FIRST",
    "PLAIN_ADD_LIMIT",
    "AddBound",
    "add_bound",
    "add_delta_ceiling",
    "add_sampler",
    "add_threshold",
    "chosen_add_bound",
    "plain_add_cheap",
    "plain_add_first",
    "plain_add_fits",
    "plain_add_route",
]

#: An add-direction bound: ``delta(eps)`` and ``epsilon(delta)``, both upper bounds.
AddBound = ChernoffAddBound | BlockAddBound

#: A run sized by precision samples the add direction (plain) only up to this many draws;
#: beyond it the deterministic bound of docs/math.md §10 certifies it (and may bind).
PLAIN_ADD_LIMIT = 10**7
#: An epsilon question tries plain add draws before the sampled block bound when they (pilot
#: and verification) cost at most this many sample-steps, about 4 CPU-s of the plain kernels:
#: the block bound's draws cost more than that near the target delta (41 of 55 CPU-s at
#: n = 1024, 8 bands, b = 8, rate 1/256, sigma 1, delta 1e-3), plain add draws far less.
PLAIN_ADD_FIRST = 2**28
#: :func:`chosen_add_bound` computed in this process, per (model, sigma, delta, seed, needed):
#: a deterministic function of them (the block draws are seeded), asked by the route at the
#: sweep entry where its pilot centres a calibration and again when the walk checks that entry.
#: Entries hold the model (the key's id is only valid while it lives).
_CHOSEN: dict[tuple[int, float, float, int, float], tuple[object, tuple[str, AddBound]]] = {}
#: The memo is emptied when it reaches this many entries.
_CHOSEN_SIZE = 64


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
    verification draw of the pair leaves both guarantees intact. Memoised per process (the
    same arguments give the same bound, bit for bit).
    """
    key = (id(model), float(sigma), float(delta), int(seed), float(needed))
    kept = _CHOSEN.get(key)
    if kept is not None and kept[0] is model:
        return kept[1]
    chosen = _chosen_add_bound(model, sigma, delta, seed, needed)
    if len(_CHOSEN) >= _CHOSEN_SIZE:
        _CHOSEN.clear()
    _CHOSEN[key] = (model, chosen)
    return chosen


def _chosen_add_bound(
    model: PrivacyLossModel, sigma: float, delta: float, seed: int, needed: float
) -> tuple[str, AddBound]:
    """:func:`chosen_add_bound` without the memo."""
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


def plain_add_first(model: PrivacyLossModel, question: EpsilonQuestion) -> bool:
    """Whether an epsilon question's add direction tries plain draws before the sampled block
    bound: they can verify ``delta`` on the question's samples at all and cost at most
    :data:`PLAIN_ADD_FIRST` sample-steps. A planning rule: fixed before any verification draw."""
    count = len(question.fractions)
    return plain_add_cheap(model, question.delta, question.samples, question.pilot_samples, count)


def plain_add_cheap(
    model: PrivacyLossModel, delta: float, samples: int, pilot_samples: int, candidates: int
) -> bool:
    """:func:`plain_add_first` from the numbers: ``base_delta(samples, delta, candidates)``
    exists and ``(samples + pilot_samples) n <= PLAIN_ADD_FIRST``."""
    try:
        base_delta(samples, delta, candidates=candidates)
    except ConfigurationError:
        return False
    n_steps = escort_law("plain_add_cheap", model).n_steps
    return (samples + pilot_samples) * n_steps <= PLAIN_ADD_FIRST


def plain_add_route(
    model: PrivacyLossModel,
    question: EpsilonQuestion,
    candidates: Sequence[float],
    fractions: Sequence[float],
) -> tuple[list[float], Verification]:
    """Route ``"plain"`` of an epsilon question's add direction: a plain add pilot (stream 0)
    raises candidate r to its ``eps_hat(kappa_r add_base)`` (``kappa`` the remove ladder's
    ``fractions``) and the add draws verify at ``add_base = base_delta(samples, delta, R)``."""
    count = len(question.fractions)
    add_base = base_delta(question.samples, question.delta, candidates=count)
    draws = add_sampler(model, question.sigma, question.config)
    add_pilot = attrs.evolve(draws, histograms=True).tally(
        (),
        n_samples=question.pilot_samples,
        seed=question.seed,
        stream=PILOT_STREAM,
        description="pilot add",
    )
    raised = [
        max(c, estimate_epsilon(add_pilot, k * add_base).value)
        for c, k in zip(candidates, fractions, strict=True)
    ]
    return raised, Verification(1.0, add_base, draws, "verify add", draw_empty=False)
