"""Multi-attribution b-min-sep subsampling: Algorithm 3 and the conjectured Algorithm 4.

docs/math.md §5, paper §6. Batches are drawn over a public :class:`AttributionGraph`. Each step,
every example enters a holding set S_i independently with probability p. An example of S_i is
excluded when it shares a user with an example of S_{i-b+1..i-1} (Algorithm 3) or of the
realised batches B_{i-b+1..i-1} (Algorithm 4); B_i is S_i minus the excluded examples. So no
user participates twice within b steps, though one participation may carry up to k_u of its
examples.

Accounting (Algorithm 3, Theorem 6.1): the single-user process ``x_i ~ Binomial(k_u, p)`` when
none of ``x_{i-b+1..i-1}`` is positive dominates, for any graph whose users have at most k_u
examples. Warm start is a burn-in of ``burn_in`` unused steps and is accounted as cold start
(a post-processing of it). Algorithm 4 is only *conjectured* to be dominated by the same
process (paper §6.3): it is flagged ``conjectured = True`` and warns when accounted.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError, InfeasibleError
from minsep.framework.interfaces import PrivacyLossModel, SamplingScheme, Strategy
from minsep.framework.parameters import Parameter
from minsep.framework.registries import schemes
from minsep.framework.validation import integer, positive_int, probability
from minsep.framework.validation import rate as rate_validator
from minsep.framework.validation import steps as steps_validator
from minsep.schemes import _accounting as acc
from minsep.schemes._sampling import poisson_subset
from minsep.schemes.attribution import AttributionGraph
from minsep.schemes.base import Keep, SchemeBase, as_batch, check_options

_RATE_SLACK = 1e-12


class ConjectureWarning(UserWarning):
    """Accounting that rests on an unproven conjecture (Algorithm 4, paper §6.3)."""


def example_graph() -> AttributionGraph:
    """A small deterministic graph (200 examples, 1-3 of 150 users each, k_u = 4)."""
    rng = np.random.default_rng(6)
    lists = [rng.choice(150, size=rng.integers(1, 4), replace=False) for _ in range(300)]
    graph, _ = AttributionGraph.from_lists(lists, n_users=150).bound_contributions(4, rng)
    return graph.subset(np.arange(200))


@attrs.frozen
class MultiAttributionBase(SchemeBase):
    """Shared fields and sampler of Algorithms 3 and 4 (see the subclasses).

    Attributes:
        n_steps: number of training steps n (the burn-in steps come on top).
        rate: the marginal participation rate p0 the probability was chosen for (used to
            compare schemes at equal batch size; the sampler and accounting use
            ``probability``). Must satisfy p0 <= min(p, 1/b).
        probability: the holding-set probability p in (0, 1].
        min_sep: b; no user participates twice within b consecutive steps.
        max_user_examples: k_u; ``batches`` refuses a graph with a user having more examples.
        burn_in: unused steps run before the first batch (warm start, accounted as cold).
    """

    #: ``"sampled"`` (Algorithm 3) or ``"batch"`` (Algorithm 4): which sets exclude users.
    exclusion: ClassVar[str] = "sampled"

    n_steps: int = attrs.field(validator=steps_validator())
    rate: float = attrs.field(validator=rate_validator())
    probability: float = attrs.field(validator=probability())
    min_sep: int = attrs.field(validator=positive_int())
    max_user_examples: int = attrs.field(validator=positive_int())
    burn_in: int = attrs.field(default=0, validator=integer(low=0))

    def __attrs_post_init__(self) -> None:
        owner = type(self).__name__
        bound = min(self.probability, 1.0 / self.min_sep)
        if self.rate > bound * (1.0 + _RATE_SLACK):
            raise InfeasibleError(
                f"{owner}.rate = {self.rate!r} is infeasible with probability = "
                f"{self.probability!r} and min_sep = {self.min_sep}: must be <= "
                f"min(probability, 1/min_sep) = {bound!r}"
            )

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """``min_sep``, ``max_user_examples`` (required), ``probability`` or ``graph`` (one of
        them), ``burn_in`` (default: see ``from_rate``)."""
        fields = {p.name: p for p in super().parameters()}
        return (
            fields["min_sep"],
            fields["max_user_examples"],
            attrs.evolve(fields["probability"], required=False),
            Parameter(
                name="graph",
                kind="object",
                required=False,
                help="an AttributionGraph: p is then solved so that E|B| = N p0 after burn-in "
                "(instead of probability)",
            ),
            attrs.evolve(fields["burn_in"], default=None),
        )

    @classmethod
    def example(cls) -> SamplingScheme:
        return cls(
            n_steps=12,
            rate=0.03,
            probability=0.06,
            min_sep=3,
            max_user_examples=4,
            burn_in=2,
        )

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        good = {
            "n_steps": 10,
            "rate": 0.05,
            "probability": 0.1,
            "min_sep": 2,
            "max_user_examples": 2,
        }
        return [
            ({**good, "n_steps": 0}, "n_steps"),
            ({**good, "probability": 1.5}, "probability"),
            ({**good, "rate": 0.0}, "rate"),
            ({**good, "rate": 0.2}, "rate"),
            ({**good, "min_sep": 0}, "min_sep"),
            ({**good, "max_user_examples": 0}, "max_user_examples"),
            ({**good, "burn_in": -1}, "burn_in"),
        ]

    def example_population(self) -> AttributionGraph:
        return example_graph()

    @property
    def min_separation(self) -> int:
        return self.min_sep

    @property
    def max_step_contribution(self) -> float:
        """k_u: one user's participation carries up to ``max_user_examples`` examples."""
        return float(self.max_user_examples)

    def prepare_population(self, population: Any) -> AttributionGraph:
        """The population must be an AttributionGraph obeying k_u (see :meth:`check_graph`)."""
        return self.check_graph(population)

    def check_graph(self, population: Any) -> AttributionGraph:
        """The population as an AttributionGraph whose users have at most k_u examples."""
        owner = type(self).__name__
        if not isinstance(population, AttributionGraph):
            raise ConfigurationError(
                f"{owner}.population = {type(population).__name__} is invalid: must be an "
                "AttributionGraph (examples -> users)"
            )
        k = population.max_user_examples
        if k > self.max_user_examples:
            raise InfeasibleError(
                f"{owner}.max_user_examples = {self.max_user_examples} is violated by the graph: "
                f"a user has {k} examples; bound contributions first, e.g. "
                f"graph.bound_contributions({self.max_user_examples}, rng)"
            )
        return population

    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Run ``burn_in`` unused steps, then yield ``n_steps`` batches.

        ``keep`` (truncation) only thins the yielded batch: exclusions follow the holding sets
        (Algorithm 3) or the pre-truncation batches (Algorithm 4).
        """
        graph: AttributionGraph = prepared
        b, p = self.min_sep, self.probability
        everyone = np.arange(graph.n_examples, dtype=np.int64)
        free_at = np.zeros(graph.n_users, dtype=np.int64)  # a user is blocked while > step
        by_batch = self.exclusion == "batch"
        for step in range(self.burn_in + self.n_steps):
            sample = as_batch(poisson_subset(rng, everyone, p), graph.n_examples)
            batch = sample
            if b > 1 and sample.size:
                users, counts = graph.gather_users(sample)
                starts = np.cumsum(counts) - counts
                excluded = np.maximum.reduceat(free_at[users], starts) > step
                batch = sample[~excluded]
                blocking = users[np.repeat(~excluded, counts)] if by_batch else users
                free_at[blocking] = step + b
            if step >= self.burn_in:
                yield batch if keep is None else keep(batch)

    # -- accounting -------------------------------------------------------------------------

    def _require_bands(self, strategy: Strategy) -> None:
        why = "the single-user recursion of Theorem 6.1 needs disjoint blocks"
        acc.require_bands_within_min_sep(self, strategy, why)

    def _loss_arguments(self, strategy: Strategy) -> dict[str, Any]:
        self._require_bands(strategy)
        return {
            "coefficients": acc.coefficients(strategy),
            "n_steps": self.n_steps,
            "min_sep": self.min_sep,
            "probability": self.probability,
            "max_user_examples": self.max_user_examples,
        }


def _rate_at(
    probability: float, lookbacks: np.ndarray, sizes: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """``sum_e w_e p (1-p)^(m_e L)`` for each lookback L (weights w over distinct m_e)."""
    powers = np.outer(lookbacks, sizes).astype(np.float64)
    return np.asarray(probability * ((1.0 - probability) ** powers @ weights), dtype=np.float64)


@schemes.register("multi_attribution")
@attrs.frozen
class MultiAttribution(MultiAttributionBase):
    """Multi-attribution b-min-sep (Algorithm 3): exclusion by the sampled holding sets.

    The holding sets are i.i.d. across steps, so ``P(e in B_i) = p (1-p)^(m_e L)`` with m_e the
    number of examples sharing a user with e (e included) and ``L = min(b-1, steps before i)``:
    the process is stationary once ``burn_in >= b - 1``.
    """

    exclusion: ClassVar[str] = "sampled"

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Build at participation rate p0 = ``rate``.

        Options: ``min_sep``, ``max_user_examples`` (required), ``burn_in`` (default b - 1,
        which makes the batches exactly stationary), and either ``probability`` or ``graph``
        (an AttributionGraph: p is then solved from the closed form so that the expected
        batch size after burn-in is N·p0; InfeasibleError if no p reaches it).
        """
        return _from_rate(
            cls, n_steps, rate, options, default_burn_in=None, solve=_solve_closed_form
        )

    def expected_batch_sizes(self, graph: AttributionGraph) -> np.ndarray:
        """E|B_i| for each training step i, from the closed form above."""
        graph = self.check_graph(graph)
        sizes, counts = np.unique(graph.neighbourhood_sizes(), return_counts=True)
        return _rate_at(self.probability, self._lookbacks(), sizes, counts.astype(np.float64))

    def _lookbacks(self) -> np.ndarray:
        """L_i = min(b - 1, steps run before training step i)."""
        return np.minimum(self.min_sep - 1, self.burn_in + np.arange(self.n_steps))

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """The dominating single-user recursion (docs/math.md §5); bands <= b, cold start."""
        from minsep.schemes.multi_attribution.loss import MultiAttributionLossModel

        model: PrivacyLossModel = MultiAttributionLossModel(**self._loss_arguments(strategy))
        return model


@schemes.register("multi_attribution_participation")
@attrs.frozen
class MultiAttributionParticipation(MultiAttributionBase):
    """Multi-attribution b-min-sep by realised batches (Algorithm 4) -- CONJECTURED accounting.

    Warning: the paper (§6.3) only conjectures that Algorithm 3's accounting bounds this
    scheme; the coupling proof of Theorem 6.1 does not apply. ``conjectured`` is True and
    :meth:`loss_model` emits a :class:`ConjectureWarning`.
    """

    exclusion: ClassVar[str] = "batch"
    conjectured: ClassVar[bool] = True

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """Those of ``multi_attribution`` and ``calibration_seed`` (the bisection's seed)."""
        seed = Parameter(
            name="calibration_seed",
            kind="int",
            required=False,
            default=0,
            help="seed of the simulated batch sizes that solve p from a graph",
        )
        return (*super().parameters(), seed)

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Build at participation rate p0 = ``rate``.

        Options as for ``multi_attribution``; with ``graph``, p is found by bisection on the
        simulated mean batch size (common random numbers, seed ``calibration_seed``, default
        0, over the n training steps), as the paper does (§7.3). ``burn_in`` defaults to
        ``max(b - 1, ceil(4 / rate))`` since this chain has no closed-form stationary law.
        """
        default = _default_burn_in(options.get("min_sep"))
        if isinstance(rate, int | float) and 0 < rate <= 1:  # else the constructor refuses it
            default = max(default, math.ceil(4.0 / rate))
        return _from_rate(
            cls, n_steps, rate, options, default_burn_in=default, solve=_solve_by_simulation
        )

    def loss_model(self, strategy: Strategy) -> PrivacyLossModel:
        """Algorithm 3's recursion, valid here only under the paper's conjecture (warns)."""
        warnings.warn(
            "multi_attribution_participation (Algorithm 4) is accounted with Algorithm 3's "
            "dominating process; this rests on an unproven conjecture (Dong & Ganesh §6.3)",
            ConjectureWarning,
            stacklevel=2,
        )
        from minsep.schemes.multi_attribution.loss import ConjecturedMultiAttributionLossModel

        model: PrivacyLossModel = ConjecturedMultiAttributionLossModel(
            **self._loss_arguments(strategy)
        )
        return model


def _default_burn_in(min_sep: Any) -> int:
    """b - 1 for a valid min-sep (else 0, leaving the error to the constructor)."""
    return min_sep - 1 if isinstance(min_sep, int) and min_sep >= 1 else 0


def _from_rate(
    cls: type[MultiAttributionBase],
    n_steps: int,
    rate: float,
    options: dict[str, Any],
    default_burn_in: int | None,
    solve: Callable[[Any, AttributionGraph, int], float],
) -> SamplingScheme:
    owner = cls.__name__
    check_options(cls, options)
    options = dict(options)
    graph = options.pop("graph", None)
    seed = options.pop("calibration_seed", 0)
    default = _default_burn_in(options["min_sep"]) if default_burn_in is None else default_burn_in
    options.setdefault("burn_in", default)
    given = options.pop("probability", None)
    if (given is None) == (graph is None):
        raise ConfigurationError(
            f"{owner}.from_rate needs exactly one of the options 'probability' and 'graph' "
            "(the rate -> probability map depends on the attribution graph)"
        )
    if given is not None:
        return cls(n_steps=n_steps, rate=rate, probability=given, **options)
    # Validate everything but the probability before calibrating.
    probe = cls(n_steps=n_steps, rate=rate, probability=1.0, **options)
    graph = probe.check_graph(graph)
    return attrs.evolve(probe, probability=solve(probe, graph, int(seed)))


def _solve_closed_form(scheme: MultiAttribution, graph: AttributionGraph, seed: int) -> float:
    """p whose mean participation rate over the training steps (closed form) is p0."""
    sizes, counts = np.unique(graph.neighbourhood_sizes(), return_counts=True)
    weights = counts / counts.sum()
    lookbacks, repeats = np.unique(scheme._lookbacks(), return_counts=True)
    step_weights = repeats / repeats.sum()

    def rate_at(p: float) -> float:
        return float(step_weights @ _rate_at(p, lookbacks, sizes, weights))

    return _solve_increasing(scheme, rate_at, np.linspace(0.0, 1.0, 4097))


def _solve_by_simulation(scheme: MultiAttributionBase, graph: AttributionGraph, seed: int) -> float:
    """p whose simulated mean batch size over the training steps is N·p0 (bisection)."""

    def rate_at(p: float) -> float:
        if p <= 0.0:
            return 0.0
        trial = attrs.evolve(scheme, probability=p, rate=min(scheme.rate, p))
        rng = np.random.default_rng(seed)
        total = sum(batch.size for batch in trial.batches(graph, rng))
        return total / (trial.n_steps * graph.n_examples)

    return _solve_increasing(scheme, rate_at, np.linspace(0.0, 1.0, 21), iterations=40)


def _solve_increasing(
    scheme: MultiAttributionBase,
    rate_at: Any,
    grid: np.ndarray,
    iterations: int | None = None,
) -> float:
    """The root of ``rate_at(p) = p0`` on [0, argmax over the grid] (brentq or bisection)."""
    values = np.array([rate_at(float(p)) for p in grid])
    top = int(np.argmax(values))
    if scheme.rate > values[top]:
        raise InfeasibleError(
            f"{type(scheme).__name__}.rate = {scheme.rate!r} is infeasible on this graph with "
            f"min_sep = {scheme.min_sep} and burn_in = {scheme.burn_in}: the largest "
            f"attainable participation rate is about {float(values[top])!r}"
        )
    high = float(grid[top])
    if iterations is None:
        if values[top] == scheme.rate:
            return high
        from scipy.optimize import brentq  # lazy: ~0.3 s to import

        return float(brentq(lambda p: rate_at(p) - scheme.rate, 0.0, high, xtol=1e-15))
    low = 0.0
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        if rate_at(mid) < scheme.rate:
            low = mid
        else:
            high = mid
    return high
