"""NVRTC, CUDA's runtime compiler, without a GPU: a kernel source compiled to PTX as cupy would
compile it, so that a source that does not build for the device fails in CI, not on the first
GPU run.

NVRTC needs no device and no driver. :func:`library` finds it in the ``nvidia-cuda-nvrtc-cu12``
wheel (the ``dev`` extra on Linux) or on the system's library path; :func:`compile_to_ptx` runs
it; :func:`ptx_parameter_types` reads the parameter list of a kernel's entry in the PTX (what
the device will take, to compare with the source's parameter list).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
from collections.abc import Sequence
from pathlib import Path

from minsep.schemes.kernels.gpu import COMPILE_OPTIONS

#: The architecture the sources are compiled for: compute capability 9.0 (H100, H200).
ARCHITECTURE = "compute_90"


class NvrtcUnavailableError(RuntimeError):
    """No NVRTC library could be loaded."""


class NvrtcCompileError(RuntimeError):
    """NVRTC refused a source; the message holds its log."""


def _candidates() -> list[str]:
    paths: list[str] = []
    try:
        import nvidia.cuda_nvrtc as wheel  # the nvidia-cuda-nvrtc-cu12 wheel
    except ImportError:
        pass
    else:
        for folder in wheel.__path__:
            paths += sorted(str(p) for p in (Path(folder) / "lib").glob("libnvrtc.so*"))
            paths += sorted(str(p) for p in (Path(folder) / "bin").glob("nvrtc64*.dll"))
    system = ctypes.util.find_library("nvrtc")
    if system is not None:
        paths.append(system)
    return [p for p in paths if ".alt." not in p]


@functools.cache
def library() -> ctypes.CDLL:
    """The NVRTC library; raises :class:`NvrtcUnavailableError` (with where it looked) if none
    loads."""
    tried = _candidates()
    for path in tried:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        return lib
    raise NvrtcUnavailableError(
        "NVRTC not found (pip install nvidia-cuda-nvrtc-cu12, part of the dev extra on Linux); "
        f"tried {tried or 'no candidate'}"
    )


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _check(status: int, call: str) -> None:
    if status != 0:
        message = library().nvrtcGetErrorString(status).decode()
        raise NvrtcCompileError(f"{call}: {message}")


def compile_to_ptx(
    source: str,
    name: str = "kernel.cu",
    architecture: str = ARCHITECTURE,
    options: Sequence[str] = COMPILE_OPTIONS,
) -> str:
    """PTX of ``source`` compiled with ``options`` (by default cupy's for the kernels) for
    ``architecture``; raises
    :class:`NvrtcCompileError` with NVRTC's log when the source does not compile."""
    lib = library()
    program = ctypes.c_void_p()
    _check(
        lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None,
                               None),
        "nvrtcCreateProgram",
    )  # fmt: skip
    try:
        flags = [f"--gpu-architecture={architecture}", *options]
        array = (ctypes.c_char_p * len(flags))(*(flag.encode() for flag in flags))
        status = lib.nvrtcCompileProgram(program, len(flags), array)
        size = ctypes.c_size_t()
        _check(lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        log = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
        if status != 0:
            raise NvrtcCompileError(f"{name} does not compile for {architecture}:\n"
                                    f"{log.value.decode(errors='replace')}")  # fmt: skip
        _check(lib.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        _check(lib.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def ptx_parameter_types(ptx: str, entry: str) -> tuple[str, ...]:
    """The PTX types (``u64``, ``u32``, ``f64``, ...) of the parameters of ``.entry entry``;
    raises :class:`NvrtcCompileError` when the PTX has no such entry."""
    match = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if match is None:
        raise NvrtcCompileError(f"the PTX has no entry {entry}")
    return tuple(re.findall(r"\.param\s+\.(\w+)", match.group(1)))


__all__ = [
    "ARCHITECTURE",
    "NvrtcCompileError",
    "NvrtcUnavailableError",
    "compile_to_ptx",
    "library",
    "ptx_parameter_types",
    "version",
]
