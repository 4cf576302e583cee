"""What the families' CUDA drivers share (cupy path): compiling a source once, float64 operands
with their strides, and launching one thread per sample in batches whose scratch stays bounded.

Each family's kernel takes its own operands, then ``out, row0, rows, ring``: thread ``local``
of a launch writes ``out[row0 + local]`` and owns the scratch ``ring[local + j * rows]``.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

#: Threads per block of the kernels.
THREADS = 128
#: Bytes of ring scratch per launch (rows are batched to stay below it).
RING_BYTES = 1 << 28


@functools.cache
def compiled(source: str, name: str) -> Any:  # pragma: no cover - needs a GPU
    """The function ``name`` of the CUDA ``source`` (compiled once per process)."""
    import cupy

    module = cupy.RawModule(code=source, options=("--std=c++14",))
    return module.get_function(name)


def float64_rows(values: Any, xp: Any) -> tuple[Any, np.int64, np.int64]:
    """``(values as float64, row stride, column stride)`` (strides in elements)."""
    values = values if values.dtype == xp.float64 else values.astype(xp.float64)
    item = values.itemsize
    return values, np.int64(values.strides[0] // item), np.int64(values.strides[1] // item)


def signal_rows(signal: Any, values: Any, xp: Any) -> tuple[Any, np.int64, np.int64, np.int32]:
    """:func:`float64_rows` of a dense signal and whether there is one (None: ``values`` stand
    in, never read)."""
    has_signal = signal is not None
    rows = float64_rows(signal if has_signal else values, xp)
    return (*rows, np.int32(has_signal))


def launch(kernel: Any, rows: int, ring_per_row: int, operands: tuple[Any, ...], xp: Any) -> Any:
    """Run ``kernel(operands..., out, row0, count, ring)`` over ``rows`` samples, one thread
    each, in batches of at most ``RING_BYTES`` of float64 scratch (``ring_per_row`` values per
    sample); return ``out`` (float64, one value per sample)."""
    out = xp.empty(rows, dtype=xp.float64)
    batch = max(1, min(rows, RING_BYTES // (8 * ring_per_row)))
    ring = xp.empty(ring_per_row * batch, dtype=xp.float64)
    for row0 in range(0, rows, batch):
        count = min(batch, rows - row0)
        blocks = (count + THREADS - 1) // THREADS
        kernel((blocks,), (THREADS,), (*operands, out, np.int32(row0), np.int32(count), ring))
    return out
