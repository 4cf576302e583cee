"""Escort importance sampling in the Monte Carlo engine (docs/rdp-escort.md §8).

The remove direction ``delta_remove(eps) = E_{R_lam}[W]`` is estimated and verified on exact
draws from the escort ``R_lam`` (:mod:`minsep.accountants.escort`), with ``0 <= W <= s_lam(eps)``
pointwise. Every check divides W by one support bound ``s*`` fixed before the verification
draws, so ``X = W / s*`` lies in [0, 1] and Fact 4.2 applies to it unchanged: accepting at base
``x_b`` with ``m`` samples certifies ``delta_remove <= s* overall_delta(m, x_b)`` (the failure
folded in; with probability at most ``q`` a wrong candidate passes, and then still
``delta_remove <= s*``, so the folded bound is ``s* (tau x_b + q (1 - tau x_b))``). A weight
above its bound is refused (:class:`SupportBoundError`), never clipped.

The add direction, deterministically first: ``u >= pi(empty)``, so ``delta_add(eps) = 0``
exactly when ``eps >= ln(1 / pi(empty))`` (docs/rdp-escort.md §5, route ``"exact zero"``);
below it the Chernoff bound of docs/math.md §10 (route ``"deterministic"``) certifies the add
direction without a sample wherever it is at most delta (epsilon questions: when its epsilon
is below every candidate, when plain add draws could not certify delta with the samples given,
or when a precision-sized run would need more than PLAIN_ADD_LIMIT of them or more than the
samples given (a route sized them for the escort), the candidates
being raised to its epsilon; delta questions: where it is at most the remove direction's
release; calibration: per sweep entry, entries it does not settle failing where plain add
draws do not fit). Only where it is not
enough is the add direction verified by plain Monte Carlo on its own draws (route
``"plain"``). A claim fails only if one direction fails, so the released delta is the larger
of the two directions' bounds.

Draws are chunked like the plain engine's: chunk ``i`` of stream ``s`` uses
``SeedSequence(seed, spawn_key=(s, i, 0))``, tasks are picklable (process and Dask executors),
and each sampling call is one checkpoint stage.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from minsep.accountants import rdp_moments as moments
from minsep.accountants.add_bound import (
    AddDirectionBound,
    banded_operator_norm_upper,
    chain_add_bound,
)
from minsep.accountants.escort import (
    escort_outputs,
    log_escort_weight,
    log_support_bound,
    sample_escort_counts,
)
from minsep.framework.errors import CalibrationError, ConfigurationError, MinsepError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.accumulators import SweepTally
from minsep.framework.montecarlo.bounds import (
    base_delta,
    min_samples,
    overall_delta,
    verification_failure,
)
from minsep.framework.montecarlo.calibration import FALLBACK, SweepCalibration, _check_sweep
from minsep.framework.montecarlo.estimates import estimate_epsilon
from minsep.framework.montecarlo.evr import (
    DEFAULT_FACTORS,
    DEFAULT_LADDER,
    DeltaCertificate,
    EpsilonCertificate,
)
from minsep.framework.montecarlo.precision import samples_for_precision
from minsep.framework.montecarlo.proposals import ProposalInfo, SupportBoundError
from minsep.framework.montecarlo.sampling import (
    PILOT_STREAM,
    VERIFY_STREAM,
    ChunkTask,
    EngineConfig,
    chunk_seed,
    sample,
    sample_chunks,
)
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range

__all__ = [
    "DEFAULT_ORDERS",
    "EscortChunkTask",
    "EscortProposal",
    "EscortSetup",
    "EscortTarget",
    "add_bound",
    "add_threshold",
    "choose_setup",
    "escort_sample",
    "escort_setups",
    "measure_escort_seconds",
]

#: Orders the automatic choice considers (those whose state array fits ``max_states``).
DEFAULT_ORDERS: tuple[int, ...] = (2, 3, 4, 5, 6, 8)
#: Relative inflation of ``ln Z`` and of ``ln(1/pi(empty))``: covers float64 rounding of the
#: forward pass (about n * 1e-16 relative), so W, s and the add threshold err upward.
INFLATE = 1e-10
#: A weight may exceed its bound by this relative slack (rounding) before the run refuses.
SUPPORT_SLACK = 1e-9
#: A run sized by precision samples the add direction (plain) only up to this many draws;
#: beyond it the deterministic bound of docs/math.md §10 certifies it (and may bind).
PLAIN_ADD_LIMIT = 10**7
#: Pilot grid of epsilons (candidates are grid points; resolution eps_max / (size - 1)).
PILOT_GRID = 2001
#: Elements (samples x steps) of one escort chunk's outputs (128 MiB of float64).
CHUNK_ELEMENTS = 1 << 24
#: The escort rate probe stops at a probe this long (seconds) or this many draws.
PROBE_SECONDS = 0.1
PROBE_DRAWS = 2048


class _Target(Protocol):
    coefficients: tuple[float, ...]

    def participation_chain(self) -> ParticipationChain: ...

    def log_ratio_at(
        self, outputs: Any, sigma: float, xp: Any, kernels: str | None = None
    ) -> Any: ...


@runtime_checkable
class EscortTarget(_Target, Protocol):
    """A loss model the escort can serve: BandMF with a b-min-sep chain (b >= bands)."""


def _target(owner: str, model: PrivacyLossModel) -> EscortTarget:
    if not isinstance(model, EscortTarget):
        raise ConfigurationError(
            f"{owner}.model = {type(model).__name__} is invalid: the escort proposal needs a "
            "loss model with participation_chain(), coefficients and log_ratio_at() (b-min-sep "
            "BandMF, including Poisson as b = 1); use proposal 'plain'"
        )
    return model


@attrs.frozen
class EscortSetup:
    """One escort ``R_lam`` at one sigma: the order and ``ln Z_lam`` (inflated)."""

    sigma: float
    order: int
    log_z: float

    def log_support(self, epsilon: float) -> float:
        """``ln s_lam(eps)``: the pointwise bound of W (and the order-lam RDP delta)."""
        return log_support_bound(self.log_z, self.order, epsilon)

    def epsilon_at(self, log_bound: float) -> float:
        """The epsilon where ``ln s_lam(eps) = log_bound`` (never below 0)."""
        lam = self.order
        top = self.log_z + (lam - 1) * math.log(lam - 1) - lam * math.log(lam) - log_bound
        return max(top / (lam - 1), 0.0)


def escort_setups(
    model: PrivacyLossModel,
    sigma: float,
    orders: Sequence[int] = DEFAULT_ORDERS,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> list[EscortSetup]:
    """The affordable orders at ``sigma`` with their ``ln Z`` (one forward pass each).

    Orders whose state array exceeds ``max_states`` or whose pass would overflow at this sigma
    are skipped; ConfigurationError when none is left.
    """
    target = _target("escort_setups", model)
    chain = target.participation_chain()
    c = np.asarray(target.coefficients, dtype=np.float64)
    out = []
    for lam in orders:
        if moments.stored_states(chain.min_sep, int(lam)) > max_states:
            continue
        try:
            log_z = moments.log_moment(chain, c, sigma, int(lam), max_states=max_states)
        except ConfigurationError:
            continue
        out.append(EscortSetup(float(sigma), int(lam), log_z + INFLATE * abs(log_z) + 1e-300))
    if not out:
        raise ConfigurationError(
            f"escort_setups.orders = {tuple(orders)!r} is invalid: no order fits max_states = "
            f"{max_states} (min_sep {chain.min_sep}) at sigma {sigma:g}; use proposal 'plain'"
        )
    return out


def choose_setup(setups: Sequence[EscortSetup], epsilon: float) -> EscortSetup:
    """The order with the smallest support bound ``s_lam(eps)`` (fewest samples needed)."""
    return min(setups, key=lambda s: s.log_support(epsilon))


def add_threshold(model: PrivacyLossModel) -> float:
    """``ln(1 / pi(empty))`` (inflated): at or above it the add direction's delta is 0."""
    chain = _target("add_threshold", model).participation_chain()
    value = -chain.log_no_participation()
    return value * (1.0 + INFLATE) if math.isfinite(value) else math.inf


def add_bound(model: PrivacyLossModel, sigma: float) -> AddDirectionBound:
    """The deterministic add-direction bound of docs/math.md §10 for the escort's model."""
    target = _target("add_bound", model)
    chain = target.participation_chain()
    norm = banded_operator_norm_upper(target.coefficients, chain.n_steps)
    return chain_add_bound(chain, norm, sigma)


@attrs.frozen
class EscortChunkTask(ChunkTask):
    """One escort run, callable on a chunk index (picklable).

    Chunk ``i`` draws its samples from ``R_lam`` with ``SeedSequence(seed, spawn_key=(stream,
    i, 0))`` and tallies ``X = W(eps) / e^log_scale`` at every ``eps`` of ``checks`` (REMOVE
    only, no histogram). ``log_scale`` must be at least ``ln s_lam(eps)`` for every check; a
    weight above it raises :class:`SupportBoundError`.
    """

    order: int = 2
    log_z: float = 0.0
    log_scale: float = 0.0
    max_states: int = moments.DEFAULT_MAX_STATES

    def describe(self) -> dict[str, Any]:
        """Plain data identifying the run (the escort's order, ln Z and scale included)."""
        return {
            **super().describe(),
            "proposal": "escort",
            "order": self.order,
            "log_z": self.log_z,
            "log_scale": self.log_scale,
        }

    def __call__(self, index: int) -> SweepTally:
        """Draw chunk ``index`` from the escort and return its tally."""
        size = self.chunk_length(index)
        target = _target("EscortChunkTask", self.model)
        chain = target.participation_chain()
        c = np.asarray(target.coefficients, dtype=np.float64)
        sigma = self.sigmas[0]
        rng = np.random.default_rng(chunk_seed(self.seed, self.stream, index, Direction.REMOVE))
        draw = sample_escort_counts(
            chain, c, sigma, self.order, size, rng, max_states=self.max_states
        )
        outputs = escort_outputs(draw.counts, c, sigma, rng)
        log_u = np.asarray(target.log_ratio_at(outputs, sigma, np), dtype=np.float64)
        if np.isnan(log_u).any():
            raise MinsepError("log_ratio_at returned NaN on escort draws")
        out = self.empty()
        tally = out.tally(0, Direction.REMOVE)
        tally.count = size
        sums, squares = np.empty(len(self.checks)), np.empty(len(self.checks))
        for j, eps in enumerate(self.checks):
            x = np.exp(log_escort_weight(log_u, self.log_z, self.order, eps) - self.log_scale)
            top = float(x.max())
            if top > 1.0 + SUPPORT_SLACK:
                raise SupportBoundError(
                    f"escort weight W = {top:.6g} x the declared support bound at epsilon "
                    f"{eps:g} (order {self.order}, chunk {index}): the bound is wrong, so "
                    "nothing is certified"
                )
            sums[j], squares[j] = float(x.sum()), float((x * x).sum())
        tally.sum_x, tally.sum_x2 = sums, squares
        return out


def escort_sample(
    model: PrivacyLossModel,
    setup: EscortSetup,
    checks: Sequence[float],
    log_scale: float,
    *,
    n_samples: int,
    seed: int,
    stream: int,
    config: EngineConfig | None = None,
    description: str = "escort",
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> SweepTally:
    """``n_samples`` escort draws tallied at ``checks`` (one checkpoint stage ``description``).

    The chunk size is ``config.chunk_size`` capped so that one chunk's outputs stay within
    :data:`CHUNK_ELEMENTS` float64s.
    """
    config = config or EngineConfig()
    n = _target("escort_sample", model).participation_chain().n_steps
    chunk = max(1, min(config.chunk_size, CHUNK_ELEMENTS // n))
    task = EscortChunkTask(
        model,
        (setup.sigma,),
        n_samples,
        seed,
        stream,
        tuple(float(e) for e in checks),
        (Direction.REMOVE,),
        chunk,
        None,
        "numpy",
        order=setup.order,
        log_z=setup.log_z,
        log_scale=float(log_scale),
        max_states=max_states,
    )
    return sample_chunks(
        task, range(task.n_chunks), config, description=description, stage=description
    )


def _mean(tallies: Sequence[SweepTally], check: int) -> tuple[float, float]:
    """Pooled mean of X at ``checks[check]`` (REMOVE) and its standard error."""
    total = sum(float(t.tally(0, Direction.REMOVE).sum_x[check]) for t in tallies)
    squares = sum(float(t.tally(0, Direction.REMOVE).sum_x2[check]) for t in tallies)
    count = sum(t.tally(0, Direction.REMOVE).count for t in tallies)
    mean = total / count
    var = max(squares / count - mean * mean, 0.0)
    return mean, math.sqrt(var / max(count - 1, 1))


@attrs.frozen
class EscortProposal:
    """Importance sampling from the escort ``R_lam`` for the remove direction.

    Attributes:
        order: the Renyi order lam, or None to choose per question (smallest support bound
            ``s_lam(eps)`` among ``orders``, eps from a pilot).
        orders: the orders the automatic choice considers.
        max_states: memory budget of the forward pass (entries of its state array).
        precision: when set, an epsilon question verifies on the fewest samples (at most
            ``samples``) that reach this relative precision once the pilot has fixed the
            support bound s*: ``min_samples(delta^(1 + r) / s*, delta / s*)`` (docs/math.md
            §7.3 in units of s*); chosen before any verification draw, so Fact 4.2 holds.
            When such a run would sample the add direction on more than
            :data:`PLAIN_ADD_LIMIT` draws or more than ``samples``, the bound of docs/math.md
            §10 certifies it instead and may then bind (the candidates are raised to its
            epsilon; the notes give the add bound).
    """

    plain = False

    order: int | None = attrs.field(default=None)
    orders: tuple[int, ...] = attrs.field(default=DEFAULT_ORDERS, converter=tuple)
    max_states: int = moments.DEFAULT_MAX_STATES
    precision: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.precision is not None:
            check_range("EscortProposal", "precision", self.precision, low=0.0, low_open=True)
        if self.order is not None:
            moments.check_order("EscortProposal", self.order)
        for lam in self.orders:
            moments.check_order("EscortProposal", lam)
        check_range("EscortProposal", "max_states", self.max_states, low=1, integer=True)

    def setups(self, model: PrivacyLossModel, sigma: float) -> list[EscortSetup]:
        """The affordable escorts at ``sigma`` (just ``order`` when it is fixed)."""
        orders = self.orders if self.order is None else (self.order,)
        return escort_setups(model, sigma, orders, self.max_states)

    def plain_add_fits(self, samples: int, delta: float, candidates: int) -> bool:
        """Whether plain add draws can verify ``delta`` with ``samples`` and, when the run is
        sized by ``precision``, reach it on at most ``min(samples, PLAIN_ADD_LIMIT)`` draws
        (a route that sized ``samples`` for the escort leaves too few for the add direction);
        where they do not, the deterministic bound of docs/math.md §10 certifies it."""
        try:
            base_delta(samples, delta, candidates=candidates)
            if self.precision is None:
                return True
            need = samples_for_precision(delta, self.precision, candidates=candidates)
        except ConfigurationError:
            return False
        return need <= min(samples, PLAIN_ADD_LIMIT)

    def unavailable(self, model: PrivacyLossModel) -> str | None:
        """Why this escort cannot serve ``model`` at any sigma (None when it may): the model
        has no participation chain, or no order's state array ``(b + 1)^lam`` fits
        ``max_states``. Sigma-dependent refusals (a pass that overflows, a support bound above
        1) are only known at a sigma: :meth:`setups`, :meth:`sweep_plan`."""
        if not isinstance(model, EscortTarget):
            return f"{type(model).__name__} has no participation chain"
        orders = self.orders if self.order is None else (self.order,)
        min_sep = model.participation_chain().min_sep
        if all(moments.stored_states(min_sep, lam) > self.max_states for lam in orders):
            return (
                f"no order of {tuple(orders)} fits max_states = {self.max_states} at min-sep "
                f"{min_sep} ((b + 1)^lam states)"
            )
        return None

    # -- epsilon -------------------------------------------------------------------------

    def certify_epsilon(
        self,
        model: PrivacyLossModel,
        sigma: float,
        delta: float,
        *,
        samples: int,
        pilot_samples: int,
        seed: int,
        config: EngineConfig | None = None,
        ladder: Sequence[float] = DEFAULT_LADDER,
    ) -> EpsilonCertificate:
        """Certify an epsilon at ``delta`` by EVR with escort draws for the remove direction.

        Pilot (stream 0) on a grid of epsilons up to the order's RDP bound; candidates at
        ``kappa_r`` times the base delta; one scale ``s* = s_lam(smallest candidate)``;
        verification (stream 1) accepts candidate r iff the mean of ``W / s*`` is at most
        ``x_b = base_delta(samples, delta / s*, R)`` (and the add direction passes).
        """
        start = time.perf_counter()
        owner = "EscortProposal.certify_epsilon"
        check_range(owner, "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_range(owner, "samples", samples, low=2, integer=True)
        check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)
        config = config or EngineConfig()
        fractions = sorted((float(k) for k in ladder), reverse=True)
        count = len(fractions)
        setups = self.setups(model, sigma)
        setup = min(setups, key=lambda s: s.epsilon_at(math.log(delta)))
        grid, means, estimate = self._pilot(model, setup, delta, pilot_samples, seed, config, "")
        best = choose_setup(setups, estimate)
        if best.order != setup.order:
            setup = best
            grid, means, estimate = self._pilot(
                model, setup, delta, pilot_samples, seed, config, " 2"
            )
        log_guess = setup.log_support(estimate)
        norm_guess = min(delta * math.exp(-log_guess), 0.5)
        x_guess = base_delta(samples, norm_guess, candidates=count)
        target = x_guess * math.exp(log_guess)
        candidates = [_first_below(grid, means, k * target) for k in fractions]
        threshold = add_threshold(model)
        bound = add_bound(model, sigma)
        add = "exact zero" if candidates[0] >= threshold else "plain"
        if add == "plain":
            add_epsilon = bound.epsilon(delta)
            # deterministic where it costs nothing (below the smallest candidate) or where
            # plain add draws do not fit (:meth:`plain_add_fits`)
            if math.isfinite(add_epsilon) and (
                add_epsilon <= candidates[0] or not self.plain_add_fits(samples, delta, count)
            ):
                add = "deterministic"
                candidates = [max(c, add_epsilon) for c in candidates]
        add_pilot = None
        add_base = math.nan
        if add == "plain":
            add_base = base_delta(samples, delta, candidates=count)
            add_pilot = sample(
                model,
                [sigma],
                n_samples=pilot_samples,
                seed=seed,
                stream=PILOT_STREAM,
                directions=(Direction.ADD,),
                config=config,
                description="pilot add",
            )
            candidates = [
                max(c, estimate_epsilon(add_pilot, k * add_base).value)
                for c, k in zip(candidates, fractions, strict=True)
            ]
        candidates = [float(x) for x in np.maximum.accumulate(candidates) if math.isfinite(x)]
        log_scale = setup.log_support(candidates[0]) if candidates else 0.0
        scale = _scale(log_scale, setup.order, candidates[0] if candidates else math.nan)
        if self.precision is not None and add != "plain":
            wanted = pilot_samples  # scale <= delta: the RDP bound alone certifies, no draws
            if scale > delta:
                norm = min(delta / scale, 0.5)
                wanted = min_samples(norm * delta**self.precision, norm, candidates=count)
            samples = max(min(samples, wanted), pilot_samples, 2)
        if scale <= delta:  # the order-lam RDP bound alone certifies every candidate
            x_b, accepted_remove, deltas = 1.0, [True] * len(candidates), [scale] * len(candidates)
        else:
            x_b = base_delta(samples, delta / scale, candidates=count)
            verify = escort_sample(
                model,
                setup,
                candidates,
                log_scale,
                n_samples=samples,
                seed=seed,
                stream=VERIFY_STREAM,
                config=config,
                description="escort verify",
                max_states=self.max_states,
            )
            observed = [_mean([verify], j)[0] for j in range(len(candidates))]
            accepted_remove = [x <= x_b for x in observed]
            deltas = [x * scale for x in observed]
        accepted_add = [True] * len(candidates)
        if add == "plain" and candidates:
            verify_add = sample(
                model,
                [sigma],
                n_samples=samples,
                seed=seed,
                stream=VERIFY_STREAM,
                checks=candidates,
                directions=(Direction.ADD,),
                histograms=False,
                config=config,
                description="verify add",
            )
            add_deltas = [verify_add.delta(0, j) for j in range(len(candidates))]
            accepted_add = [d <= add_base for d in add_deltas]
            deltas = [max(a, b) for a, b in zip(deltas, add_deltas, strict=True)]
        accepted = [
            c for c, r, a in zip(candidates, accepted_remove, accepted_add, strict=True) if r and a
        ]
        failure = 0.0 if x_b >= 1.0 else verification_failure(samples, x_b, candidates=count)
        if add == "plain":
            failure = max(failure, verification_failure(samples, add_base, candidates=count))
        reason = ""
        if not accepted:
            reason = (
                f"none of {len(candidates)} candidate epsilons passed verification with "
                f"{samples} escort samples (order {setup.order}, support bound {scale:.3g} = "
                f"{scale / delta:.3g} x delta); more samples may certify it."
            )
        return EpsilonCertificate(
            sigma=float(sigma),
            delta=float(delta),
            estimate=estimate,
            std_error=math.nan,
            certified=max(accepted[0], estimate) if accepted else math.inf,  # >= estimate
            verified=bool(accepted),
            base_delta=min(x_b * scale, 1.0),
            failure_probability=failure,
            candidates=tuple(candidates),
            candidate_deltas=tuple(float(d) for d in deltas),
            samples=samples,
            pilot_samples=pilot_samples,
            seed=seed,
            seconds=time.perf_counter() - start,
            reason=reason,
            proposal=ProposalInfo(
                "escort",
                setup.order,
                setup.log_z,
                scale,
                add,
                bound.delta(accepted[0]) if accepted and add == "deterministic" else None,
            ),
        )

    def _pilot(
        self,
        model: PrivacyLossModel,
        setup: EscortSetup,
        delta: float,
        pilot_samples: int,
        seed: int,
        config: EngineConfig,
        label: str,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Escort pilot (stream 0) on a grid of epsilons: ``(grid, delta_hat, eps_hat(delta))``.

        The grid ends where the order's RDP bound alone gives ``delta / 100`` (so every
        candidate is on it); X is normalised by ``s_lam(0)``, which bounds W on the grid.
        """
        top = setup.epsilon_at(math.log(delta / 100.0))
        grid = np.linspace(0.0, max(top, 1e-3), PILOT_GRID)
        log_scale = setup.log_support(0.0)
        tally = escort_sample(
            model,
            setup,
            grid.tolist(),
            log_scale,
            n_samples=pilot_samples,
            seed=seed,
            stream=PILOT_STREAM,
            config=config,
            description=f"escort pilot{label}",
            max_states=self.max_states,
        )
        remove = tally.tally(0, Direction.REMOVE)
        with np.errstate(divide="ignore"):
            means = np.exp(np.log(remove.sum_x / remove.count) + log_scale)
        return grid, means, _first_below(grid, means, delta)

    # -- delta ---------------------------------------------------------------------------

    def certify_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        samples: int,
        pilot_samples: int,
        seed: int,
        config: EngineConfig | None = None,
        factors: Sequence[float] = DEFAULT_FACTORS,
    ) -> DeltaCertificate:
        """Certify a delta at ``epsilon``: escort verification of ``W / s_lam(eps)``.

        Thresholds ``t_r`` (in units of ``s = s_lam(eps)``) come from the pilot as in the plain
        engine; the remove direction releases ``s * overall_delta(samples, t)`` for the smallest
        accepted ``t``, and ``s`` itself (the RDP bound, deterministic) when none passes.
        """
        start = time.perf_counter()
        owner = "EscortProposal.certify_delta"
        check_range(owner, "epsilon", epsilon, low=0.0)
        check_range(owner, "samples", samples, low=2, integer=True)
        check_range(owner, "pilot_samples", pilot_samples, low=2, integer=True)
        config = config or EngineConfig()
        eps = float(epsilon)
        setup = choose_setup(self.setups(model, sigma), eps)
        log_scale = setup.log_support(eps)
        scale = _scale(log_scale, setup.order, eps)
        common: dict[str, Any] = {"seed": seed, "config": config, "max_states": self.max_states}
        pilot = escort_sample(
            model,
            setup,
            (eps,),
            log_scale,
            n_samples=pilot_samples,
            stream=PILOT_STREAM,
            description="escort pilot",
            **common,
        )
        verify = escort_sample(
            model,
            setup,
            (eps,),
            log_scale,
            n_samples=samples,
            stream=VERIFY_STREAM,
            description="escort verify",
            **common,
        )
        remove, remove_failure, base = _released_delta([pilot], verify, samples, factors, scale)
        mean, se = _mean([pilot, verify], 0)
        add, add_failure = 0.0, 0.0
        handled = "exact zero" if eps >= add_threshold(model) else "plain"
        deterministic = add_bound(model, sigma).delta(eps) if handled == "plain" else 0.0
        if handled == "plain" and deterministic <= remove:
            handled, add = "deterministic", deterministic
        verification = _mean([verify], 0)[0] * scale
        if handled == "plain":
            tallies = [
                sample(
                    model,
                    [sigma],
                    n_samples=n,
                    seed=seed,
                    stream=stream,
                    checks=(eps,),
                    directions=(Direction.ADD,),
                    histograms=False,
                    config=config,
                    description=label,
                )
                for n, stream, label in (
                    (pilot_samples, PILOT_STREAM, "pilot add"),
                    (samples, VERIFY_STREAM, "verify add"),
                )
            ]
            add, add_failure, _ = _released_delta(tallies[:1], tallies[1], samples, factors, 1.0)
            add = min(add, deterministic)  # both are bounds; the sampled one may fail
            verification = max(verification, tallies[1].delta(0, 0))
        return DeltaCertificate(
            sigma=float(sigma),
            epsilon=eps,
            estimate=mean * scale,
            std_error=se * scale,
            certified=min(max(remove, add), 1.0),
            verified=True,
            base_delta=base,
            failure_probability=max(remove_failure, add_failure),
            thresholds=(),
            verification_delta=verification,
            samples=samples,
            pilot_samples=pilot_samples,
            seed=seed,
            seconds=time.perf_counter() - start,
            proposal=ProposalInfo(
                "escort",
                setup.order,
                setup.log_z,
                scale,
                handled,
                add if handled == "deterministic" else None,
            ),
        )

    # -- calibration ---------------------------------------------------------------------

    def calibrate_sweep(
        self,
        model: PrivacyLossModel,
        sweep: Sequence[float],
        epsilon: float,
        delta: float,
        *,
        samples: int,
        seed: int,
        config: EngineConfig | None = None,
        stream: int = VERIFY_STREAM,
    ) -> SweepCalibration:
        """Algorithm 5 with escort draws: walk the sweep, stop at the first failure.

        The sweep's entries from the first whose sigma no affordable order can run on (the
        forward pass overflows at small sigma) count as failing, as if the sweep ended there.
        One order (:meth:`sweep_order`: the smallest largest support bound over the runnable
        entries) and one scale ``s* = max_i s_lam(sigma_i, eps)`` for every entry, so
        ``E[W_i / s*] = delta_i / s*`` is non-increasing along the sweep and one Fact 4.2 event
        covers it (module docstring of :mod:`~minsep.framework.montecarlo.calibration`).
        Entries whose bound ``s_i <= delta`` pass without sampling (they form a prefix). Each
        sampled entry has its own draws (``R_lam`` depends on sigma), stage ``escort calibrate
        i``.
        """
        start = time.perf_counter()
        values = _check_sweep(sweep)
        check_range("calibrate_sweep", "epsilon", epsilon, low=0.0)
        check_range(
            "calibrate_sweep", "delta", delta, low=0.0, high=1.0, low_open=True, high_open=True
        )
        config = config or EngineConfig()
        eps = float(epsilon)
        setups, log_scale = self.sweep_plan(model, values, eps)
        order = setups[0].order
        scale = _scale(log_scale, order, eps)
        x_b = base_delta(samples, min(delta / scale, 0.5))
        handled = "exact zero" if eps >= add_threshold(model) else "plain"
        settled = [handled == "exact zero"] * len(values)
        if handled == "plain":
            settled = [add_bound(model, s).delta(eps) <= delta for s in values]
            if all(settled) or not self.plain_add_fits(samples, delta, 1):
                handled = "deterministic"  # entries the bound does not settle then fail
        add_tally = None
        add_base = math.nan
        if handled == "plain":
            add_base = base_delta(samples, delta)
            add_tally = sample(
                model,
                values,
                n_samples=samples,
                seed=seed,
                stream=stream,
                checks=(eps,),
                directions=(Direction.ADD,),
                histograms=False,
                config=config,
                description="calibrate add",
            )
        deltas: list[float] = []
        index = -1
        for i, setup in enumerate(setups):
            observed = 0.0
            passed = True
            if setup.log_support(eps) > math.log(delta):
                tally = escort_sample(
                    model,
                    setup,
                    (eps,),
                    log_scale,
                    n_samples=samples,
                    seed=seed,
                    stream=stream,
                    config=config,
                    description=f"escort calibrate {i}",
                    max_states=self.max_states,
                )
                mean = _mean([tally], 0)[0]
                observed, passed = mean * scale, mean <= x_b
            else:
                observed = math.exp(setup.log_support(eps))
            if add_tally is not None and not settled[i]:
                add_mean = add_tally.delta(i, 0)
                observed = max(observed, add_mean)
                passed = passed and add_mean <= add_base
            elif not settled[i]:  # no plain add draws: the add direction has no route here
                observed, passed = max(observed, add_bound(model, values[i]).delta(eps)), False
            deltas.append(observed)
            if not passed:
                break
            index = i
        deltas += [math.nan] * (len(values) - len(deltas))
        if index < 0:
            raise CalibrationError(
                f"Algorithm 5 (escort, order {order}): the most private sigma {values[0]:.6g} "
                f"fails verification (delta_hat {deltas[0]:.3g} at epsilon {eps:g}, support "
                f"bound {scale:.3g}); start the sweep higher, use more samples, or {FALLBACK}"
            )
        failure = verification_failure(samples, x_b)
        if add_tally is not None:
            failure = max(failure, verification_failure(samples, add_base))
        return SweepCalibration(
            sigma=values[index],
            index=index,
            sweep=values,
            deltas=tuple(deltas),
            epsilon=eps,
            delta=float(delta),
            base_delta=x_b * scale,
            failure_probability=failure,
            samples=samples,
            seed=seed,
            seconds=time.perf_counter() - start,
            proposal=ProposalInfo("escort", order, setups[-1].log_z, scale, handled),
        )

    def runnable(self, model: PrivacyLossModel, sweep: Sequence[float]) -> list[float]:
        """The leading entries of ``sweep`` (most private first) where some affordable order
        runs: a small sigma can overflow the forward pass, and that entry and every one after
        it count as failing verification, as if the sweep were shorter. ConfigurationError
        (naming the orders and the sigma) when not even the first entry can run."""
        values = [float(s) for s in sweep]
        runnable: list[float] = []
        for sigma in values:
            try:
                self.setups(model, sigma)
            except ConfigurationError:
                break
            runnable.append(sigma)
        if not runnable:
            self.setups(model, values[0])  # raises, naming the orders and the sigma
        return runnable

    def sweep_order(self, model: PrivacyLossModel, sweep: Sequence[float], epsilon: float) -> int:
        """The order minimising the largest support bound ``max_i s_lam(sigma_i, eps)`` over
        the :meth:`runnable` entries of ``sweep`` (docs/rdp-escort.md §8, calibration).

        ``Z_lam`` is non-increasing in sigma (adding independent Gaussian noise is one Markov
        kernel applied to both P and Q, so the Renyi divergence cannot grow), hence the largest
        bound of an order is its bound at the smallest runnable sigma; orders are compared
        there. The choice only affects cost, never soundness: the scale is still the maximum
        over every entry, computed for the chosen order.
        """
        return self._order_over(model, self.runnable(model, sweep), float(epsilon))

    def _order_over(self, model: PrivacyLossModel, runnable: Sequence[float], eps: float) -> int:
        """:meth:`sweep_order` over entries already known to be runnable."""
        return choose_setup(self.setups(model, min(runnable)), eps).order

    def sweep_plan(
        self, model: PrivacyLossModel, sweep: Sequence[float], epsilon: float
    ) -> tuple[list[EscortSetup], float]:
        """The escorts of a calibration sweep's :meth:`runnable` entries, one per entry at
        :meth:`sweep_order`'s order (the entries after them count as failing), and the common
        ``ln s* = max_i ln s_lam(sigma_i, eps)``; computed before any draw. ConfigurationError
        when no order runs at the first entry or ``s* > 1`` (the escort cannot beat plain
        sampling there)."""
        eps = float(epsilon)
        runnable = self.runnable(model, sweep)
        order = self._order_over(model, runnable, eps)
        setups: list[EscortSetup] = []
        for sigma in runnable:
            try:
                setups.append(escort_setups(model, sigma, (order,), self.max_states)[0])
            except ConfigurationError:
                break
        log_scale = max(s.log_support(eps) for s in setups)
        _scale(log_scale, order, eps)
        return setups, log_scale

    def locate_sigma(
        self,
        model: PrivacyLossModel,
        epsilon: float,
        target: float,
        *,
        samples: int,
        seed: int,
        config: EngineConfig | None = None,
        low: float = 2.0**-4,
        high: float = 2.0**8,
        steps: int = 14,
    ) -> float:
        """Pilot (stream 0): bisection on ``ln sigma`` for ``delta_hat_remove(eps) = target``.

        No guarantee; it only centres the sweep that :meth:`calibrate_sweep` verifies. A sigma
        too small for every affordable order counts as failing. Raises CalibrationError when
        even ``high`` fails.
        """

        def passes(sigma: float, step: int) -> bool:
            try:
                setups = self.setups(model, sigma)
            except ConfigurationError:
                return False
            setup = choose_setup(setups, float(epsilon))
            if setup.log_support(float(epsilon)) <= math.log(target):
                return True
            log_scale = setup.log_support(float(epsilon))
            tally = escort_sample(
                model,
                setup,
                (float(epsilon),),
                log_scale,
                n_samples=samples,
                seed=seed,
                stream=PILOT_STREAM,
                config=config,
                description=f"escort locate {step}",
                max_states=self.max_states,
            )
            mean = _mean([tally], 0)[0]
            return mean == 0.0 or math.log(mean) + log_scale <= math.log(target)

        if not passes(high, 0):
            raise CalibrationError(
                f"escort pilot: even sigma = {high:g} has delta_hat > {target:.3g} at epsilon "
                f"{epsilon:g}; raise sigma_high, or {FALLBACK}"
            )
        lo, hi = math.log(low), math.log(high)
        for step in range(1, steps + 1):
            mid = 0.5 * (lo + hi)
            if passes(math.exp(mid), step):
                hi = mid
            else:
                lo = mid
        return math.exp(hi)

    def estimate_delta(
        self,
        model: PrivacyLossModel,
        sigma: float,
        epsilon: float,
        *,
        samples: int,
        seed: int,
        config: EngineConfig | None = None,
        stream: int = PILOT_STREAM,
    ) -> tuple[float, float, EscortSetup]:
        """Importance-sampling estimate of ``delta_remove(eps)`` and its standard error (no
        guarantee; used to locate sigma and in the cost report)."""
        setup = choose_setup(self.setups(model, sigma), float(epsilon))
        log_scale = setup.log_support(float(epsilon))
        tally = escort_sample(
            model,
            setup,
            (float(epsilon),),
            log_scale,
            n_samples=samples,
            seed=seed,
            stream=stream,
            config=config,
            description="escort estimate",
            max_states=self.max_states,
        )
        mean, se = _mean([tally], 0)
        scale = _scale(log_scale, setup.order, float(epsilon))
        return mean * scale, se * scale, setup


def measure_escort_seconds(
    model: PrivacyLossModel, setup: EscortSetup, *, max_states: int = moments.DEFAULT_MAX_STATES
) -> tuple[float, float]:
    """``(seconds per escort sampling call, seconds per draw)`` at ``setup``: the fixed cost of
    one call (its forward pass) and the cost of each draw (the tuple law's backward walk, the
    outputs and ln u), timed in this process on its own seed (never a run's). A one-draw
    warm-up compiles the backward walk; then one draw and ``8, 32, 128, ...`` draws are timed
    until the draws beyond the first take :data:`PROBE_SECONDS` and at least the one-draw time
    (so that its jitter cannot swamp them), or :data:`PROBE_DRAWS` is reached; the time per
    draw is never taken below a quarter of the last probe's average. The escort
    engine's rates for plans, in place of the plain engine's probe."""
    quiet = EngineConfig(progress=False)

    def timed(size: int) -> float:  # CPU time of this process: robust to other load
        start = time.process_time()
        escort_sample(
            model, setup, (0.0,), setup.log_support(0.0), n_samples=size, seed=1 << 31,
            stream=0, config=quiet, description="escort rate probe", max_states=max_states,
        )  # fmt: skip
        return time.process_time() - start

    timed(1)
    fixed, size = timed(1), 8
    while True:
        seconds = timed(size)
        # the draws must outweigh the fixed cost, else its jitter swamps them
        if seconds - fixed >= max(PROBE_SECONDS, fixed) or size >= PROBE_DRAWS:
            per_draw = max(seconds - fixed, 0.0) / (size - 1)
            return fixed, max(per_draw, seconds / size / 4)
        size *= 4


def _scale(log_scale: float, order: int, epsilon: float) -> float:
    """``e^log_scale``; ConfigurationError when no order helps (the bound is above 1)."""
    if log_scale > 0.0:
        raise ConfigurationError(
            f"EscortProposal.order = {order} is invalid here: its support bound "
            f"s_lam({epsilon:.4g}) = e^{log_scale:.4g} exceeds 1, so importance sampling from "
            "the escort cannot beat plain sampling (no affordable order helps); use proposal "
            "'plain' or raise max_states"
        )
    return math.exp(log_scale)


def _first_below(grid: np.ndarray, means: np.ndarray, level: float) -> float:
    """Smallest grid epsilon whose estimate is ``<= level`` (the last point when none)."""
    hits = np.flatnonzero(means <= level)
    return float(grid[hits[0]]) if hits.size else float(grid[-1])


def _released_delta(
    pilots: Sequence[SweepTally],
    verify: SweepTally,
    samples: int,
    factors: Sequence[float],
    scale: float,
) -> tuple[float, float, float]:
    """``(released delta, failure probability, base delta)`` of one direction, in absolute
    units: the plain engine's thresholds on ``X`` (``X = W / scale``, ``scale`` the support
    bound; 1 for plain draws). Nothing accepted releases ``scale`` (a valid bound by itself).
    """
    direction = verify.directions[0]

    def stats(tallies: Sequence[SweepTally]) -> tuple[float, float]:
        t = [x.tally(0, direction) for x in tallies]
        total = sum(float(x.sum_x[0]) for x in t)
        squares = sum(float(x.sum_x2[0]) for x in t)
        count = sum(x.count for x in t)
        mean = total / count
        return mean, math.sqrt(max(squares / count - mean * mean, 0.0) / max(count - 1, 1))

    pilot_mean, pilot_se = stats(pilots)
    anchor = max(pilot_mean + 2.0 * pilot_se, 1.0 / samples)
    thresholds = sorted(min(anchor * f, 1.0) for f in factors)
    observed, _ = stats([verify])
    accepted = [t for t in thresholds if observed <= t]
    if not accepted or accepted[0] >= 1.0:
        return scale, 0.0, math.nan
    t = accepted[0]
    count = len(thresholds)
    pooled, _ = stats([*pilots, verify])
    released = max(overall_delta(samples, t, candidates=count), pooled)
    return (
        min(released, 1.0) * scale,
        verification_failure(samples, t, candidates=count),
        t * scale,
    )
