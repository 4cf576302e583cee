"""The scheme's batches as a ``DataLoader`` (step i of the loader is batch B_i of the scheme).

:class:`ResumableBatchSampler` is the scheme's batch sampler
(:class:`~minsep.schemes.torch_adapter.SchemeBatchSampler`) able to start a pass after its
first ``skip`` batches, so a resumed run continues the same batches. An empty batch (possible
under Poisson-like sampling) is collated to empty tensors shaped like the dataset's items, so
the optimizer still takes the noise-only step the accountant counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import torch
from torch.utils.data import DataLoader, default_collate
from torch.utils.data import Dataset as TorchDataset

from minsep.framework.validation import integer
from minsep.schemes.torch_adapter import SchemeBatchSampler

__all__ = ["ResumableBatchSampler", "collate_allowing_empty", "scheme_loader"]


@attrs.define
class ResumableBatchSampler:
    """The batches of ``sampler``'s pass from batch ``skip`` on (``skip`` 0: all of them)."""

    sampler: SchemeBatchSampler
    skip: int = attrs.field(default=0, validator=integer(low=0))

    def __iter__(self) -> Iterator[list[int]]:
        for index, batch in enumerate(self.sampler):
            if index >= self.skip:
                yield batch

    def __len__(self) -> int:
        return max(len(self.sampler) - self.skip, 0)


def collate_allowing_empty(
    dataset: Any, collate: Callable[[list[Any]], Any] | None = None
) -> Callable[[list[Any]], Any]:
    """``collate`` (default ``default_collate``), and for an empty batch the collation of one
    item cut to length 0 (empty tensors of the right trailing shape and dtype)."""
    base = collate or default_collate

    def collated(items: list[Any]) -> Any:
        if items:
            return base(items)
        return torch.utils._pytree.tree_map(_empty, base([dataset[0]]))

    return collated


def _empty(value: Any) -> Any:
    return value[:0] if isinstance(value, torch.Tensor) else value


def scheme_loader(
    data: TorchDataset[Any] | DataLoader[Any],
    sampler: SchemeBatchSampler,
    **options: Any,
) -> DataLoader[Any]:
    """A DataLoader over ``data``'s dataset driven by ``sampler`` (resumable).

    When ``data`` is a DataLoader, its dataset, ``collate_fn``, ``num_workers``,
    ``pin_memory`` and ``worker_init_fn`` are kept and its own sampling is replaced.
    """
    kept: dict[str, Any]
    if isinstance(data, DataLoader):
        kept = {
            "collate_fn": data.collate_fn,
            "num_workers": data.num_workers,
            "pin_memory": data.pin_memory,
            "worker_init_fn": data.worker_init_fn,
        }
        dataset = data.dataset
    else:
        kept, dataset = {}, data
    kept.update(options)
    kept["collate_fn"] = collate_allowing_empty(dataset, kept.get("collate_fn"))
    return DataLoader(dataset, batch_sampler=ResumableBatchSampler(sampler), **kept)
