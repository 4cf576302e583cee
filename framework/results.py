"""Typed, JSON-serialisable results of accounting questions.

Every result states how it was obtained: ``method`` is ``"exact"`` (PLD, closed form) or
``"monte_carlo"``; Monte Carlo results carry the sample count, the seed and the failure
probability of their certified bound. ``to_json`` / ``Result.from_json`` round-trip exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, ClassVar, TypeVar

import attrs

from minsep.framework.errors import ConfigurationError

R = TypeVar("R", bound="Result")


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


def _floats(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


_KINDS: dict[str, type[Result]] = {}


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


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@attrs.frozen(kw_only=True)
class Result:
    """Base of all results: provenance shared by every answer."""

    kind: ClassVar[str] = "result"

    accountant: str
    method: str  # "exact" | "monte_carlo" | "gaussian"
    scheme: dict[str, Any] = attrs.field(factory=dict)
    strategy: dict[str, Any] = attrs.field(factory=dict)
    seconds: float = 0.0
    notes: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS[cls.kind] = cls

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form with a ``kind`` tag."""
        data = attrs.asdict(self, recurse=True)
        return {"kind": self.kind, **_encode(data)}

    def to_json(self, **kwargs: Any) -> str:
        """JSON text; non-finite floats are tagged so they survive the round trip."""
        return json.dumps(self.to_dict(), **kwargs)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Result:
        """Rebuild the result class named by ``data['kind']``."""
        data = dict(_decode(data))
        kind = data.pop("kind", None)
        cls = _KINDS.get(str(kind))
        if cls is None:
            raise ConfigurationError(
                f"result kind = {kind!r} is invalid: must be one of {sorted(_KINDS)}"
            )
        return cls(**data)

    @staticmethod
    def from_json(text: str) -> Result:
        """Inverse of :meth:`to_json`."""
        return Result.from_dict(json.loads(text))


@attrs.frozen(kw_only=True)
class EpsilonResult(Result):
    """epsilon at a target delta and noise multiplier.

    ``epsilon`` is the point estimate (exact for exact methods). ``certified_epsilon`` is an
    upper bound that holds except with probability ``failure_probability`` (0 for exact
    methods); report it, not the estimate, as the privacy guarantee.
    """

    kind: ClassVar[str] = "epsilon"

    epsilon: float
    certified_epsilon: float
    delta: float
    sigma: float
    samples: int | None = None
    seed: int | None = None
    failure_probability: float = 0.0
    std_error: float | None = None
    backend: str | None = None
    kernels: str | None = None  # "numba" | "cuda" | "array" (Monte Carlo)
    base_delta: float | None = None
    pilot_samples: int | None = None


@attrs.frozen(kw_only=True)
class DeltaResult(Result):
    """delta at a target epsilon and noise multiplier (max over both directions).

    ``certified_delta`` holds except with probability ``failure_probability``.
    """

    kind: ClassVar[str] = "delta"

    delta: float
    certified_delta: float
    epsilon: float
    sigma: float
    samples: int | None = None
    seed: int | None = None
    failure_probability: float = 0.0
    std_error: float | None = None
    backend: str | None = None
    kernels: str | None = None  # "numba" | "cuda" | "array" (Monte Carlo)
    base_delta: float | None = None
    pilot_samples: int | None = None


@attrs.frozen(kw_only=True)
class CalibrationResult(Result):
    """The smallest certified noise multiplier for a target (epsilon, delta).

    ``sigma`` is conservative: the run is (epsilon, delta)-DP at ``sigma`` (for Monte Carlo:
    except with ``failure_probability``, already folded into ``delta`` by Algorithm 5).
    ``candidates`` lists the sigma values examined, most private first.
    """

    kind: ClassVar[str] = "calibration"

    sigma: float
    epsilon: float
    delta: float
    certified: bool = True
    candidates: tuple[float, ...] = attrs.field(default=(), converter=_floats)
    samples: int | None = None
    seed: int | None = None
    failure_probability: float = 0.0
    base_delta: float | None = None
    backend: str | None = None
    kernels: str | None = None  # "numba" | "cuda" | "array" (Monte Carlo)
    pilot_samples: int | None = None
