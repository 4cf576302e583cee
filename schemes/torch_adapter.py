"""Feed a scheme's batches to PyTorch: ``DataLoader(dataset, batch_sampler=...)``.

:class:`SchemeBatchSampler` needs no torch: a DataLoader accepts any iterable of index lists
with a ``len``. One pass over it is one run of the scheme (``n_steps`` batches); a pass is
reproducible from ``(seed, epoch)``, and :meth:`SchemeBatchSampler.set_epoch` gives later passes
fresh randomness, like ``DistributedSampler``.

Padding (truncated schemes): by default padding slots are dropped, so a batch lists only real
examples. Pass ``padding_index`` to keep the fixed size instead: each padding slot then becomes
that index (e.g. of a dummy example whose per-example gradient the trainer zeroes or masks).
Empty batches are yielded as empty lists; the DataLoader's ``collate_fn`` must accept them, and
the trainer must still take the noise-only step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import BackendUnavailableError, ConfigurationError
from minsep.framework.interfaces import SamplingScheme
from minsep.framework.validation import integer, optional
from minsep.schemes.truncated import PADDING


def _scheme(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, SamplingScheme):
        raise ConfigurationError(
            f"{type(instance).__name__}.{attribute.name} = {value!r} is invalid: must be a "
            "SamplingScheme"
        )


@attrs.define
class SchemeBatchSampler:
    """An iterable of index lists, one per step of ``scheme`` over ``population``.

    Attributes:
        scheme: the sampling scheme.
        population: what ``scheme.batches`` takes (the dataset size, or e.g. a graph).
        seed: root seed; the pass for ``epoch`` uses ``numpy.random.default_rng([seed, epoch])``.
        padding_index: None drops padding slots; an int replaces each by this index.
        epoch: the pass counter (see :meth:`set_epoch`).
    """

    scheme: SamplingScheme = attrs.field(validator=_scheme)
    population: Any
    seed: int = attrs.field(validator=integer(low=0))
    padding_index: int | None = attrs.field(default=None, validator=optional(integer(low=0)))
    epoch: int = attrs.field(default=0, validator=integer(low=0))

    def set_epoch(self, epoch: int) -> None:
        """Select the randomness of the next pass (validated like the constructor)."""
        self.epoch = epoch

    def index_batches(self) -> Iterator[np.ndarray]:
        """The int64 batches of the current pass, padding handled as configured."""
        rng = np.random.default_rng([self.seed, self.epoch])
        for batch in self.scheme.batches(self.population, rng):
            if self.padding_index is None:
                yield batch[batch != PADDING]
            else:
                yield np.where(batch == PADDING, self.padding_index, batch)

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.index_batches():
            yield batch.tolist()

    def __len__(self) -> int:
        return int(self.scheme.n_steps)


def data_loader(
    dataset: Any,
    scheme: SamplingScheme,
    *,
    seed: int,
    population: Any = None,
    padding_index: int | None = None,
    **loader_options: Any,
) -> Any:
    """A ``torch.utils.data.DataLoader`` over ``dataset`` with the scheme's batches.

    ``population`` defaults to ``len(dataset)``; other ``loader_options`` (``num_workers``,
    ``collate_fn``, ...) go to the DataLoader. Raises BackendUnavailableError without torch.
    """
    try:
        from torch.utils.data import DataLoader
    except ImportError as exc:
        raise BackendUnavailableError(
            f"the PyTorch adapter needs torch: pip install 'minsep[torch]' (import failed: {exc})"
        ) from exc
    sampler = SchemeBatchSampler(
        scheme=scheme,
        population=len(dataset) if population is None else population,
        seed=seed,
        padding_index=padding_index,
    )
    return DataLoader(dataset, batch_sampler=sampler, **loader_options)
