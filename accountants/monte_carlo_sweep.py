"""Algorithm 5's sweep of noise multipliers for a Monte Carlo calibration (docs/math.md §7).

The calibration pilot searches ``[sigma_low, sigma_high]`` for the sigma where the empirical
delta crosses the base delta; the sweep verified afterwards is fixed from that centre before
any verification draw, so one Fact 4.2 event covers every entry (privacy being monotone in
sigma; :mod:`minsep.framework.montecarlo.calibration`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from minsep.framework import validation as v
from minsep.framework.errors import CalibrationError, ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.montecarlo import EngineConfig, geometric_sweep
from minsep.framework.montecarlo.calibration import locate_sigma
from minsep.framework.montecarlo.plain import PLAIN
from minsep.framework.option_groups import to_record

if TYPE_CHECKING:  # pragma: no cover
    from minsep.accountants.escort_engine import EscortProposal

__all__ = [
    "END_BELOW_CENTRE",
    "PRECISION_PER_RATIO",
    "START_ABOVE_CENTRE",
    "CalibrationSweep",
    "as_sweep",
]

#: Fine entries above the pilot's centre where an escort calibration's first walk begins
#: (:meth:`CalibrationSweep.walk_start`): each entry the walk checks draws afresh, so it
#: starts just above where the pilot expects the last pass, instead of at the top. One: the
#: escort pilot's centre is the middle of its last bisection bracket (a third of a 1.01 step
#: wide in ln sigma at the default range) and its noise a fraction of a step (at n = 1024,
#: b = 8, 8 bands, q = 1/256, eps = 2, delta = 1e-3 the estimate moves 16 % per 1.01 step,
#: its relative standard error on 1,000 draws about 5 %), so the entry above the centre
#: passes but for a pilot off by more than a step, and the walk checks two or three entries.
START_ABOVE_CENTRE = 1
#: Fine entries below the pilot's centre that an escort calibration's sweep keeps
#: (:meth:`CalibrationSweep.escort_points`): its one support bound is the largest over the
#: sweep's entries, the bound at its smallest sigma, and the samples grow with it, so the sweep
#: ends just below where the pilot expects the last pass. One: the pilot's centre is within a
#: fraction of a step of its crossing (:data:`START_ABOVE_CENTRE`), and each entry less lowers
#: the bound about 14 % at n = 1024, b = 8, 8 bands, q = 1/256, eps = 2 (the samples with
#: it); a pilot off by more than a step releases the sweep's last entry (every entry from the
#: start passed), at most that much above the sigma a longer sweep would release.
END_BELOW_CENTRE = 1

#: A calibration sized by ``precision`` r verifies a sweep no finer than ``1 + r /
#: PRECISION_PER_RATIO`` per step: a step of the sweep moves the released sigma (and, about in
#: proportion, the epsilon it stands for) by at most that fraction, a tenth of what the caller
#: accepts, and each entry costs an evaluation of every verification draw (at precision 0.2,
#: the default 27 entries were 94 % of a calibration's time).
PRECISION_PER_RATIO = 10.0


def _as_tuple(values: Any) -> tuple[Any, ...]:
    # a typed converter: mypy's attrs plugin cannot solve the bare ``tuple`` converter
    return tuple(values)


def _guard_factors(instance: Any, attribute: Any, value: tuple[Any, ...]) -> None:
    ok = all(
        isinstance(g, int | float) and not isinstance(g, bool) and math.isfinite(g) and g > 1
        for g in value
    )
    if not ok or len(set(value)) != len(value):
        raise v.fail(instance, attribute.name, value, "distinct finite factors > 1")


@attrs.frozen(kw_only=True)
class CalibrationSweep:
    """Where a calibration looks for sigma and which sigmas it verifies.

    Attributes:
        sweep_ratio, sweep_size: the geometric sweep's resolution and length.
        sweep_guards: factors g > 1 of extra, coarser sweep entries above the geometric sweep
            (``top * g``), so that a pilot that placed the sweep too low still certifies a
            (larger) sigma instead of failing; verified like every entry. ``()``: none.
        sigma_low, sigma_high: the range the calibration pilot searches.
    """

    sweep_ratio: float = attrs.field(
        default=1.01, converter=v.plain_number, validator=v.number(low=1.0, high=2.0, low_open=True)
    )
    sweep_size: int = attrs.field(
        default=24, converter=v.plain_number, validator=v.integer(low=2, high=10_000)
    )
    sweep_guards: tuple[float, ...] = attrs.field(
        default=(1.2, 1.5, 3.0), converter=_as_tuple, validator=_guard_factors
    )
    sigma_low: float = attrs.field(
        default=2.0**-4, converter=v.plain_number, validator=v.positive()
    )
    sigma_high: float = attrs.field(
        default=2.0**8, converter=v.plain_number, validator=v.positive()
    )

    def __attrs_post_init__(self) -> None:
        if self.sigma_high <= self.sigma_low:
            raise v.fail(self, "sigma_high", self.sigma_high, f"> sigma_low = {self.sigma_low}")

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(options, parameter)`` pairs that must raise ConfigurationError."""
        return [
            ({"sweep_ratio": 1.0}, "sweep_ratio"),
            ({"sweep_size": 1}, "sweep_size"),
            ({"sweep_guards": (1.0,)}, "sweep_guards"),
            ({"sigma_low": 0.0}, "sigma_low"),
            ({"sigma_low": 2.0, "sigma_high": 1.0}, "sigma_high"),
        ]

    def for_precision(self, precision: float | None) -> CalibrationSweep:
        """This sweep for a calibration sized by ``precision`` (None: unchanged): the ratio
        raised to ``1 + precision / PRECISION_PER_RATIO`` where that is coarser, with the fewest
        entries spanning at least the same range below the top (``ratio**size``). A planning
        rule only: the sweep is still fixed before any verification draw."""
        if precision is None:
            return self
        ratio = 1.0 + float(precision) / PRECISION_PER_RATIO
        if ratio <= self.sweep_ratio * (1.0 + 1e-12):  # rounding of 1 + r / 5
            return self
        span = self.sweep_size * math.log(self.sweep_ratio)
        size = max(2, math.ceil(span / math.log(ratio) - 1e-9))
        return attrs.evolve(self, sweep_ratio=ratio, sweep_size=size)

    def points(self, centre: float) -> tuple[float, ...]:
        """The sweep around the pilot's ``centre``, most private first: the guard entries
        ``top * g`` (g in ``sweep_guards``, descending), then the fine geometric part
        ``top / ratio**j``, ``top = centre * ratio**(size // 3)``. Fixed before any
        verification draw, so one Fact 4.2 event still covers it (calibration module)."""
        above = max(self.sweep_size // 3, 1)
        top = centre * self.sweep_ratio**above
        guards = tuple(top * g for g in sorted(self.sweep_guards, reverse=True))
        return guards + geometric_sweep(top, self.sweep_ratio, self.sweep_size)

    def escort_points(self, centre: float) -> tuple[float, ...]:
        """:meth:`points` ending :data:`END_BELOW_CENTRE` fine entries below ``centre``: an
        escort calibration's sweep (its support bound is taken at the smallest sigma). Fixed
        before any verification draw like every sweep, so just as sound; should every entry
        from the walk's start pass, the last one is released."""
        above = max(self.sweep_size // 3, 1)
        return self.points(centre)[: len(self.sweep_guards) + above + END_BELOW_CENTRE + 1]

    def centre_entry(self, centre: float) -> float:
        """The entry of :meth:`points` standing for ``centre`` (``top / ratio**(size // 3)``:
        ``centre`` up to rounding), the very float the walk checks there, so that what the
        route computed at it (its add bound, memoised) serves the walk."""
        return self.points(centre)[len(self.sweep_guards) + max(self.sweep_size // 3, 1)]

    def walk_start(self, at_centre: bool = False) -> int:
        """The index of :meth:`points` where an escort calibration's first walk begins:
        :data:`START_ABOVE_CENTRE` fine entries above the centre, or the centre itself with
        ``at_centre`` (the guards and the entries above it are walked only if it fails;
        :func:`~minsep.framework.montecarlo.calibrate_sweep`)."""
        above = max(self.sweep_size // 3, 1)
        return len(self.sweep_guards) + max(above - (0 if at_centre else START_ABOVE_CENTRE), 0)

    def coarse_steps(self) -> int:
        """Sigmas the pilot's coarse walk tries (factors of 2 from ``sigma_high`` down)."""
        return round(math.log2(self.sigma_high / self.sigma_low)) + 1

    def centre(
        self,
        model: PrivacyLossModel,
        epsilon: float,
        delta: float,
        proposal: EscortProposal | None,
        verification_samples: int,
        *,
        samples: int,
        seed: int,
        config: EngineConfig,
    ) -> float:
        """The sweep's centre: the proposal's pilot (plain when None) at its pilot target for
        ``delta`` and ``verification_samples``, on ``samples`` pilot draws within
        ``[sigma_low, sigma_high]``."""
        target = (PLAIN if proposal is None else proposal).pilot_target(verification_samples, delta)
        return locate_sigma(
            model,
            epsilon,
            target,
            samples=samples,
            seed=seed,
            config=config,
            low=self.sigma_low,
            high=self.sigma_high,
            proposal=proposal,
        )

    def escort_centre(
        self,
        proposal: EscortProposal,
        model: PrivacyLossModel,
        epsilon: float,
        delta: float,
        verification_samples: int,
        *,
        samples: int,
        seed: int,
        config: EngineConfig,
    ) -> tuple[float | None, Exception | None]:
        """``proposal="auto"`` chose the escort for a calibration: its pilot's centre, or the
        reason it cannot run (then the caller falls back to plain sampling). The escort is
        tried at ``sigma_high``, then its pilot centres the sweep and :meth:`~minsep.
        accountants.escort_engine.EscortProposal.sweep_plan` checks an order serves every
        entry with a support bound below 1. All of this is pilot work (stream 0); no
        verification draw is spent before the route is fixed."""
        try:
            proposal.setups(model, self.sigma_high)
            centre = self.centre(
                model,
                epsilon,
                delta,
                proposal,
                verification_samples,
                samples=samples,
                seed=seed,
                config=config,
            )
            proposal.sweep_plan(model, self.escort_points(centre), float(epsilon))
        except (ConfigurationError, CalibrationError) as exc:
            return None, exc
        return centre, None


def as_sweep(value: Any) -> CalibrationSweep:
    """attrs converter of an accountant's ``sweep`` field (:func:`~minsep.framework.
    option_groups.to_record`: a record, a mapping of its options, or None)."""
    return to_record(CalibrationSweep, "MonteCarloAccountant.sweep", value)
