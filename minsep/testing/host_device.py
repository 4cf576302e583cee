"""The CUDA path without a GPU: numpy stands in for cupy and each kernel runs on the host.

:func:`host_device` yields a backend named ``"cupy"`` with the ``"cuda"`` kernel set whose
namespace is numpy (:func:`numpy_as_cupy`; ``import cupy`` inside the block gets it too). A
driver launched there runs its kernel's own source, compiled as C++ with ``-DMINSEP_HOST``
(:data:`~minsep.schemes.kernels.gpu.PREAMBLE`), one call per thread of the launch's grid, with
the thread index set as CUDA would set it; every launch is checked against the kernel's
parameter list first, as on a GPU. What this exercises: the drivers' operands (types, strides,
layouts), the launcher's batching and the ring scratch, the kernels' arithmetic and thread
guard. What it cannot: cupy itself, the device compiler's code generation (NVRTC compiles the
same sources in ``tests/unit/schemes/kernels/test_cuda_sources.py``), timing.

Needs a C++ compiler (``c++``, ``g++`` or ``clang++``); :func:`cxx_compiler` says which.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import Backend, forget_cupy_backends, numpy_backend
from minsep.schemes.kernels import gpu
from minsep.schemes.kernels.cuda_source import KernelParameter

_SCALARS: dict[str, type[Any]] = {
    "double": ctypes.c_double,
    "int": ctypes.c_int,
    "long long": ctypes.c_longlong,
}


def cxx_compiler() -> str | None:
    """The path of a C++ compiler on PATH, or None."""
    for name in ("c++", "g++", "clang++"):
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def compile_on_host(kernel: gpu.CudaKernel, folder: Path) -> ctypes.CDLL:
    """``kernel.source`` compiled as C++14 with ``-DMINSEP_HOST -Wall -Werror`` into a shared
    library in ``folder`` (named by the source's hash, so that a second call reuses it)."""
    compiler = cxx_compiler()
    if compiler is None:
        raise RuntimeError("the host stand-in of the GPU needs a C++ compiler (c++, g++, clang++)")
    digest = hashlib.sha256(kernel.source.encode()).hexdigest()[:16]
    library = folder / f"{kernel.name}-{digest}.so"
    if not library.exists():
        source = folder / f"{kernel.name}-{digest}.cpp"
        source.write_text(kernel.source)
        command = [compiler, "-DMINSEP_HOST", "-std=c++14", "-O2", "-shared", "-fPIC", "-Wall",
                   "-Werror", "-o", str(library), str(source)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{kernel.name} does not compile on the host:\n{done.stderr}")
    return ctypes.CDLL(str(library))


def _c_value(parameter: KernelParameter, value: Any) -> Any:
    if parameter.pointer:
        return ctypes.c_void_p(np.asarray(value).ctypes.data)
    return _SCALARS[parameter.c_type](value.item())


@attrs.frozen(eq=False)
class HostKernel:
    """A launcher of ``kernel`` on the host: ``(grid, block, args)`` as cupy takes them, the
    kernel called once per thread with ``blockDim``, ``blockIdx`` and ``threadIdx`` set."""

    kernel: gpu.CudaKernel
    library: ctypes.CDLL

    def __call__(self, grid: Sequence[int], block: Sequence[int], args: Sequence[Any]) -> None:
        if len(grid) != 1 or len(block) != 1:
            raise ValueError(f"the host stand-in runs 1-d launches only, got {grid}, {block}")
        function = getattr(self.library, self.kernel.name)
        function.restype = None
        values = [_c_value(p, a) for p, a in zip(self.kernel.parameters, args, strict=True)]
        block_dim, block_index, thread_index = (
            ctypes.c_uint.in_dll(self.library, name)
            for name in ("blockDim", "blockIdx", "threadIdx")
        )
        block_dim.value = int(block[0])
        for b in range(int(grid[0])):
            block_index.value = b
            for t in range(int(block[0])):
                thread_index.value = t
                function(*values)


def numpy_as_cupy() -> types.ModuleType:
    """A module named ``cupy`` whose attributes are numpy's (what the drivers call: ``asarray``,
    ``ascontiguousarray``, ``zeros``, ``empty``, ``fft``, the scalar types), plus what
    :func:`~minsep.framework.backend.cupy_backend` reads: ``asnumpy``, one device
    (``cuda.runtime.getDeviceCount()``) and ``random.Generator(random.XORWOW(seed))``, here
    numpy's SFC64 (a GPU backend's stream is its own, as cupy's is)."""
    module = types.ModuleType("cupy", "numpy standing in for cupy (minsep.testing.host_device)")

    def attribute(name: str) -> Any:
        return getattr(np, name)

    module.__getattr__ = attribute  # type: ignore[method-assign]
    module.asnumpy = np.asarray  # type: ignore[attr-defined]
    module.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1)
    )
    module.random = types.SimpleNamespace(  # type: ignore[attr-defined]
        Generator=np.random.Generator, XORWOW=np.random.SFC64
    )
    return module


@contextlib.contextmanager
def host_device(folder: Path) -> Iterator[Backend]:
    """A ``"cupy"`` backend with the ``"cuda"`` kernels, run on the host (module docstring),
    drawing with the host backend's generator (so that its draws can be compared with the
    host's); compiled kernels are kept in ``folder``. Within the block ``import cupy`` gives
    the stand-in and ``get_backend("cupy")`` a backend over it (with its own stream, as on a
    GPU); both are restored after it."""
    stand_in = numpy_as_cupy()
    libraries: dict[str, HostKernel] = {}

    def compiler(kernel: gpu.CudaKernel) -> HostKernel:
        if kernel.source not in libraries:
            libraries[kernel.source] = HostKernel(kernel, compile_on_host(kernel, folder))
        return libraries[kernel.source]

    host = numpy_backend("array")
    backend = Backend("cupy", stand_in, host.rng, np.asarray, kernels="cuda")
    previous = sys.modules.get("cupy")
    sys.modules["cupy"] = stand_in
    forget_cupy_backends()  # get_backend("cupy") builds over the stand-in within the block
    try:
        with gpu.compiled_by(compiler):
            yield backend
    finally:
        if previous is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = previous
        forget_cupy_backends()  # and never after it


__all__ = [
    "HostKernel",
    "compile_on_host",
    "cxx_compiler",
    "host_device",
    "numpy_as_cupy",
]
