"""The sampling-scheme contract: a batch sampler and its accounting hooks (docs/math.md §1-§6)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from minsep.framework.errors import NotAccountableError
from minsep.framework.validation import check_keywords

if TYPE_CHECKING:
    from dp_accounting import dp_event

    from minsep.framework.loss_model import PrivacyLossModel
    from minsep.framework.parameters import CompareContext, CompareVariant, Parameter
    from minsep.framework.participation import ParticipationChain
    from minsep.framework.phase_mixture import PhaseMixture
    from minsep.framework.strategy import Strategy


class SamplingScheme(ABC):
    """A batch-sampling scheme: its real sampler and its accounting hooks.

    Instances hold public parameters only (steps, rate, min-sep, ...); dataset contents and
    random generators are call arguments. ``rate`` is the marginal participation rate p0 =
    E|B| / |D|, so schemes built at the same rate compare at equal expected batch size.
    """

    registry_name: ClassVar[str]
    #: The scheme's name in tables (``compare``); None: the registered name.
    label: ClassVar[str | None] = None
    #: Where the scheme's ``compare`` rows go in the table (smaller first).
    compare_rank: ClassVar[int] = 50
    #: Fields that ``from_rate`` computes from the rate (e.g. balls-in-bins' cycle length):
    #: they are not options of ``from_rate``.
    derived_from_rate: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """The options ``from_rate`` takes: the attrs fields less ``n_steps``, ``rate`` and
        :attr:`derived_from_rate`, with kinds, defaults and the docstring's help.

        They drive the option check of ``from_rate``, the ``minsep`` command-line flags and
        ``minsep list``; override when ``from_rate`` takes other options than the fields.
        """
        from minsep.framework.parameters import parameters_of

        return parameters_of(cls, cls.derived_from_rate)

    @classmethod
    def display_name(cls) -> str:
        """:attr:`label`, else the registered name."""
        return cls.label or str(getattr(cls, "registry_name", cls.__name__))

    @classmethod
    def compare_variants(cls, context: CompareContext) -> list[CompareVariant]:
        """The rows ``compare`` evaluates for this scheme at ``context``.

        Default: for every bands value k of the grid, the scheme with its defaults when it
        needs no option, or one row per feasible min-sep b (k <= b <= 1/p0) when ``min_sep``
        is its only required option; no rows when it needs other options (declare them here).
        """
        from minsep.framework.parameters import CompareVariant

        required = {p.name for p in cls.parameters() if p.required}
        if not required:
            return [CompareVariant(bands=k) for k in context.bands]
        if required == {"min_sep"}:
            return [
                CompareVariant(bands=k, options={"min_sep": b})
                for k in context.bands
                for b in context.min_seps[k]
            ]
        return []

    @classmethod
    def example(cls) -> SamplingScheme:
        """A small valid instance, used by the contract tests every scheme runs through."""
        raise NotImplementedError(f"{cls.__name__}.example() is not implemented")

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(constructor kwargs, parameter name)`` pairs that must raise ConfigurationError
        naming that parameter (checked by the contract tests)."""
        return []

    @property
    @abstractmethod
    def n_steps(self) -> int:
        """Number of training steps n."""

    @property
    @abstractmethod
    def rate(self) -> float:
        """Marginal participation rate p0 (expected batch size / dataset size)."""

    @property
    def min_separation(self) -> int:
        """Guaranteed minimum gap between two participations of one unit (1: none)."""
        return 1

    @property
    def max_participations(self) -> int:
        """Most participations of one unit over the run (for unamplified accounting)."""
        sep = self.min_separation
        return -(-self.n_steps // sep)

    @property
    def max_step_contribution(self) -> float:
        """The most one participation of the sensitive unit moves one step's clipped sum.

        In units of the clip norm, under zero-out adjacency (docs/math.md §1): 1 when a unit is
        one example. A scheme overrides it when one participation can move the sum further:
        a user contributing up to k_u examples in one step (k_u), or a truncated batch where
        removing the unit lets another, previously dropped example in (twice the base's
        contribution, one gradient out and one in). Unamplified accounting multiplies the
        strategy's sensitivity by it; the exact and Monte Carlo routes of such schemes build
        the same contribution into their dominating pairs.
        """
        return 1.0

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Build the scheme for ``n_steps`` at participation rate p0 = ``rate``.

        ``options`` are the family's own public parameters (``min_sep``, ``warm_start``,
        ``dataset_size``, ``max_batch_size``, ...); an option the family does not take raises
        ConfigurationError, and so does a required one left out (naming it and listing the
        family's parameters). Used by the CLI and ``compare`` to build every scheme at equal
        expected batch size.
        """
        check_keywords(cls, options, owner=cls.registered_name(), given=("n_steps", "rate"))
        factory: Any = cls
        scheme: SamplingScheme = factory(n_steps=n_steps, rate=rate, **options)
        return scheme

    @classmethod
    def registered_name(cls) -> str:
        """The registered name of the family (the class name if unregistered)."""
        return getattr(cls, "registry_name", cls.__name__)

    def example_population(self) -> Any:
        """A small population :meth:`batches` accepts (contract tests, docs)."""
        return 200

    @abstractmethod
    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Yield the batch of each step as an int64 array of example indices.

        ``population`` is the dataset size (int) for example-level schemes; schemes over
        other data (e.g. an attribution graph) document what they take.
        """

    def prefix_scheme(self, n_steps: int) -> SamplingScheme | None:
        """The ``n_steps``-step scheme whose batches have the law of this scheme's first
        ``n_steps`` batches, or None when there is none (default: the law may depend on the
        run's length, e.g. balls in bins). Used to account a prefix of a run directly."""
        return None

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """The Monte Carlo accounting hook; raise NotAccountableError when there is none."""
        raise NotAccountableError(f"scheme {self.name!r} has no Monte Carlo loss model")

    def dp_event(self, strategy: Strategy, sigma: float) -> dp_event.DpEvent:
        """The exact dp_accounting event; raise NotAccountableError when there is none."""
        raise NotAccountableError(f"scheme {self.name!r} has no exact PLD event")

    def dp_event_is_exact(self, strategy: Strategy) -> bool:
        """True when :meth:`dp_event` is this scheme's exact event at ``strategy``; False when
        it is a dominating one (a proven upper bound): results of the PLD route then say
        ``method = "upper bound"`` instead of ``"exact"``."""
        return True

    @property
    def name(self) -> str:
        """The registered name (class name if unregistered)."""
        return getattr(type(self), "registry_name", type(self).__name__)

    def expected_batch_size(self, dataset_size: int) -> float:
        """``p0 * |D|``."""
        return self.rate * dataset_size

    def public_parameters(self) -> dict[str, Any]:
        """The public parameters as plain data (for results and records)."""
        import attrs

        if attrs.has(type(self)):
            return {"scheme": self.name, **attrs.asdict(self, recurse=False)}  # type: ignore[arg-type]
        return {"scheme": self.name, "n_steps": self.n_steps, "rate": self.rate}

    def participation_chain(self) -> ParticipationChain | None:
        """The b-min-sep availability chain of one unit, when its participation follows one.

        Exact Renyi accounting (docs/rdp-escort.md) needs the sensitive unit's pattern to be
        that chain (docs/math.md §3); every other scheme answers None (the default).
        """
        return None

    def phase_mixture(self) -> PhaseMixture | None:
        """The uniform phase mixture of one unit (random-phase cyclic Poisson), when its
        participation is one: exact Renyi accounting then runs the per-phase-tuple pass of
        docs/rdp-escort.md §10. Every other scheme answers None (the default)."""
        return None

    def pattern_law(self) -> dict[tuple[int, ...], float] | None:
        """The law of the sensitive unit's participation pattern under P, enumerated as
        ``{pattern: probability}`` (tiny ``n`` only), for the brute-force oracle of the testing
        kit (:class:`minsep.testing.ZeroOutOracle`). None (the default): not given; the kit
        then enumerates :meth:`participation_chain` when there is one."""
        return None
