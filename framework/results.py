"""Typed, JSON-serialisable results of accounting questions.

Every result states how it was obtained: ``method`` is ``"exact"`` (PLD, closed form),
``"upper bound"`` (a PLD of a dominating event) or ``"monte_carlo"``; Monte Carlo results
carry the failure probability of their certified bound and one
:class:`~minsep.framework.evidence.MonteCarloEvidence` (``monte_carlo``: samples, seed,
chunk size, kernel set, verification evidence). ``to_json`` / ``Result.from_json``
round-trip exactly; the dict form carries its ``format`` version (:data:`RESULT_FORMAT`), and
results of format 1 (the Monte Carlo fields flat) still read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs

from minsep.framework import validation as v
from minsep.framework.errors import ConfigurationError
from minsep.framework.evidence import MonteCarloEvidence, MonteCarloView
from minsep.framework.result_format import RESULT_FORMAT, upgrade

if TYPE_CHECKING:
    from minsep.framework.compose import CertifiedPLD

R = TypeVar("R", bound="Result")

#: ``method`` of a deterministic result that is the exact value (to the PLD grid's rounding,
#: upwards).
EXACT = "exact"
#: ``method`` of a deterministic result computed on a dominating event: a proven upper bound
#: that is not the scheme's exact value (e.g. the fixed-partition PLD of random-phase cyclic
#: Poisson).
UPPER_BOUND = "upper bound"

#: A number >= 0 that may be +inf (an uncertified bound), never NaN.
_EXTENDED = v.number(low=0.0, infinite=True)
#: A probability in [0, 1].
_UNIT = v.number(low=0.0, high=1.0)
#: A target delta in (0, 1).
_TARGET_DELTA = v.number(low=0.0, high=1.0, low_open=True, high_open=True)
#: A noise multiplier > 0 (+inf allowed: no finite sigma certified).
_SIGMA = v.number(low=0.0, low_open=True, infinite=True)


def _number(default: Any = attrs.NOTHING, validator: v.Validator = _EXTENDED) -> Any:
    """A float field: numpy scalars become Python numbers, then ``validator`` checks."""
    return attrs.field(default=default, converter=v.plain_number, validator=validator)


def _optional(validator: v.Validator) -> Any:
    return attrs.field(default=None, converter=v.plain_number, validator=v.optional(validator))


def _mapping(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise v.fail(instance, attribute.name, value, "a dict of public parameters")


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        return (values,)
    try:
        return tuple(str(value) for value in values)
    except TypeError:
        raise ConfigurationError(
            f"Result.notes = {values!r} is invalid: must be a sequence of strings",
            parameter="notes",
        ) from None


def _floats(values: Any) -> tuple[float, ...]:
    try:
        items: list[Any] = list(values)
    except TypeError:
        items = [values]
    for value in items:
        v.check_range("CalibrationResult", "candidates", value, low=0.0, low_open=True)
    return tuple(float(value) for value in items)


_KINDS: dict[str, type[Result]] = {}


def _evidence(value: Any) -> MonteCarloEvidence | None:
    """Converter of ``monte_carlo``: None, a record, or the dict of one."""
    if value is None or isinstance(value, MonteCarloEvidence):
        return value
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"Result.monte_carlo = {_clip(value)} is invalid: must be a MonteCarloEvidence, a "
            "dict of its fields or None",
            parameter="monte_carlo",
        )
    v.check_keywords(MonteCarloEvidence, value, owner="MonteCarloEvidence")
    return MonteCarloEvidence(**value)


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _encode(value.item())
    return value


def _decode(value: Any, name: str = "data") -> Any:
    if isinstance(value, dict):
        if set(value) == {"__float__"}:
            return _tagged_float(value["__float__"], name)
        return {k: _decode(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, name) for v in value]
    return value


def _tagged_float(text: Any, name: str) -> float:
    """The float of a ``{"__float__": text}`` tag (written by :func:`_encode` for inf/nan)."""
    try:
        return float(text) if isinstance(text, str) else float("")
    except ValueError:
        raise ConfigurationError(
            f"Result.{name} = {{'__float__': {_clip(text)}}} is invalid: the tag must hold the "
            "text of a float ('inf', '-inf' or 'nan')",
            parameter=name,
        ) from None


@attrs.frozen(kw_only=True)
class Result(MonteCarloView):
    """Base of all results: provenance shared by every answer, and for Monte Carlo answers
    the :class:`~minsep.framework.evidence.MonteCarloEvidence` they rest on (its fields read
    as ``result.samples``, ``result.seed``, ... through :class:`MonteCarloView`)."""

    kind: ClassVar[str] = "result"

    accountant: str = attrs.field(validator=v.text())
    method: str = attrs.field(validator=v.text())  # "exact" | "monte_carlo" | "gaussian"
    scheme: dict[str, Any] = attrs.field(factory=dict, validator=_mapping)
    strategy: dict[str, Any] = attrs.field(factory=dict, validator=_mapping)
    seconds: float = _number(0.0, v.number(low=0.0))
    notes: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # the quick deterministic bound printed before a long run (framework/cli/first_answer.py):
    # quantity, value, accountant, method, bounds; None when none was computed
    first_answer: dict[str, Any] | None = attrs.field(default=None, validator=v.optional(_mapping))
    #: package versions and git commit of the run that answered (``minsep.framework.
    #: environment``); set by the accountants' public methods, None in older results.
    environment: dict[str, str] | None = attrs.field(
        default=None, validator=v.optional(_mapping), eq=False
    )
    #: the draws and the verification evidence of a Monte Carlo answer; None otherwise
    monte_carlo: MonteCarloEvidence | None = attrs.field(default=None, converter=_evidence)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form with ``kind`` and ``format`` (:data:`RESULT_FORMAT`) tags."""
        data = attrs.asdict(self, recurse=True)
        data["monte_carlo"] = data.pop("monte_carlo")  # after the answer's own figures
        return {"kind": self.kind, "format": RESULT_FORMAT, **_encode(data)}

    def to_json(self, **kwargs: Any) -> str:
        """JSON text; non-finite floats are tagged so they survive the round trip."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls: type[R], data: Any) -> R:
        """Rebuild the result class named by ``data['kind']``, validated like a constructed
        one; called on a subclass (``EpsilonResult.from_dict``), the kind must be that class.

        Raises ConfigurationError for anything malformed: not a mapping, an unknown or wrong
        kind, unknown or missing fields, values out of range, or numbers that contradict each
        other (a certified bound its own samples and evidence do not support:
        :mod:`~minsep.framework.montecarlo.trust`).
        """
        if not isinstance(data, dict):
            raise ConfigurationError(
                f"{cls.__name__}.from_dict data = {_clip(data)} is invalid: must be a JSON "
                "object (a dict) with a 'kind' field",
                parameter="data",
            )
        data = upgrade(dict(_decode(data)))
        kind = data.pop("kind", None)
        found = _KINDS.get(str(kind))
        if found is None or not issubclass(found, cls):
            allowed = sorted(k for k, c in _KINDS.items() if issubclass(c, cls))
            raise ConfigurationError(
                f"{cls.__name__}.kind = {kind!r} is invalid: must be one of {allowed}",
                parameter="kind",
            )
        v.check_keywords(found, data, owner=found.__name__)
        result = found(**data)
        from minsep.framework.montecarlo import trust  # lazy: results load before the engine

        trust.check(result)
        return result

    @classmethod
    def from_json(cls: type[R], text: str) -> R:
        """Inverse of :meth:`to_json` (ConfigurationError for text that is not a result)."""
        if not isinstance(text, str | bytes | bytearray):
            raise ConfigurationError(
                f"{cls.__name__}.from_json text = {_clip(text)} is invalid: must be JSON text",
                parameter="text",
            )
        try:
            data = json.loads(text)
        except ValueError as exc:  # JSONDecodeError and bad encodings
            raise ConfigurationError(
                f"{cls.__name__}.from_json text = {_clip(text)} is invalid: not JSON ({exc})",
                parameter="text",
            ) from None
        return cls.from_dict(data)


def _clip(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@attrs.frozen(kw_only=True)
class EpsilonResult(Result):
    """epsilon at a target delta and noise multiplier.

    ``epsilon`` is the point estimate (exact for exact methods). ``certified_epsilon`` is an
    upper bound that holds except with probability ``failure_probability`` (0 for exact
    methods); report it, not the estimate, as the privacy guarantee.
    """

    kind: ClassVar[str] = "epsilon"

    epsilon: float = _number()
    certified_epsilon: float = _number()
    delta: float = _number(validator=_TARGET_DELTA)
    sigma: float = _number(validator=_SIGMA)
    failure_probability: float = _number(0.0, _UNIT)

    def __attrs_post_init__(self) -> None:
        _certified_not_below(self, "certified_epsilon", self.certified_epsilon, self.epsilon)


@attrs.frozen(kw_only=True)
class DeltaResult(Result):
    """delta at a target epsilon and noise multiplier (max over both directions).

    ``certified_delta`` holds except with probability ``failure_probability``.
    """

    kind: ClassVar[str] = "delta"

    delta: float = _number(validator=_UNIT)
    certified_delta: float = _number(validator=_UNIT)
    epsilon: float = _number()
    sigma: float = _number(validator=_SIGMA)
    failure_probability: float = _number(0.0, _UNIT)

    def __attrs_post_init__(self) -> None:
        _certified_not_below(self, "certified_delta", self.certified_delta, self.delta)


def _certified_not_below(
    result: EpsilonResult | DeltaResult, name: str, certified: float, estimate: float
) -> None:
    """Refuse a deterministic bound below its own estimate.

    With ``failure_probability == 0`` (exact, RDP and unamplified methods) the certified value
    *is* the computed bound and equals the estimate, so a smaller one is a corrupted result.
    Monte Carlo certificates are not checked: the estimate and the certificate come from
    different samples (pilot candidates, then verification), and only the certificate carries
    the guarantee (docs/math.md §7).
    """
    if result.failure_probability == 0.0 and certified < estimate:
        raise ConfigurationError(
            f"{type(result).__name__}.{name} = {certified!r} is invalid: must be >= the "
            f"estimate {estimate!r} when failure_probability is 0 (a deterministic bound)",
            parameter=name,
        )


@attrs.frozen(kw_only=True)
class CalibrationResult(Result):
    """The smallest certified noise multiplier for a target (epsilon, delta).

    ``sigma`` is conservative: the run is (epsilon, delta)-DP at ``sigma`` (for Monte Carlo:
    except with ``failure_probability``, already folded into ``delta`` by Algorithm 5).
    ``candidates`` lists the sigma values examined, most private first.
    ``sigma_estimate`` (Monte Carlo) is the sigma the point estimate alone would select: the
    smallest sweep entry down to which the empirical delta stays <= ``delta`` itself (not the
    base delta) on the verification draws. It carries no guarantee; ``[sigma_estimate,
    sigma]`` is what verifying with ``samples`` draws at ``base_delta`` costs, and it narrows
    as ``samples`` grows. None for exact accountants (their sigma has no sampling error).
    """

    kind: ClassVar[str] = "calibration"

    sigma: float = _number(validator=_SIGMA)
    epsilon: float = _number()
    delta: float = _number(validator=_TARGET_DELTA)
    certified: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    candidates: tuple[float, ...] = attrs.field(default=(), converter=_floats)
    failure_probability: float = _number(0.0, _UNIT)


def _grid(name: str, values: Any, high: float) -> tuple[float, ...]:
    """``values`` as a tuple of finite numbers in [0, high], refused by ``name`` otherwise."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ConfigurationError(
            f"CurveResult.{name} = {_clip(values)} is invalid: must be a sequence of numbers "
            f"in [0, {high:g}]",
            parameter=name,
        )
    return tuple(
        float(v.check_range("CurveResult", name, item, low=0.0, high=high)) for item in values
    )


def _epsilons(values: Any) -> tuple[float, ...]:
    return _grid("epsilons", values, math.inf)


def _deltas(values: Any) -> tuple[float, ...]:
    return _grid("delta", values, 1.0)


def _certified_deltas(values: Any) -> tuple[float, ...]:
    return _grid("certified_delta", values, 1.0)


def _target_deltas(values: Any) -> tuple[float, ...]:
    deltas = _grid("target_deltas", values, 1.0)
    if any(d <= 0 for d in deltas):
        raise ConfigurationError(
            f"CurveResult.target_deltas = {deltas!r} is invalid: must be in (0, 1]",
            parameter="target_deltas",
        )
    return deltas


def _certified_epsilons(values: Any) -> tuple[float, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise ConfigurationError(
            f"CurveResult.certified_epsilons = {_clip(values)} is invalid: must be a sequence "
            "of numbers >= 0 (inf allowed)",
            parameter="certified_epsilons",
        )
    return tuple(
        float(v.check_range("CurveResult", "certified_epsilons", item, low=0.0, infinite=True))
        for item in values
    )


def _paired(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if len(value) != len(instance.target_deltas):
        raise v.fail(instance, attribute.name, value, "one epsilon per target delta")


def _curve_values(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if len(value) != len(instance.epsilons):
        raise v.fail(instance, attribute.name, value, "one value per epsilon of the grid")


def _epsilon_grid(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    from minsep.framework.compose import check_epsilon_grid

    check_epsilon_grid(type(instance).__name__, value)


@attrs.frozen(kw_only=True)
class CurveResult(Result):
    """delta(eps) on a grid of epsilons at one noise multiplier (max over both directions).

    ``certified_delta[g]`` bounds ``delta(epsilons[g])`` for every g **together**, except
    with probability ``failure_probability`` (0 for exact and proven routes); ``delta`` is
    the estimate (equal for exact routes). The failure probability is not folded in: a
    guarantee read off the curve is ``(eps, certified_delta + failure_probability)``, which
    :meth:`guarantee` and :meth:`certified_pld` do (docs/math.md §7.1).
    """

    kind: ClassVar[str] = "curve"

    epsilons: tuple[float, ...] = attrs.field(converter=_epsilons, validator=_epsilon_grid)
    delta: tuple[float, ...] = attrs.field(converter=_deltas, validator=_curve_values)
    certified_delta: tuple[float, ...] = attrs.field(
        converter=_certified_deltas, validator=_curve_values
    )
    sigma: float = _number(validator=_SIGMA)
    failure_probability: float = _number(0.0, _UNIT)
    #: The epsilon(delta) view (:meth:`with_epsilons`): target deltas and the certified
    #: epsilon at each, failure probability included (inf where none is certified).
    target_deltas: tuple[float, ...] = attrs.field(default=(), converter=_target_deltas)
    certified_epsilons: tuple[float, ...] = attrs.field(
        default=(), converter=_certified_epsilons, validator=_paired
    )

    def certified_epsilon(self, delta: float) -> float:
        """The smallest epsilon this curve certifies at ``delta``, failure probability
        included: that of the curve's dominating pair (docs/math.md §7.1) at ``delta`` minus
        the failure probability (so between grid points too); inf when none."""
        from minsep.framework.compose import dominating_pair

        v.check_range(
            "CurveResult.certified_epsilon", "delta", delta, low=0.0, high=1.0, low_open=True
        )
        rest = delta - self.failure_probability
        if rest <= 0:
            return math.inf
        return dominating_pair(self.epsilons, self.certified_delta).epsilon(rest)

    def with_epsilons(self, deltas: Iterable[float]) -> CurveResult:
        """This result with the certified epsilon at each of ``deltas`` filled in."""
        targets = _target_deltas(deltas)
        return attrs.evolve(
            self,
            target_deltas=targets,
            certified_epsilons=tuple(self.certified_epsilon(d) for d in targets),
        )

    def guarantee(self, epsilon: float) -> float:
        """The delta this curve certifies at ``epsilon``: the certified delta of the largest
        grid point ``<= epsilon`` (delta is non-increasing) plus the failure probability;
        1 below the grid."""
        v.check_range("CurveResult.guarantee", "epsilon", epsilon, low=0.0)
        below = [
            d for e, d in zip(self.epsilons, self.certified_delta, strict=True) if e <= epsilon
        ]
        return min(min(below, default=1.0) + self.failure_probability, 1.0)

    def certified_pld(self, value_discretization_interval: float | None = None) -> CertifiedPLD:
        """The curve as a pessimistic dp_accounting PLD with its failure probability, ready to
        compose with other releases (docs/math.md §7.1)."""
        from minsep.framework.compose import DEFAULT_INTERVAL, CertifiedPLD, dominating_pair

        pair = dominating_pair(self.epsilons, self.certified_delta)
        interval = (
            DEFAULT_INTERVAL
            if value_discretization_interval is None
            else value_discretization_interval
        )
        return CertifiedPLD(pair.to_pld(interval), self.failure_probability)
