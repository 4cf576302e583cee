"""Truncation and padding to a fixed batch size B_max, over any scheme (docs/math.md §6).

When a step's pre-truncation sample exceeds B_max, a uniform B_max of it is kept; examples that
were sampled but dropped still count as sampled for the base scheme (for b-min-sep they stay
barred for b - 1 steps), because the wrapper drives the base through its ``sample_batches``
hook instead of post-processing finished batches. Padding every batch to exactly B_max slots,
marked :data:`PADDING`, is a separate, privacy-neutral step. The accounting needs zero-out
adjacency and the public dataset size |D|, which is why ``dataset_size`` is a parameter.

Sensitivity under truncation (one decision for every accounting route): with zero-out adjacency
(docs/math.md §1), removing the sensitive example from a truncating step frees a slot that
another, previously dropped example may take, so one participation moves that step's clipped
sum by up to 2 (one gradient out, another in), in units of the clip norm and times the base's
own per-step contribution. Hence :attr:`Truncated.max_step_contribution` is twice the base's,
and all three routes agree with it: the unamplified Gaussian accountant multiplies the
strategy's sensitivity by it; dp_accounting's truncated subsampled Gaussian event compares the
replace-one pair (noise sigma/2 at unit shift); and the Monte Carlo pair of paper App. D has
per-step means ``2c`` (the example survives a truncating step) against ``-c``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError, NotAccountableError, UnknownNameError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.parameters import Parameter, attribute_docs
from minsep.framework.registries import schemes
from minsep.framework.validation import positive_int
from minsep.schemes._sampling import uniform_positions
from minsep.schemes.base import check_generator, check_options
from minsep.schemes.base import dataset_size as size_of

if TYPE_CHECKING:
    from dp_accounting.dp_event import DpEvent

    from minsep.schemes.truncated.reduction import TruncationReduction

#: The index that marks an empty (padding) slot of a truncated batch.
PADDING = -1


def real_examples(batch: np.ndarray) -> np.ndarray:
    """The example indices of a padded batch (padding slots removed)."""
    return np.asarray(batch[batch != PADDING], dtype=np.int64)


def _truncatable(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, SamplingScheme) or not callable(
        getattr(value, "sample_batches", None)
    ):
        raise ConfigurationError(
            f"{type(instance).__name__}.{attribute.name} = {value!r} is invalid: must be a "
            "sampling scheme exposing its pre-truncation sample through "
            "sample_batches(population, rng, keep) (see minsep.schemes.base.SchemeBase); a "
            "truncated scheme cannot be truncated again"
        )


@schemes.register("truncated")
@attrs.frozen
class Truncated(SamplingScheme):
    """Any scheme truncated to at most B_max examples per step and padded to exactly B_max.

    Attributes:
        base: the scheme whose pre-truncation samples are truncated (e.g. ``BMinSep``).
        max_batch_size: B_max >= 1; every batch has exactly this many slots.
        dataset_size: the public |D|; ``batches`` refuses a population of another size.

    ``rate`` is the base's (pre-truncation) rate p0: the expected number of real examples
    per batch is at most |D|·p0.
    """

    base: SamplingScheme = attrs.field(validator=_truncatable)
    max_batch_size: int = attrs.field(validator=positive_int())
    dataset_size: int = attrs.field(validator=positive_int())

    def __attrs_post_init__(self) -> None:
        # A batch holds distinct examples, so at most |D| of them: B_max > |D| only pads
        # slots that can never be filled, and is almost always a mix-up of the two sizes.
        if self.max_batch_size > self.dataset_size:
            raise ConfigurationError(
                f"Truncated.max_batch_size = {self.max_batch_size!r} is invalid: must be an "
                f"integer in [1, dataset_size = {self.dataset_size}] (a batch holds at most "
                "every example once)",
                parameter="max_batch_size",
            )

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``base`` (a registered scheme name), ``max_batch_size``, ``dataset_size``; the
        base's own options are passed on to its ``from_rate``."""
        docs = attribute_docs(cls)
        return (
            Parameter(
                name="base",
                kind="str",
                required=False,
                default="b_min_sep",
                help="the registered name of the scheme whose samples are truncated",
            ),
            Parameter("max_batch_size", "int", True, None, docs["max_batch_size"]),
            Parameter("dataset_size", "int", True, None, docs["dataset_size"]),
        )

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Options: ``base`` (registered name, default ``"b_min_sep"``), ``max_batch_size``,
        ``dataset_size`` (both required) and the base's own ``from_rate`` options."""
        options = dict(options)
        base = options.pop("base", "b_min_sep")
        if not isinstance(base, str):
            raise ConfigurationError(
                f"truncated.from_rate option base = {base!r} is invalid: must be the registered "
                "name of a scheme, e.g. 'b_min_sep'",
                parameter="base",
            )
        try:
            inner = tuple(p.name for p in schemes.get(base).parameters())
        except UnknownNameError as exc:
            raise ConfigurationError(
                f"truncated.from_rate option base = {base!r} is invalid: {exc}", parameter="base"
            ) from None
        check_options(cls, {**options, "base": base}, passed_on=inner)
        max_batch_size = options.pop("max_batch_size")
        dataset_size = options.pop("dataset_size")
        return cls(
            base=schemes.get(base).from_rate(n_steps, rate, **options),
            max_batch_size=max_batch_size,
            dataset_size=dataset_size,
        )

    @classmethod
    def example(cls) -> Truncated:
        from minsep.schemes.b_min_sep import BMinSep

        return cls(
            base=BMinSep(n_steps=12, rate=0.1, min_sep=3), max_batch_size=15, dataset_size=200
        )

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        from minsep.schemes.b_min_sep import BMinSep

        base = BMinSep(n_steps=12, rate=0.1, min_sep=3)
        return [
            ({"base": "b_min_sep", "max_batch_size": 10, "dataset_size": 100}, "base"),
            ({"base": base, "max_batch_size": 0, "dataset_size": 100}, "max_batch_size"),
            ({"base": base, "max_batch_size": 10, "dataset_size": 0}, "dataset_size"),
            ({"base": base, "max_batch_size": 101, "dataset_size": 100}, "max_batch_size"),
        ]

    def example_population(self) -> Any:
        population = self.base.example_population()
        if size_of(population, type(self).__name__) == self.dataset_size:
            return population
        return self.dataset_size

    @property
    def n_steps(self) -> int:
        return self.base.n_steps

    @property
    def rate(self) -> float:
        return self.base.rate

    @property
    def min_separation(self) -> int:
        return self.base.min_separation

    @property
    def max_participations(self) -> int:
        return self.base.max_participations

    @property
    def max_step_contribution(self) -> float:
        """Twice the base's: one gradient out and a previously dropped one in (module doc)."""
        return 2.0 * self.base.max_step_contribution

    @property
    def conjectured(self) -> bool:
        """Whether the base's accounting rests on a conjecture."""
        return bool(getattr(self.base, "conjectured", False))

    def public_parameters(self) -> dict[str, Any]:
        return {
            "scheme": self.name,
            "base": self.base.public_parameters(),
            "max_batch_size": self.max_batch_size,
            "dataset_size": self.dataset_size,
        }

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Yield int64 arrays of exactly B_max slots: the kept examples (sorted), then PADDING."""
        owner = type(self).__name__
        size = size_of(population, owner)
        if size != self.dataset_size:
            raise ConfigurationError(
                f"{owner}.population has {size} examples, but dataset_size = "
                f"{self.dataset_size}: the accounting needs the true public dataset size"
            )
        check_generator(rng, owner)
        cap = self.max_batch_size

        def keep(sample: np.ndarray) -> np.ndarray:
            if sample.size > cap:
                sample = np.sort(sample[uniform_positions(rng, sample.size, cap)])
            out = np.full(cap, PADDING, dtype=np.int64)
            out[: sample.size] = sample
            return out

        hook: Any = getattr(self.base, "sample_batches")  # noqa: B009 - checked at construction
        batches: Iterator[np.ndarray] = hook(population, rng, keep)
        return batches

    # -- accounting: delegated to the base's truncation hooks ---------------------------------

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """``base.truncated_loss_model(strategy, dataset_size, max_batch_size)``."""
        hook = getattr(self.base, "truncated_loss_model", None)
        if hook is None:
            raise NotAccountableError(
                f"scheme {self.base.name!r} has no Monte Carlo loss model under truncation"
            )
        model: PrivacyLossModel = hook(strategy, self.dataset_size, self.max_batch_size)
        return model

    def reduction(self, strategy: Strategy) -> TruncationReduction:
        """``base.truncation_reduction(strategy, dataset_size, max_batch_size)``: the base's
        untruncated pair with the additive overheads of docs/math.md §6.2."""
        hook = getattr(self.base, "truncation_reduction", None)
        if hook is None:
            raise NotAccountableError(
                f"scheme {self.base.name!r} has no reduction of its truncation to the "
                "untruncated pair (docs/math.md §6.2)"
            )
        reduction: TruncationReduction = hook(strategy, self.dataset_size, self.max_batch_size)
        return reduction

    def dp_event(self, strategy: Strategy, sigma: float) -> DpEvent:
        """``base.truncated_dp_event(strategy, sigma, dataset_size, max_batch_size)``."""
        hook = getattr(self.base, "truncated_dp_event", None)
        if hook is None:
            raise NotAccountableError(
                f"scheme {self.base.name!r} has no exact PLD event under truncation"
            )
        event: DpEvent = hook(strategy, sigma, self.dataset_size, self.max_batch_size)
        return event

    def dp_event_is_exact(self, strategy: Strategy) -> bool:
        """The base's answer: its truncated event composes the same columns as its own."""
        return self.base.dp_event_is_exact(strategy)
