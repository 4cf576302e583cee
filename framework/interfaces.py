"""The contracts every scheme, strategy, loss model and accountant implements.

Notation follows ``docs/math.md`` (paper: Dong & Ganesh, "Privacy Amplification for BandMF via
b-Min-Sep Subsampling"). The mechanism is ``y = C x + z`` with ``z ~ N(0, sigma^2 I_n)``; ``x``
is the participation vector of the sensitive unit, drawn from the scheme's law under P and
identically zero under Q (zero-out adjacency).
"""

from __future__ import annotations

import enum
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import attrs
import numpy as np

from minsep.framework.environment import environment
from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.validation import check_keywords, check_range

if TYPE_CHECKING:
    from dp_accounting import dp_event

    from minsep.framework.backend import Backend, RandomSource
    from minsep.framework.parameters import CompareContext, CompareVariant, Parameter
    from minsep.framework.participation import ParticipationChain
    from minsep.framework.results import (
        CalibrationResult,
        CurveResult,
        DeltaResult,
        EpsilonResult,
    )
    from minsep.framework.workloads import Workload


#: A result type (EpsilonResult, DeltaResult, CalibrationResult).
R = TypeVar("R")


#: Default failure probability of a simultaneous Monte Carlo curve (``Accountant.delta_curve``).
DEFAULT_CURVE_FAILURE = 1e-6

#: Float64 arrays of ``n_steps`` values per sample that :meth:`PrivacyLossModel.bytes_per_sample`
#: assumes for a model that does not declare its own figure.
DEFAULT_WORKING_ARRAYS = 16


class Direction(enum.Enum):
    """Which neighbouring order a privacy-loss sample is drawn for (docs/math.md §1).

    REMOVE: y ~ P, L = ln P(y)/Q(y).   ADD: y ~ Q, L = -ln P(y)/Q(y).
    """

    REMOVE = "remove"
    ADD = "add"

    @property
    def sign(self) -> float:
        """+1 for REMOVE, -1 for ADD: ``L = sign * ln P/Q``."""
        return 1.0 if self is Direction.REMOVE else -1.0


@runtime_checkable
class Transcript(Protocol):
    """sigma-free draws for ``n_samples`` privacy-loss samples (common random numbers).

    Concrete transcripts hold e.g. the participation pattern and the standard-normal
    correlations ``<c_i, z>``; a loss model turns them into ``ln P/Q`` for any sigma.
    """

    @property
    def n_samples(self) -> int:
        """Number of samples held."""

    @property
    def direction(self) -> Direction:
        """The direction the samples were drawn for."""


class PrivacyLossModel(ABC):
    """A dominating pair (P, Q) for one scheme and strategy, sampled in two stages.

    ``draw`` produces sigma-free transcripts; ``log_ratio`` maps a transcript and a noise
    multiplier to ``ln P(y)/Q(y)``. Splitting the two lets calibration re-use one set of draws
    across many sigma values (common random numbers, docs/math.md §7).
    """

    #: True when the accounting rests on an unproven conjecture (Algorithm 4).
    conjectured: ClassVar[bool] = False
    #: True when ``log_ratio`` returns a bound of ``ln P/Q`` instead of its value: an upper
    #: bound on REMOVE transcripts and a lower bound on ADD ones, y drawn from the true
    #: mechanism. The loss L is then over-estimated in both directions, so no delta(eps) is
    #: under-estimated, and ``E[exp(-L)] <= 1`` replaces ``= 1`` (docs/math.md §2.1).
    bounds_ratio: ClassVar[bool] = False

    @property
    @abstractmethod
    def n_steps(self) -> int:
        """The number of steps n of the mechanism."""

    @abstractmethod
    def draw(
        self, n_samples: int, direction: Direction, rng: RandomSource, backend: Backend
    ) -> Transcript:
        """Draw ``n_samples`` sigma-free transcripts for ``direction`` on ``backend``."""

    @abstractmethod
    def log_ratio(self, transcript: Transcript, sigma: float) -> Any:
        """``ln P(y)/Q(y)`` per sample (a length-``n_samples`` array of the backend).

        ``y = C x + sigma z`` under REMOVE and ``y = sigma z`` under ADD, rebuilt from the
        transcript. Must be finite for every sigma > 0 the model accepts.
        """

    def bytes_per_sample(self, direction: Direction, backend: Backend) -> int:
        """Peak bytes one sample of a chunk occupies while it is drawn and evaluated: its
        transcript plus the working arrays of :meth:`draw` and :meth:`log_ratio` on
        ``backend``. The engine multiplies it by the chunk size to plan memory before it
        allocates (:mod:`~minsep.framework.montecarlo.planning`).

        The default assumes ``DEFAULT_WORKING_ARRAYS`` float64 arrays of ``n_steps`` values;
        a model whose working set is larger (or that is not O(n) per sample) must override it.
        """
        return 8 * DEFAULT_WORKING_ARRAYS * max(int(self.n_steps), 1)

    def privacy_loss(self, transcript: Transcript, sigma: float) -> Any:
        """The privacy loss ``L = sign(direction) * ln P/Q`` per sample (docs/math.md §1)."""
        return transcript.direction.sign * self.log_ratio(transcript, sigma)

    def privacy_losses(
        self,
        n_samples: int,
        direction: Direction,
        rng: RandomSource,
        backend: Backend,
        sigmas: Sequence[float],
    ) -> list[Any]:
        """The privacy losses of one draw at every sigma of ``sigmas`` (common random numbers):
        ``privacy_loss(draw(...), sigma)`` for each. What the Monte Carlo engine calls per chunk
        and direction. A model may fuse the draw with the evaluation (evaluating each block of
        samples as soon as it is drawn, never holding the whole transcript) provided it returns
        the same values from the same stream."""
        transcript = self.draw(n_samples, direction, rng, backend)
        return [self.privacy_loss(transcript, sigma) for sigma in sigmas]

    def kernel_set(self, backend: Backend) -> str:
        """Which code evaluates this model on ``backend`` in this process: ``"numba"``,
        ``"cuda"`` or ``"array"`` (portable array code: the default for a model without
        compiled kernels). Monte Carlo results record it."""
        return "array"

    def kernel_notes(self, backend: Backend) -> tuple[str, ...]:
        """Notes for a result computed on ``backend`` (e.g. that a slower path ran, and how to
        install the fast one). Default: on the array path (:meth:`kernel_set`), one note saying
        that this model has no compiled kernels and where the kernel interface is described."""
        if self.kernel_set(backend) != "array":
            return ()
        return (
            f"loss model {type(self).__name__} has no compiled kernels: it ran on the portable "
            "array code (docs/adding-a-scheme.md, 'Compiled kernels', describes the hooks a "
            "model fills for the compiled path)",
        )


class Strategy(ABC):
    """A strategy matrix C: lower-triangular, entrywise non-negative, invertible.

    The mechanism releases ``C x + sigma z`` and streams the noise ``sigma C^-1 z`` into
    training. Every strategy gives its dense matrix for small n (:meth:`matrix`), its
    sensitivity under b-min-sep participation, its streaming noise, its error on a workload
    (:meth:`mse`) and the column inner products ``(C^T C)[i, j]`` the loss models use.

    **Banded strategies** (``is_banded``; the default, and every strategy written before the
    general interface) are banded Toeplitz with first column :attr:`coefficients` (``bands``
    entries, ``||c||_2 = 1`` for BandMF): ``C[i, j] = 0`` when ``i - j >= bands``. The b-min-sep
    loss models rely on this. A strategy that is **not banded** (BLT, banded inverse, dense;
    docs/math.md §8) answers ``is_banded = False`` and its :attr:`coefficients` and
    :attr:`bands` raise NotAccountableError (use the App. B r-min-sep accounting or the
    unamplified Gaussian bound), so that no banded analysis can silently run on it.
    """

    registry_name: ClassVar[str]

    @classmethod
    def example(cls) -> Strategy:
        """A small valid instance, used by the contract tests every strategy runs through."""
        raise NotImplementedError(f"{cls.__name__}.example() is not implemented")

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(constructor kwargs, parameter name)`` pairs that must raise ConfigurationError."""
        return []

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """The options :meth:`for_steps` takes: by default the attrs fields, with kinds,
        defaults and the docstring's help, as a scheme's (:meth:`SamplingScheme.parameters`).

        They drive the ``--strategy NAME:key=value`` options and flags of the ``minsep``
        commands and ``minsep list``; override when ``for_steps`` takes other options than the
        fields (e.g. ``bands`` of an optimised strategy).
        """
        from minsep.framework.parameters import parameters_of

        return parameters_of(cls)

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> Strategy:
        """Build the strategy for an ``n_steps`` run (e.g. ``bands=8`` optimises BandMF).

        Used by the CLI and ``compare``; unknown options raise ConfigurationError.
        """
        return cls(**options)

    @property
    def strategy_name(self) -> str:
        """The registered name (class name if unregistered)."""
        return str(getattr(type(self), "registry_name", type(self).__name__))

    def not_banded_error(self, what: str) -> NotAccountableError:
        """The error a non-banded strategy raises when asked for ``what`` (e.g. ``bands``)."""
        return NotAccountableError(
            f"strategy {self.strategy_name!r} is not banded Toeplitz, so it has no {what}: "
            "analyses that need C[i, j] = 0 for i - j >= bands (the b-min-sep loss models, "
            "exact PLD events) do not apply; use the App. B r-min-sep accounting or the "
            "unamplified Gaussian bound"
        )

    @property
    def is_banded(self) -> bool:
        """True when C is banded Toeplitz with first column :attr:`coefficients`
        (``C[i, j] = 0`` for ``i - j >= bands``, every n). Default True; non-banded strategies
        override it with False."""
        return True

    @property
    @abstractmethod
    def coefficients(self) -> np.ndarray:
        """The first-column coefficients ``c`` (length ``bands``, unit l2 norm) of a banded
        strategy; a non-banded one raises :meth:`not_banded_error`."""

    @property
    def bands(self) -> int:
        """The number of bands k (1 for the identity); NotAccountableError when not banded."""
        if not self.is_banded:
            raise self.not_banded_error("number of bands")
        return int(self.coefficients.shape[0])

    def public_parameters(self) -> dict[str, Any]:
        """The strategy as plain data (for results and records)."""
        if not self.is_banded:
            return {"strategy": self.strategy_name}
        return {
            "strategy": self.strategy_name,
            "bands": int(self.bands),
            "coefficients": [float(c) for c in self.coefficients],
        }

    @abstractmethod
    def matrix(self, n_steps: int) -> np.ndarray:
        """The dense n x n matrix C (for small n, tests and inspection)."""

    def toeplitz_column(self, n_steps: int) -> np.ndarray | None:
        """The first column of C (length n) when C is lower-triangular Toeplitz, else None.

        Default: read off :meth:`matrix` (exact comparison); structured strategies override it.
        """
        C = self.matrix(n_steps)
        column = C[:, 0]
        n = C.shape[0]
        lag = np.subtract.outer(np.arange(n), np.arange(n))
        toeplitz = np.where(lag >= 0, column[np.clip(lag, 0, None)], 0.0)
        return np.array(column) if np.array_equal(C, toeplitz) else None

    def column_gram(self, n_steps: int) -> np.ndarray:
        """``C^T C`` (n x n): entry (i, j) is the inner product of columns i and j.

        Default from :meth:`matrix`; Toeplitz strategies override it with an O(n^2) recursion.
        """
        C = self.matrix(n_steps)
        return np.asarray(C.T @ C, dtype=np.float64)

    def column_inner_products(self, n_steps: int, i: Any, j: Any) -> np.ndarray:
        """``(C^T C)[i, j]`` for broadcastable index arrays ``i``, ``j`` (0-based columns).

        Default: entries of :meth:`column_gram`; structured strategies override it with
        O(bands) or O(buffers^2) per entry, without any n x n array.
        """
        return np.asarray(self.column_gram(n_steps)[np.asarray(i), np.asarray(j)])

    def mse(self, n_steps: int, workload: Workload | None = None) -> float:
        """``(1/n) ||A C^-1||_F^2`` for the workload A (prefix sums when None) and C as given
        (docs/math.md §8): the error per unit sigma^2 when sigma is the noise multiplier an
        accountant calibrates for this C. Multiply by ``sensitivity(...)**2`` of a rescaled
        C for the scale-free objective (:meth:`normalized_mse`).

        Default: dense (O(n^3), small n); structured strategies override it.
        """
        from minsep.framework.workloads import PrefixSums

        A = (workload or PrefixSums()).matrix(n_steps)
        C = self.matrix(n_steps)
        X = np.linalg.solve(C.T, A.T).T  # A C^-1
        return float(np.sum(X * X) / n_steps)

    def normalized_mse(
        self,
        n_steps: int,
        workload: Workload | None = None,
        min_sep: int | None = None,
        max_participations: int = 1,
    ) -> float:
        """``mse(n, A) * sensitivity(n, b, K)^2``: scale free (the objective optimisers
        minimise); ``b = n`` and ``K = 1`` (single participation) by default."""
        sens = self.sensitivity(
            n_steps, n_steps if min_sep is None else min_sep, max_participations
        )
        return self.mse(n_steps, workload) * sens * sens

    def prefix_mse(self, n_steps: int) -> float:
        """``(1/n) ||A C^-1||_F^2`` for the prefix-sum workload A (§8): :meth:`mse` with prefix
        sums (at unit sensitivity for unit-norm BandMF coefficients)."""
        return self.mse(n_steps)

    @abstractmethod
    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        """``max ||sum_{j in pi} C[:, j]||_2`` over participation patterns pi with gaps
        ``>= min_sep`` and at most ``max_participations`` entries (docs/math.md §4): exact, or
        an upper bound (never below the maximum; :meth:`sensitivity_is_exact` says which)."""

    def sensitivity_is_exact(
        self,
        min_sep: int,
        n_steps: int | None = None,
        max_participations: int | None = None,
    ) -> bool:
        """True when :meth:`sensitivity` is the exact maximum for these arguments, False when
        it may be an upper bound (the default answer)."""
        return False

    @abstractmethod
    def noise(
        self,
        shape: Sequence[int],
        n_steps: int,
        rng: RandomSource,
        backend: Backend,
    ) -> Iterator[Any]:
        """Stream ``(C^-1 Z)[i]`` for i = 1..n, Z with i.i.d. N(0,1) rows of ``shape``.

        Holds O(bands * prod(shape)) memory (O(buffers * prod(shape)) for BLT); multiply by
        sigma for the training noise.
        """


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

    def pattern_law(self) -> dict[tuple[int, ...], float] | None:
        """The law of the sensitive unit's participation pattern under P, enumerated as
        ``{pattern: probability}`` (tiny ``n`` only), for the brute-force oracle of the testing
        kit (:class:`minsep.testing.ZeroOutOracle`). None (the default): not given; the kit
        then enumerates :meth:`participation_chain` when there is one."""
        return None


#: Numeric arguments of the questions: ``check_range`` keywords of their allowed ranges.
_QUESTION_NUMBERS: dict[str, dict[str, Any]] = {
    "sigma": {"low": 0.0, "low_open": True},
    "delta": {"low": 0.0, "high": 1.0, "low_open": True, "high_open": True},
    "epsilon": {"low": 0.0},
}


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@attrs.frozen
class Question:
    """One checked question to an accountant: ``name`` (``"epsilon"``, ``"delta"``,
    ``"calibrate"``, ...) about ``(scheme, strategy)`` with its numbers as Python floats
    (NaN where the question has no such number).

    Built by :meth:`checked`, which refuses, before any work and with a ConfigurationError
    naming the argument: a scheme that is not a :class:`SamplingScheme` or a strategy that is
    not a :class:`Strategy` (swapped or None arguments), and numbers out of range (sigma > 0,
    delta in (0, 1), epsilon >= 0, finite; strings and bools refused, numpy scalars taken).
    """

    accountant: Accountant
    name: str
    scheme: SamplingScheme
    strategy: Strategy
    sigma: float = math.nan
    delta: float = math.nan
    epsilon: float = math.nan

    @classmethod
    def checked(
        cls,
        accountant: Accountant,
        name: str,
        scheme: Any,
        strategy: Any,
        **numbers: Any,
    ) -> Question:
        """The question with its arguments checked (see the class)."""
        owner = f"{type(accountant).__name__}.{name}"
        order = ", ".join(["scheme", "strategy", *numbers])
        for argument, value, kind in (
            ("scheme", scheme, SamplingScheme),
            ("strategy", strategy, Strategy),
        ):
            if not isinstance(value, kind):
                raise ConfigurationError(
                    f"{owner}.{argument} = {_short(value)} is invalid: must be a "
                    f"{kind.__name__} (got {type(value).__name__}; the arguments are ({order}))",
                    parameter=argument,
                )
        checked = {}
        for argument, value in numbers.items():
            limits = _QUESTION_NUMBERS.get(argument)
            if limits is None:
                raise ConfigurationError(f"{owner} has no argument {argument!r}")
            checked[argument] = float(check_range(owner, argument, value, **limits))
        return cls(accountant, name, scheme, strategy, **checked)

    def provenance(self, method: str) -> dict[str, Any]:
        """The fields every result of this question shares (who answered, how, about what)."""
        return self.accountant.provenance(self.scheme, self.strategy, method)

    def bound_epsilon(
        self, value: float, method: str = "exact", notes: Sequence[str] = ()
    ) -> EpsilonResult:
        """The answer of a deterministic route (exact, or a proven bound such as RDP): its
        epsilon is its own certificate, with no failure probability."""
        from minsep.framework.results import EpsilonResult

        return EpsilonResult(
            **self.provenance(method),
            notes=tuple(notes),
            epsilon=value,
            certified_epsilon=value,
            delta=self.delta,
            sigma=self.sigma,
        )

    def bound_delta(
        self, value: float, method: str = "exact", notes: Sequence[str] = ()
    ) -> DeltaResult:
        """:meth:`bound_epsilon` for a delta question."""
        from minsep.framework.results import DeltaResult

        return DeltaResult(
            **self.provenance(method),
            notes=tuple(notes),
            delta=value,
            certified_delta=value,
            epsilon=self.epsilon,
            sigma=self.sigma,
        )

    def timed(self, answer: Callable[[Question], R]) -> R:
        """``answer(self)`` with ``seconds`` set to the wall time it took and the
        ``environment`` (package versions, git commit) that computed it."""
        start = time.perf_counter()
        result = answer(self)
        return attrs.evolve(  # type: ignore[misc]
            result, seconds=time.perf_counter() - start, environment=environment()
        )


class AccountantKind(enum.Enum):
    """What an accountant's answers are; ``auto`` tries the kinds in this order."""

    #: The privacy curve itself, up to a discretisation that only over-reports (PLD).
    EXACT = "exact"
    #: Certified from samples, the failure probability folded into delta (docs/math.md §7).
    MONTE_CARLO = "Monte Carlo"
    #: A deterministic upper bound, answered in seconds (Renyi DP, unamplified Gaussian).
    BOUND = "deterministic bound"


class Accountant(ABC):
    """Turns (scheme, strategy, sigma) into privacy guarantees.

    Every answer is a result object carrying how it was obtained (exact, Monte Carlo with a
    failure probability, ...). Accounting must never under-report epsilon.

    An accountant declares what it is (:attr:`kind`, :attr:`sound`, :attr:`rank`) and which
    of its options the command line sets (:attr:`command_line_options`); ``--accountant auto``,
    the first answer and ``compare`` pick among the registered accountants from these
    declarations (:func:`minsep.framework.setup.preference`), plugins included.
    """

    #: What the answers are (an exact curve, a Monte Carlo certificate, a deterministic bound).
    kind: ClassVar[AccountantKind] = AccountantKind.BOUND
    #: The accountant's claim that its answers never under-report epsilon or delta (with the
    #: failure probability folded in for Monte Carlo), proven in its docs. Only sound
    #: accountants are picked automatically; a plugin opts in by setting it.
    sound: ClassVar[bool] = False
    #: Order among sound accountants of one kind (smaller first: tighter or cheaper); names
    #: break ties.
    rank: ClassVar[int] = 50
    #: The options the command line sets, as ``{field: flag dest}`` (the flag is ``--`` and the
    #: dest with ``-`` for ``_``). None (the default): every attrs init field of a command-line
    #: kind under its own name. A flag no other accountant or command has is generated.
    command_line_options: ClassVar[Mapping[str, str] | None] = None

    registry_name: ClassVar[str]
    #: The registry the class is registered in (set by ``Registry.register``); lets
    #: :meth:`require` name the accountants that can, without importing the registries.
    registry: ClassVar[Any]

    @classmethod
    def example(cls) -> Accountant:
        """A cheap valid instance (e.g. few Monte Carlo samples) for the contract tests."""
        return cls()

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(constructor kwargs, parameter name)`` pairs that must raise ConfigurationError."""
        return []

    @abstractmethod
    def why_not(self, scheme: SamplingScheme, strategy: Strategy) -> str | None:
        """None if this accountant can account the pair, else the reason it cannot."""

    def provenance(self, scheme: SamplingScheme, strategy: Strategy, method: str) -> dict[str, Any]:
        """The fields every result shares: who answered, how, and about what."""
        return {
            "accountant": getattr(type(self), "registry_name", type(self).__name__),
            "method": method,
            "scheme": scheme.public_parameters(),
            "strategy": strategy.public_parameters(),
        }

    def start_workers(self, scheme: SamplingScheme, strategy: Strategy, sigma: float = 1.0) -> None:
        """Start the worker processes a question on the pair will use, without waiting, so
        that their start-up overlaps the caller's own work (the command line calls it before
        its first answer). Answers must not depend on it. Default: nothing to start."""
        return None

    def supports(self, scheme: SamplingScheme, strategy: Strategy) -> bool:
        """True when :meth:`why_not` finds no obstacle."""
        return self.why_not(scheme, strategy) is None

    def require(self, scheme: SamplingScheme, strategy: Strategy) -> None:
        """Raise NotAccountableError naming the accountants that can account the pair."""
        reason = self.why_not(scheme, strategy)
        if reason is None:
            return
        registry = getattr(type(self), "registry", None)
        able = (
            []
            if registry is None
            else [e.name for e in registry.entries() if e.cls().supports(scheme, strategy)]
        )
        raise NotAccountableError(
            f"accountant {getattr(self, 'registry_name', type(self).__name__)!r} cannot "
            f"account scheme {scheme.name!r} with strategy "
            f"{getattr(strategy, 'registry_name', type(strategy).__name__)!r}: {reason}. "
            f"Accountants that can: {', '.join(able) if able else 'none'}"
        )

    # -- the questions: template methods ------------------------------------------------
    #
    # The public questions check their arguments (``Question.checked``: types,
    # swapped or None scheme/strategy, ranges), refuse an unsupported pair naming the
    # accountants that can, and time the answer, once for every accountant. Implementations
    # fill in the math: ``_epsilon``, ``_delta``, ``_calibrate``, each given the checked
    # :class:`Question` (whose ``provenance(method)`` gives the
    # fields every result shares).

    def ask(
        self, name: str, scheme: SamplingScheme, strategy: Strategy, **numbers: Any
    ) -> Question:
        """The checked question ``name`` about ``(scheme, strategy)``; raises ConfigurationError
        for bad arguments and NotAccountableError for a pair this accountant cannot account."""

        question = Question.checked(self, name, scheme, strategy, **numbers)
        self.check_configuration(question.scheme, question.strategy)
        self.require(question.scheme, question.strategy)
        return question

    def check_configuration(  # noqa: B027 - an optional hook, not an abstract one
        self, scheme: SamplingScheme, strategy: Strategy
    ) -> None:
        """Raise ConfigurationError when this accountant's own settings cannot serve the pair
        (e.g. explicitly chosen Renyi orders whose state space exceeds the memory budget for
        this scheme). Runs before :meth:`require`, so a settings problem is reported as one
        rather than as an unsupported pair. Default: nothing to check."""

    def epsilon(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, delta: float
    ) -> EpsilonResult:
        """The smallest epsilon such that the run is (epsilon, delta)-DP at ``sigma``."""
        question = self.ask("epsilon", scheme, strategy, sigma=sigma, delta=delta)
        return question.timed(self._epsilon)

    def delta(
        self, scheme: SamplingScheme, strategy: Strategy, sigma: float, epsilon: float
    ) -> DeltaResult:
        """delta(epsilon) = max over directions of E[(1 - e^{epsilon - L})_+]."""
        question = self.ask("delta", scheme, strategy, sigma=sigma, epsilon=epsilon)
        return question.timed(self._delta)

    def calibrate(
        self, scheme: SamplingScheme, strategy: Strategy, epsilon: float, delta: float
    ) -> CalibrationResult:
        """The smallest noise multiplier certified (epsilon, delta)-DP (conservative)."""
        question = self.ask("calibrate", scheme, strategy, epsilon=epsilon, delta=delta)
        return question.timed(self._calibrate)

    def delta_curve(
        self,
        scheme: SamplingScheme,
        strategy: Strategy,
        sigma: float,
        epsilons: Sequence[float],
        failure_probability: float = DEFAULT_CURVE_FAILURE,
    ) -> CurveResult:
        """delta(eps) on the increasing grid ``epsilons``, bounds that hold **together**
        (docs/math.md §7, §7.1): for exact and proven routes always, for Monte Carlo except
        with the result's ``failure_probability`` (``failure_probability`` is that budget
        where the accountant spends one; the per-point route sums its points' own)."""
        from minsep.framework.compose import check_epsilon_grid

        owner = f"{type(self).__name__}.delta_curve"
        grid = check_epsilon_grid(owner, epsilons)
        beta = float(
            check_range(
                owner,
                "failure_probability",
                failure_probability,
                low=0.0,
                high=1.0,
                low_open=True,
                high_open=True,
            )
        )
        question = self.ask("delta_curve", scheme, strategy, sigma=sigma)
        return question.timed(lambda q: self._delta_curve(q, grid, beta))

    def _delta_curve(
        self, question: Question, epsilons: tuple[float, ...], failure_probability: float
    ) -> CurveResult:
        """:meth:`delta_curve` by :meth:`_delta` at every grid point: each certified delta
        holds except with its own failure probability, so all hold together except with
        their sum (union bound), which the result reports. An accountant that bounds the
        curve simultaneously from one sample (Monte Carlo) overrides this."""
        from minsep.framework.evidence import MonteCarloEvidence
        from minsep.framework.results import CurveResult

        answers = [self._delta(attrs.evolve(question, epsilon=e)) for e in epsilons]
        first = answers[0]
        return CurveResult(
            **question.provenance(first.method),
            notes=tuple(dict.fromkeys(n for a in answers for n in a.notes)),
            epsilons=epsilons,
            delta=tuple(a.delta for a in answers),
            certified_delta=tuple(a.certified_delta for a in answers),
            sigma=question.sigma,
            failure_probability=min(math.fsum(a.failure_probability for a in answers), 1.0),
            monte_carlo=(  # the draws of the first point; its verification is not the curve's
                None
                if first.monte_carlo is None
                else MonteCarloEvidence(
                    samples=first.monte_carlo.samples,
                    seed=first.monte_carlo.seed,
                    backend=first.monte_carlo.backend,
                    kernels=first.monte_carlo.kernels,
                    chunk_size=first.monte_carlo.chunk_size,
                )
            ),
        )

    @abstractmethod
    def _epsilon(self, question: Question) -> EpsilonResult:
        """:meth:`epsilon` for a checked, supported question (``question.sigma``,
        ``question.delta``)."""

    @abstractmethod
    def _delta(self, question: Question) -> DeltaResult:
        """:meth:`delta` for a checked, supported question (``question.sigma``,
        ``question.epsilon``)."""

    @abstractmethod
    def _calibrate(self, question: Question) -> CalibrationResult:
        """:meth:`calibrate` for a checked, supported question (``question.epsilon``,
        ``question.delta``)."""
