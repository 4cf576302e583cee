"""What the families' CUDA drivers share (cupy path): declared kernels, checked launches,
float64 operands with their strides, and one thread per sample in batches whose scratch stays
bounded.

A family declares each kernel once, at import (:func:`declare`): its body, after
:data:`PREAMBLE`, and its ``extern "C"`` name. The declaration parses the parameter list
(:mod:`.cuda_source`), and every launch is checked against it before cupy sees it, so a
mistyped argument fails with a message instead of corrupting device memory.

Each family's kernel takes its own operands, then ``out, row0, rows, ring``: thread ``local``
of a launch writes ``out[row0 + local]`` and owns the scratch ``ring[local + j * rows]``.

The same source compiles on the host as C++ under ``-DMINSEP_HOST`` (:data:`PREAMBLE` turns
``__global__`` into nothing and the thread index into three variables that the caller sets,
one call per thread): :mod:`minsep.testing.host_device` runs the drivers that way, numpy
standing in for cupy, so that the whole GPU path short of the device is exercised in CI.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import numpy as np

from minsep.schemes.kernels.cuda_source import (
    KernelParameter,
    KernelSourceError,
    check_arguments,
    kernel_parameters,
)

#: Threads per block of the kernels.
THREADS = 128
#: Bytes of ring scratch per launch (rows are batched to stay below it).
RING_BYTES = 1 << 28
#: The options cupy compiles the kernels with (NVRTC).
COMPILE_OPTIONS = ("--std=c++14",)

#: What every kernel source starts with. On the device, ``DEVICE`` marks the helpers; on the
#: host (``-DMINSEP_HOST``, compiled as C++) ``__global__`` vanishes and ``blockDim``,
#: ``blockIdx``, ``threadIdx`` are variables the caller sets before each call (one per thread).
#: ``minsep_logaddexp``, the helper every kernel's log-domain recursion calls, is numpy's
#: ``logaddexp`` (an infinite larger term returned as it is).
PREAMBLE = r"""
#ifdef MINSEP_HOST
#include <math.h>
#define DEVICE static
#define __global__
struct minsep_index { unsigned int x; };
extern "C" {
struct minsep_index blockDim = {1}, blockIdx = {0}, threadIdx = {0};
}
#else
#define DEVICE __device__ static
#endif

DEVICE inline double minsep_logaddexp(double a, double b) {
    double hi = fmax(a, b);
    if (isinf(hi)) return hi;  /* -inf + -inf, or an infinite term: as numpy's logaddexp */
    return hi + log1p(exp(-fabs(a - b)));
}
"""

Launcher = Callable[[tuple[int, ...], tuple[int, ...], tuple[Any, ...]], Any]


@attrs.frozen
class CudaKernel:
    """One kernel: its whole ``source`` (:data:`PREAMBLE` and the body) and its ``extern "C"``
    ``name``; ``parameters`` are parsed from the source when it is declared."""

    source: str
    name: str
    parameters: tuple[KernelParameter, ...] = attrs.field(
        init=False,
        default=attrs.Factory(lambda self: kernel_parameters(self.source, self.name), True),
    )

    def launcher(self) -> Launcher:
        """``launcher(grid, block, args)``: checks ``args`` against :attr:`parameters`
        (:func:`~.cuda_source.check_arguments`), then launches the kernel compiled by the
        current compiler (cupy's, or a stand-in's: :func:`compiled_by`)."""
        function = _compilers[-1](self) if _compilers else _cupy_function(self)

        def launch_checked(
            grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]
        ) -> Any:
            check_arguments(self.name, self.parameters, args)
            return function(grid, block, args)

        return launch_checked


_DECLARED: dict[str, CudaKernel] = {}


def declare(body: str, name: str) -> CudaKernel:
    """The kernel ``name`` of :data:`PREAMBLE` + ``body``, recorded in :func:`declared_kernels`
    (a second declaration of a name must be of the same source)."""
    kernel = CudaKernel(PREAMBLE + body, name)
    known = _DECLARED.setdefault(name, kernel)
    if known != kernel:
        raise KernelSourceError(f"kernel {name} is declared twice with different sources")
    return kernel


def declared_kernels() -> tuple[CudaKernel, ...]:
    """Every kernel declared so far (those of the imported families), by name."""
    return tuple(_DECLARED[name] for name in sorted(_DECLARED))


_compilers: list[Callable[[CudaKernel], Launcher]] = []


@contextlib.contextmanager
def compiled_by(compiler: Callable[[CudaKernel], Launcher]) -> Iterator[None]:
    """Within the block, :meth:`CudaKernel.launcher` compiles with ``compiler`` instead of
    cupy (the host stand-in of :mod:`minsep.testing.host_device`)."""
    _compilers.append(compiler)
    try:
        yield
    finally:
        _compilers.remove(compiler)


@functools.cache
def _cupy_function(kernel: CudaKernel) -> Launcher:  # pragma: no cover - needs a GPU
    """The kernel compiled by cupy (NVRTC, once per process)."""
    import cupy

    module = cupy.RawModule(code=kernel.source, options=COMPILE_OPTIONS)
    function: Launcher = module.get_function(kernel.name)
    return function


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


def launch(
    kernel: Launcher, rows: int, ring_per_row: int, operands: tuple[Any, ...], xp: Any
) -> Any:
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
