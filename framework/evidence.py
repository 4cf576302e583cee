"""What a Monte Carlo answer rests on: one record held by the result (docs/math.md §7).

A Monte Carlo certificate is a claim about random draws: it is reproduced by its seed, its
sample counts and its chunk size on the same kernel set, and it is re-derived (by
:mod:`~minsep.framework.montecarlo.trust`) from what the verifier saw. :class:`MonteCarloEvidence`
holds all of that; results of exact and deterministic accountants hold None.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs

from minsep.framework import validation as v
from minsep.framework.backend import KernelSet
from minsep.framework.methods import EpsilonBound, epsilon_bound

__all__ = ["MONTE_CARLO_FIELDS", "MonteCarloEvidence", "MonteCarloView"]

T = TypeVar("T")


def _mapping(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        raise v.fail(instance, attribute.name, value, "a dict")


def _optional(validator: v.Validator) -> Any:
    return attrs.field(default=None, converter=v.plain_number, validator=v.optional(validator))


def _kernel_set(value: Any) -> Any:
    return v.member(KernelSet, value)


@attrs.frozen(kw_only=True)
class MonteCarloEvidence:
    """The draws behind a Monte Carlo answer and what its verifier saw.

    Attributes:
        samples: verification samples ``m`` per direction (Fact 4.2's ``m``).
        seed: root seed of every stream (the answer reproduces from it).
        pilot_samples: estimation samples per direction (they choose the claims only).
        chunk_size: samples per chunk: the draws are seeded by chunk, so a seeded answer
            reproduces only at the same chunk size (``--memory-budget``, ``--chunk-size``).
        backend: the array backend that ran (``"numpy"``, ``"cupy"``).
        kernels: the kernel set the loss models ran (:class:`~minsep.framework.backend.KernelSet`).
        std_error: standard error of the point estimate (epsilon and delta answers).
        base_delta: the level the verification mean was compared against (Fact 4.2's
            ``delta_b``; the betting level ``delta_u``).
        bound: how a certified epsilon was verified
            (:class:`~minsep.framework.methods.EpsilonBound`); None for the other
            questions.
        proposal: the importance-sampling proposal (method, order, log_z, support, add); None:
            plain sampling.
        verification: what the verifier saw, to re-derive the certificate from (``rule`` and
            its candidates or thresholds and verification means; checked by
            :mod:`~minsep.framework.montecarlo.trust`); None: not kept.
        sigma_estimate: the sigma the point estimate alone would select (calibrations; no
            guarantee, see :class:`~minsep.framework.results.CalibrationResult`).
    """

    samples: int = attrs.field(converter=v.plain_number, validator=v.positive_int())
    seed: int = attrs.field(converter=v.plain_number, validator=v.integer(low=0))
    pilot_samples: int | None = _optional(v.positive_int())
    chunk_size: int | None = _optional(v.positive_int())
    backend: str | None = attrs.field(default=None, validator=v.optional(v.text()))
    kernels: KernelSet | None = attrs.field(
        default=None,
        converter=_kernel_set,
        validator=v.optional(v.choice(KernelSet)),
    )
    std_error: float | None = _optional(v.number(low=0.0, infinite=True))
    base_delta: float | None = _optional(v.number(low=0.0, infinite=True))
    bound: EpsilonBound | None = attrs.field(
        default=None,
        converter=epsilon_bound,
        validator=v.optional(v.choice(EpsilonBound)),
    )
    proposal: dict[str, Any] | None = attrs.field(default=None, validator=v.optional(_mapping))
    verification: dict[str, Any] | None = attrs.field(default=None, validator=v.optional(_mapping))
    sigma_estimate: float | None = _optional(v.number(low=0.0, low_open=True, infinite=True))


#: The fields of :class:`MonteCarloEvidence`, which results of format 1 held flat (with
#: ``evidence`` for ``verification``).
MONTE_CARLO_FIELDS = tuple(f.name for f in attrs.fields(MonteCarloEvidence))


class _Shortcut(Generic[T]):
    """A read-only attribute of a result reading one field of its evidence record (None when
    the result has none)."""

    def __init__(self, field: str | None = None) -> None:
        self._field = field

    def __set_name__(self, owner: type, name: str) -> None:
        self._field = self._field or name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        record = getattr(instance, "monte_carlo", None)
        return None if record is None else getattr(record, str(self._field))  # type: ignore[return-value]


class MonteCarloView:
    """Read-only shortcuts to a result's :class:`MonteCarloEvidence` (None when the result is
    not Monte Carlo), so that ``result.samples`` reads as before the record; ``evidence``
    reads its ``verification``."""

    monte_carlo: MonteCarloEvidence | None

    samples: _Shortcut[int | None] = _Shortcut()
    seed: _Shortcut[int | None] = _Shortcut()
    pilot_samples: _Shortcut[int | None] = _Shortcut()
    chunk_size: _Shortcut[int | None] = _Shortcut()
    backend: _Shortcut[str | None] = _Shortcut()
    kernels: _Shortcut[KernelSet | None] = _Shortcut()
    std_error: _Shortcut[float | None] = _Shortcut()
    base_delta: _Shortcut[float | None] = _Shortcut()
    bound: _Shortcut[EpsilonBound | None] = _Shortcut()
    proposal: _Shortcut[dict[str, Any] | None] = _Shortcut()
    evidence: _Shortcut[dict[str, Any] | None] = _Shortcut("verification")
    sigma_estimate: _Shortcut[float | None] = _Shortcut()
