"""What every built-in scheme shares: population handling, ``from_rate`` and the hooks.

Each built-in scheme subclasses :class:`SchemeBase` and writes one generator,
:meth:`SchemeBase.generate_batches`, which draws the *pre-truncation* sample of each step, asks
an optional ``keep`` callback which part of it is realised, and yields the realised batch. The
scheme's own state (who is barred, docs/math.md §3 and §6) follows the pre-truncation sample, so the
truncation wrapper (:mod:`minsep.schemes.truncated`) drives any scheme through the public hook
:meth:`SchemeBase.sample_batches` without knowing its type; :meth:`SchemeBase.batches` is the
same generator with nothing dropped.

The accounting hooks ``truncated_loss_model`` and ``truncated_dp_event`` let the wrapper ask its
base for the accounting of the truncated variant; by default there is none.
"""

from __future__ import annotations

import operator
import os
from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError, NotAccountableError
from minsep.framework.interfaces import SamplingScheme, Strategy
from minsep.framework.validation import check_range

if TYPE_CHECKING:
    from dp_accounting.dp_event import DpEvent

    from minsep.framework.interfaces import PrivacyLossModel

#: ``keep(sample) -> realised``: maps a step's pre-truncation sample to its realised batch.
Keep = Callable[[np.ndarray], np.ndarray]


def dataset_size(population: Any, owner: str) -> int:
    """The number of examples of ``population``: an int, or anything with ``len``.

    Raises ConfigurationError naming ``population`` when it is neither or is empty.
    """
    if isinstance(population, bool | str | bytes):
        raise ConfigurationError(
            f"{owner}.population = {population!r} is invalid: must be a dataset size >= 1 or a "
            "sized collection"
        )
    try:
        size = operator.index(population)
    except TypeError:
        try:
            size = len(population)
        except TypeError:
            raise ConfigurationError(
                f"{owner}.population = {population!r} is invalid: must be a dataset size >= 1 "
                "or a sized collection"
            ) from None
    check_range(owner, "population", int(size), low=1, integer=True)
    return int(size)


#: Bytes a step of :meth:`BatchScheme.batches` holds per example of the population (a
#: float64 draw, a mask and the scheme's state arrays): an upper estimate for the refusal below.
BYTES_PER_EXAMPLE = 24


def physical_memory() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - Windows
        return None


def check_population_fits(size: int, owner: str, memory: int | None = None) -> int:
    """``size``, or a ConfigurationError naming ``population`` when the batches of ``size``
    examples would need more than the machine's physical memory ``memory`` (default
    :func:`physical_memory`): each step draws over the whole population."""
    memory = physical_memory() if memory is None else memory
    if memory is not None and size * BYTES_PER_EXAMPLE > memory:
        largest = memory // BYTES_PER_EXAMPLE
        raise ConfigurationError(
            f"{owner}.population = {size!r} is invalid: each step draws over the whole "
            f"population, about {BYTES_PER_EXAMPLE} bytes per example "
            f"({size * BYTES_PER_EXAMPLE / 2**30:,.0f} GiB), more than this machine's "
            f"{memory / 2**30:,.0f} GiB of memory: must be in [1, {largest:,}]",
            parameter="population",
        )
    return size


def boolean(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """attrs validator: a real ``bool`` (ConfigurationError naming the field otherwise)."""
    if not isinstance(value, bool | np.bool_):
        raise ConfigurationError(
            f"{type(instance).__name__}.{attribute.name} = {value!r} is invalid: must be True "
            "or False"
        )


def check_generator(rng: Any, owner: str) -> np.random.Generator:
    """Require a :class:`numpy.random.Generator` (seeded by the caller, for reproducibility)."""
    if not isinstance(rng, np.random.Generator):
        raise ConfigurationError(
            f"{owner}.rng = {rng!r} is invalid: must be a numpy.random.Generator, e.g. "
            "numpy.random.default_rng(seed)"
        )
    return rng


def as_batch(indices: np.ndarray, population_size: int | None = None) -> np.ndarray:
    """A batch in canonical form: sorted int64 indices (distinct, all < ``population_size``).

    Large batches are sorted by marking a boolean mask over the population (O(N)), which
    beats a comparison sort once the batch holds more than about N/64 examples.
    """
    indices = np.asarray(indices, dtype=np.int64)
    if population_size is not None and indices.size * 64 > population_size:
        mask = np.zeros(population_size, dtype=bool)
        mask[indices] = True
        return np.flatnonzero(mask).astype(np.int64, copy=False)
    return np.sort(indices)


class SchemeBase(SamplingScheme):
    """Base of the built-in schemes (attrs subclasses supply the public fields).

    Subclasses implement :meth:`generate_batches` (and :meth:`prepare_population` when the
    population is not just a dataset size); ``batches``, the truncation hook
    :meth:`sample_batches` and the option checking of ``from_rate`` come from here.
    """

    #: True when the scheme's accounting rests on an unproven conjecture (Algorithm 4).
    conjectured: ClassVar[bool] = False

    def prepare_population(self, population: Any) -> Any:
        """Validate ``population`` and return what :meth:`generate_batches` works on.

        Default: the dataset size N (an int, or ``len`` of a sized collection) whose
        per-step arrays fit in this machine's memory (:func:`check_population_fits`).
        """
        owner = type(self).__name__
        return check_population_fits(dataset_size(population, owner), owner)

    @abstractmethod
    def generate_batches(
        self, prepared: Any, rng: np.random.Generator, keep: Keep | None
    ) -> Iterator[np.ndarray]:
        """Generator of the batches given the prepared population (contract: sample_batches)."""

    def sample_batches(
        self, population: Any, rng: np.random.Generator, keep: Keep | None = None
    ) -> Iterator[np.ndarray]:
        """Yield the realised batch of each of the ``n_steps`` steps.

        Each step draws its pre-truncation sample (sorted int64 indices), passes it to
        ``keep`` (when given) and yields what ``keep`` returns. The scheme's state, e.g. which
        examples are barred, is updated from the pre-truncation sample, so examples that
        ``keep`` drops stay barred (docs/math.md §6). ``keep`` may draw from ``rng``. The population
        and ``rng`` are checked here, before the first batch is requested.
        """
        prepared = self.prepare_population(population)
        check_generator(rng, type(self).__name__)
        return self.generate_batches(prepared, rng, keep)

    def batches(self, population: Any, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """Yield the batch of each step as sorted int64 example indices."""
        return self.sample_batches(population, rng)

    @classmethod
    def from_rate(cls, n_steps: int, rate: float, **options: Any) -> SamplingScheme:
        """Build the scheme at participation rate ``rate`` (p0); the options are
        :meth:`parameters` (unknown or missing ones raise ConfigurationError by name)."""
        check_options(cls, options)
        factory: Any = cls
        scheme: SamplingScheme = factory(n_steps=n_steps, rate=rate, **options)
        return scheme

    def truncated_loss_model(
        self, strategy: Strategy, dataset_size: int, max_batch_size: int
    ) -> PrivacyLossModel:
        """The Monte Carlo loss model of this scheme truncated to ``max_batch_size``."""
        raise NotAccountableError(
            f"scheme {self.name!r} has no Monte Carlo loss model under truncation"
        )

    def truncated_dp_event(
        self, strategy: Strategy, sigma: float, dataset_size: int, max_batch_size: int
    ) -> DpEvent:
        """The exact dp_accounting event of this scheme truncated to ``max_batch_size``."""
        raise NotAccountableError(f"scheme {self.name!r} has no exact PLD event under truncation")


def check_options(
    cls: type[SamplingScheme], options: dict[str, Any], passed_on: tuple[str, ...] = ()
) -> None:
    """Raise ConfigurationError for options that are not among ``cls.parameters()`` (or the
    ``passed_on`` options the scheme hands to another, e.g. a truncated scheme's base) and for
    required parameters that are missing, naming them and listing the scheme's parameters."""
    declared = cls.parameters()
    allowed = [p.name for p in declared] + list(passed_on)
    name = getattr(cls, "registry_name", cls.__name__)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ConfigurationError(
            f"{name}.from_rate option(s) {', '.join(repr(u) for u in unknown)} are invalid: "
            f"must be among {sorted(allowed)}",
            parameter=unknown[0],
        )
    missing = [p for p in declared if p.required and p.name not in options]
    if missing:
        raise ConfigurationError(
            f"{name}.{missing[0].name} = <missing> is invalid: must be given ({name}.from_rate "
            f"needs the option(s) {', '.join(repr(p.name) for p in missing)}; its options: "
            f"{', '.join(p.name for p in declared)}; see `minsep list schemes`)",
            parameter=missing[0].name,
        )
