"""Algorithm 5 on escort draws: the escort's sweep plan (docs/rdp-escort.md §8, calibration).

The walk itself is the engine's (:func:`~minsep.framework.montecarlo.calibration.
calibrate_sweep`); this plan says, per sweep entry, its observed delta and whether it passed:
escort draws of ``W / s*`` on the entry's own escort (one order and one scale ``s*`` for the
whole sweep, so one Fact 4.2 event covers it), or the order-lam bound alone where ``s_i <=
delta``, and the add direction by route ``"exact zero"``, the §10 bound per entry, plain add
draws where they fit (:class:`AddDraws`: on their own sample count, drawn a few entries at a
time as the walk reaches them), else (route ``"block bound"``) per entry the §10 bound or the
sampled block bound of docs/math.md §10.1 at that sigma, computed when the walk reaches the
entry; an entry no route settles fails.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import attrs

from minsep.accountants.escort_add import add_bound, add_threshold, chosen_add_bound
from minsep.accountants.escort_sampling import EscortSampler
from minsep.accountants.escort_setup import (
    EscortSetup,
    escort_base_delta,
    escort_setups,
    support_scale,
)
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.montecarlo.bounds import base_delta, verification_failure
from minsep.framework.montecarlo.certificates import ProposalInfo
from minsep.framework.montecarlo.plain import sweep_tally
from minsep.framework.montecarlo.proposals import SweepQuestion
from minsep.framework.montecarlo.sampling import EngineConfig
from minsep.framework.montecarlo.sweeps import FALLBACK

__all__ = [
    "ADD_BATCH",
    "ADD_EVERY",
    "ADD_FIRST_SAMPLES",
    "AddDraws",
    "DeferredAdd",
    "EscortSweep",
    "SweepEscorts",
    "escort_sweep",
]

#: Sweep entries whose plain add draws one sampling call evaluates (:class:`AddDraws`): a walk
#: from its start (an entry above the pilot's centre) to its first failure checks three to
#: five entries, and every call draws afresh (each entry evaluated costs about 0.6 draws), so
#: about one call's worth, not the whole sweep.
ADD_BATCH = 6
#: :class:`DeferredAdd`: where a bound settles the add direction, a walk checks it at every
#: second entry whose remove direction passed (and at the entry it releases): a walk starts
#: one entry above the pilot's centre (:data:`~.monte_carlo_sweep.START_ABOVE_CENTRE`), so
#: its first check falls at the centre, where the route already computed the bound
#: (memoised), and a walk that goes on below the centre (the add bound binding there) stops
#: within two entries instead of walking the sweep's remove direction to its end.
ADD_EVERY = 2
#: Escort draws per entry from which an entry's add-direction bound (§10, §10.1: seconds) is
#: checked before its escort draws at every entry no add certificate covers (not only where
#: :class:`DeferredAdd` says): where the bound binds (docs/rdp-escort.md §8) the entries
#: below its sigma fail on it, and their draws would be wasted.
ADD_FIRST_SAMPLES = 200_000


@attrs.frozen
class SweepEscorts:
    """The escorts of a calibration sweep (:meth:`~.escort_engine.EscortProposal.sweep_plan`):
    the runnable entries' sigmas (most private first), the escort at the smallest of them
    (its order serves every entry) and the common ``ln s*``, that escort's bound.

    ``Z_lam`` is non-increasing in sigma (docs/rdp-escort.md §8), so ``s*`` is the largest
    bound over the runnable entries; an entry's own escort is computed only when the walk
    reaches it (the forward pass of ``ln Z`` is the costly part), and an entry whose computed
    bound exceeded ``s*`` (rounding only) or whose pass cannot run would fail, never sample
    past the scale."""

    model: PrivacyLossModel
    sigmas: tuple[float, ...]
    smallest: EscortSetup
    log_scale: float
    max_states: int

    @property
    def order(self) -> int:
        return self.smallest.order

    def setup(self, index: int, epsilon: float) -> EscortSetup | None:
        """Entry ``index``'s escort at :attr:`order` (None: past the runnable entries, its
        pass cannot run, or its bound at ``epsilon`` is above ``s*``)."""
        if index >= len(self.sigmas):
            return None
        try:
            setup = escort_setups(self.model, self.sigmas[index], (self.order,), self.max_states)
        except ConfigurationError:
            return None
        return setup[0] if setup[0].log_support(epsilon) <= self.log_scale else None


@attrs.define
class AddDraws:
    """Plain draws of the add direction for an escort sweep's entries, on ``samples`` draws
    (stage ``calibrate add i``), evaluated only where the walk asks: at entry ``i`` not yet
    drawn, one sampling call covers ``i`` and the next unsettled entries not yet drawn (at
    most :data:`ADD_BATCH`).

    Soundness (docs/rdp-escort.md §8, calibration; docs/math.md §7): bad entries for the add
    direction (true delta above ``tau x_b``) form a suffix of the sweep, and a walk releases
    one only if it accepted the *first* bad entry at or after its start, a Fact 4.2 event on
    that entry's own draws whatever the draws of the other entries (as for the escort, whose
    every entry draws afresh). So drawing the entries in separate calls, each entry's delta
    being fixed by its own call's draws, leaves the one event per walk, and the entries the
    walk never reaches need no draw."""

    model: PrivacyLossModel
    sweep: tuple[float, ...]
    epsilon: float
    settled: Callable[[int], bool]
    samples: int
    seed: int
    stream: int
    config: EngineConfig
    deltas: dict[int, float] = attrs.field(factory=dict)

    def delta(self, index: int) -> float:
        """The add direction's ``delta_hat`` at entry ``index`` (drawing its batch if new)."""
        if index not in self.deltas:
            batch = [index]
            for j in range(index + 1, len(self.sweep)):
                if len(batch) >= ADD_BATCH or j in self.deltas:
                    break
                if not self.settled(j):
                    batch.append(j)
            tally = sweep_tally(
                self.model, [self.sweep[j] for j in batch], self.epsilon,
                samples=self.samples, seed=self.seed, stream=self.stream, config=self.config,
                description=f"calibrate add {index}", directions=(Direction.ADD,),
            )  # fmt: skip
            for k, j in enumerate(batch):
                self.deltas[j] = tally.delta(k, 0)
        return self.deltas[index]


@attrs.define
class DeferredAdd:
    """When an escort walk checks the add direction where a bound settles it (routes
    ``"deterministic"`` and ``"block bound"``): at every :data:`ADD_EVERY`-th entry whose remove
    direction passed since the last check of the walk, and (:meth:`EscortSweep.settle`) at the
    entry the walk would release. ``certified``: the largest index (smallest sigma) where a
    bound certified ``delta_add(eps) <= delta``; it certifies every entry at or above it, the
    true ``delta_add`` being non-increasing in sigma (docs/math.md §7, "deferred add
    checks"). A planning rule for the cost (the §10.1 block bound takes seconds per sigma);
    where the checks fall never changes what a released entry has certified."""

    certified: int = -1
    passes: int = 0
    previous: int = -1

    def due(self, index: int) -> bool:
        """Whether entry ``index`` (its remove direction passed) has its add direction checked
        now: not where a certificate covers it; else at every ``ADD_EVERY``-th such entry of
        the walk (an index not above the previous one begins a new walk)."""
        if index <= self.previous:
            self.passes = 0
        self.previous = index
        if index <= self.certified:
            return False
        self.passes += 1
        if self.passes < ADD_EVERY:
            return False
        self.passes = 0
        return True

    def certify(self, index: int) -> None:
        """A bound certified the add direction at entry ``index`` (and so above it)."""
        self.certified = max(self.certified, index)


def _settled(
    model: PrivacyLossModel,
    sweep: tuple[float, ...],
    epsilon: float,
    delta: float,
    given: Sequence[bool | None],
    known: dict[int, bool],
    index: int,
) -> bool:
    """``given[index]``, else whether the §10 bound at ``sweep[index]`` has ``delta_add(eps)
    <= delta`` (kept in ``known``)."""
    value = given[index]
    if value is not None:
        return value
    if index not in known:
        known[index] = add_bound(model, sweep[index]).delta(epsilon) <= delta
    return known[index]


def escort_sweep(
    model: PrivacyLossModel,
    question: SweepQuestion,
    escorts: SweepEscorts,
    add_fits: bool,
    add_samples: int | None = None,
) -> EscortSweep:
    """The plan of an escort sweep whose runnable entries have ``escorts`` (one order, the
    common scale ``ln s* = escorts.log_scale``); ``add_fits``: plain add draws can verify ``delta``
    with ``add_samples`` (None: the question's samples; else entries the §10 bound does not
    settle fail). Plain add draws, when the route needs them, are drawn as the walk reaches
    the entries (:class:`AddDraws`); escort draws entry by entry in
    :meth:`EscortSweep.check`."""
    sweep, eps, delta = question.sweep, float(question.epsilon), question.delta
    samples, seed, stream = question.samples, question.seed, question.stream
    config = question.config or EngineConfig()
    order, log_scale = escorts.order, escorts.log_scale
    scale = support_scale(log_scale, order, eps)
    walks = question.walks  # claims sharing the failure budget (docs/math.md §7)
    x_b = escort_base_delta(samples, min(delta / scale, 0.5), delta, scale, candidates=walks)
    handled = "exact zero" if eps >= add_threshold(model) else "plain"
    # §10 per entry when the walk reaches it (None: not computed yet); the label alone is read
    # at the smallest sigma (where it is loosest): an entry §10 does not settle under
    # "deterministic" is checked by §10 again and fails (EscortSweep.check), so the label
    # moves only the cost, never what passes
    settled: list[bool | None] = [True if handled == "exact zero" else None] * len(sweep)
    if handled == "plain":
        settled[-1] = add_bound(model, sweep[-1]).delta(eps) <= delta
        if settled[-1]:
            handled = "deterministic"
        elif not add_fits:
            handled = "block bound"  # per entry when walked: §10, else §10.1, else it fails
    add_draws = None
    add_base = math.nan
    failure = verification_failure(samples, x_b, candidates=walks)
    known: dict[int, bool] = {}
    if handled == "plain":
        m_add = samples if add_samples is None else int(add_samples)
        add_base = base_delta(m_add, delta, candidates=walks)
        lazy = functools.partial(_settled, model, tuple(sweep), eps, float(delta), settled, known)
        add_draws = AddDraws(model, tuple(sweep), eps, lazy, m_add, seed, stream, config)
        failure = max(failure, verification_failure(m_add, add_base, candidates=walks))
    return EscortSweep(
        model=model,
        sweep=sweep,
        epsilon=eps,
        delta=float(delta),
        escorts=escorts,
        x_b=x_b,
        settled=tuple(settled),
        known=known,
        add_draws=add_draws,
        add_base=add_base,
        samples=samples,
        seed=seed,
        stream=stream,
        config=config,
        base_delta=x_b * scale,
        failure_probability=failure,
        info=ProposalInfo("escort", order, escorts.smallest.log_z, scale, handled),
        deferred=DeferredAdd() if handled in ("deterministic", "block bound") else None,
    )


@attrs.frozen
class EscortSweep:
    """Algorithm 5 on escort draws, entry by entry (:meth:`EscortProposal.plan_sweep`)."""

    model: PrivacyLossModel
    sweep: tuple[float, ...]
    epsilon: float
    delta: float
    escorts: SweepEscorts
    x_b: float
    settled: tuple[bool | None, ...]
    add_draws: AddDraws | None
    add_base: float
    samples: int
    seed: int
    stream: int
    config: EngineConfig
    base_delta: float
    failure_probability: float
    info: ProposalInfo
    known: dict[int, bool] = attrs.field(factory=dict)
    deferred: DeferredAdd | None = None

    def is_settled(self, index: int) -> bool:
        """Whether the §10 bound settles entry ``index`` (computed once, when first asked)."""
        return _settled(
            self.model, self.sweep, self.epsilon, self.delta, self.settled, self.known, index
        )

    def check(self, index: int) -> tuple[float, bool]:
        """Entry ``index``: escort draws of ``W / s*`` (none when its bound ``s_i <= delta``)
        and the add direction's route (its checks only where the remove direction passed: the
        observed delta of a failing entry may then be the remove direction's alone); an entry
        past the runnable ones fails (NaN). Where a bound settles the add direction
        (:attr:`deferred`) it is checked only as :class:`DeferredAdd` says, and
        :meth:`settle` confirms the entry a walk releases. From :data:`ADD_FIRST_SAMPLES`
        escort draws per entry the add bound (seconds) runs first at entries no certificate
        covers, so an entry failing on it spends no escort draws."""
        if self._add_first(index):
            add_delta, ok = self._add_at(index)
            if not ok:
                return add_delta, False
        observed, passed = self._remove(index)
        if not passed:  # a failing entry fails whatever its add direction
            return observed, False
        if self.deferred is not None:
            if not self.deferred.due(index):
                return observed, True
            add_delta, passed = self._add_at(index)
            return max(observed, add_delta), passed
        if self.is_settled(index):
            return observed, True
        if self.add_draws is not None:  # plain add draws: checked at every entry walked
            add_mean = self.add_draws.delta(index)
            return max(observed, add_mean), add_mean <= self.add_base
        add_delta = self._bounded_add_delta(index)  # no plain add draws: §10 and §10.1
        return max(observed, add_delta), add_delta <= self.delta

    def _add_first(self, index: int) -> bool:
        """Whether entry ``index``'s add bound runs before its escort draws: a bound settles
        the add direction, no certificate covers the entry, it is runnable, and its escort
        draws number :data:`ADD_FIRST_SAMPLES` or more (a planning rule: an entry passes
        only where both directions do, whatever the order)."""
        deferred = self.deferred
        return (
            deferred is not None
            and self.samples >= ADD_FIRST_SAMPLES
            and deferred.certified < index < len(self.escorts.sigmas)
        )

    def _remove(self, index: int) -> tuple[float, bool]:
        """The remove direction at entry ``index``: escort draws of ``W / s*`` against
        ``x_b`` (none when its bound ``s_i <= delta``: it passes); NaN and failing past the
        runnable entries."""
        eps = self.epsilon
        setup = self.escorts.setup(index, eps)
        if setup is None:
            return math.nan, False
        bounded = None
        add_first = self.add_draws is None and self.samples >= ADD_FIRST_SAMPLES
        if add_first and not self.is_settled(index):
            bounded = self._bounded_add_delta(index)
            if bounded > self.delta:
                return bounded, False
        observed, passed = 0.0, True
        if setup.log_support(eps) > math.log(self.delta):
            escorts = self.escorts
            sampler = EscortSampler(
                self.model, setup, escorts.log_scale, self.config, escorts.max_states
            )
            tally = sampler.tally(
                (eps,), n_samples=self.samples, seed=self.seed, stream=self.stream,
                description=f"escort calibrate {index}",
            )  # fmt: skip
            mean = tally.delta(0, 0)
            observed, passed = mean * sampler.support, mean <= self.x_b
        else:
            observed = math.exp(setup.log_support(eps))
        return observed, passed

    def settle(self, passed: Sequence[int], observed: dict[int, float]) -> int:
        """The entry a walk releases, among those whose checks ``passed`` (in walk order):
        the last, once the add direction is certified there; where a bound settles the add
        direction (:attr:`deferred`) and it was not yet checked at that entry, it is checked
        there, and should it fail, the walk's entries between the last certified one and it
        are checked in order down to the first failure (-1: none certified). Sound
        (docs/math.md §7, "deferred add checks"): the released entry passed the walk's remove
        checks and its add direction is certified at it or at a smaller sigma."""
        if not passed:
            return -1
        state = self.deferred
        last = passed[-1]
        if state is None or last <= state.certified:
            return last
        add_delta, ok = self._add_at(last)
        observed[last] = max(observed[last], add_delta)
        if ok:
            return last
        released = max((i for i in passed if i <= state.certified), default=-1)
        for index in passed[:-1]:
            if index <= state.certified:
                continue
            add_delta, ok = self._add_at(index)
            observed[index] = max(observed[index], add_delta)
            if not ok:
                break
            released = index
        return released

    def _add_at(self, index: int) -> tuple[float, bool]:
        """The add direction's delta at entry ``index`` by its bounds (none: 0 when §10 settles
        it) and whether it is at most delta; a certificate is kept in :attr:`deferred`."""
        if self.is_settled(index):
            add_delta, ok = 0.0, True
        else:
            add_delta = self._bounded_add_delta(index)
            ok = add_delta <= self.delta
        if ok and self.deferred is not None:
            self.deferred.certify(index)
        return add_delta, ok

    def _bounded_add_delta(self, index: int) -> float:
        """The add direction's delta at entry ``index`` by §10, else §10.1 where it is smaller
        (:func:`~.escort_add.chosen_add_bound`, from this sweep's seed), when the route is
        ``"block bound"``; the §10 bound alone otherwise. Which entry is released depends on
        the entries' block bounds, so each carries the failure budget of every entry of the
        sweep (a union bound: ``len(sweep)`` times its own, docs/math.md §10.1)."""
        sigma, eps = self.sweep[index], self.epsilon
        if self.info.add != "block bound":
            return add_bound(self.model, sigma).delta(eps)
        _, bound = chosen_add_bound(self.model, sigma, self.delta, self.seed, eps)
        return min(bound.delta(eps) + (len(self.sweep) - 1) * bound.failure, 1.0)

    def unchecked(self, index: int) -> float:
        return math.nan

    def refusal(self, deltas: Sequence[float]) -> str:
        return (
            f"Algorithm 5 (escort, order {self.escorts.order}): the most private sigma "
            f"{self.sweep[0]:.6g} fails verification (delta_hat {deltas[0]:.3g} at epsilon "
            f"{self.epsilon:g}, support bound {math.exp(self.escorts.log_scale):.3g}); start "
            f"the sweep higher, use more samples, or {FALLBACK}"
        )
