"""Every declared CUDA kernel against its contract, without a GPU: the parameter list the drivers
are checked against (schemes/kernels/cuda_source.py), NVRTC's compilation of the source for the
device (compute capability 9.0, cupy's options) and the PTX entry's parameters, and the check
of a launch's arguments.

NVRTC comes with the ``dev`` extra on Linux (``nvidia-cuda-nvrtc-cu12``); where it does not
load, the NVRTC tests are skipped with the reason."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minsep.schemes.losses  # noqa: F401 - declares every family's kernels
from minsep.schemes.kernels import gpu
from minsep.schemes.kernels.cuda_source import (
    KernelArgumentError,
    KernelParameter,
    KernelSourceError,
    check_arguments,
    kernel_parameters,
)
from minsep.testing import nvrtc

KERNELS = gpu.declared_kernels()
FAMILY_KERNELS = {"minsep_b_min_sep", "minsep_truncated", "minsep_multi_attribution"}


def _nvrtc_or_skip() -> None:
    try:
        nvrtc.library()
    except nvrtc.NvrtcUnavailableError as exc:
        pytest.skip(str(exc))


def test_every_family_declares_its_kernel() -> None:
    assert {kernel.name for kernel in KERNELS} >= FAMILY_KERNELS


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_kernels_end_with_the_launchers_operands(kernel: gpu.CudaKernel) -> None:
    """gpu.launch appends ``out, row0, rows, ring``: every kernel must end with them."""
    tail = [(p.c_type, p.pointer) for p in kernel.parameters[-4:]]
    assert tail == [("double", True), ("int", False), ("int", False), ("double", True)]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_nvrtc_compiles_the_source_for_the_device(kernel: gpu.CudaKernel) -> None:
    _nvrtc_or_skip()
    ptx = nvrtc.compile_to_ptx(kernel.source, f"{kernel.name}.cu")
    types = nvrtc.ptx_parameter_types(ptx, kernel.name)
    by_value = {"double": {"f64"}, "int": {"u32", "s32", "b32"}, "long long": {"u64", "s64", "b64"}}
    assert len(types) == len(kernel.parameters)
    for parameter, ptx_type in zip(kernel.parameters, types, strict=True):
        allowed = {"u64", "b64"} if parameter.pointer else by_value[parameter.c_type]
        assert ptx_type in allowed, (parameter, ptx_type)


def test_nvrtc_reports_a_source_that_does_not_compile() -> None:
    _nvrtc_or_skip()
    broken = gpu.PREAMBLE + 'extern "C" __global__ void broken(double* out) { out[0] = nope; }'
    with pytest.raises(nvrtc.NvrtcCompileError, match="nope"):
        nvrtc.compile_to_ptx(broken, "broken.cu")
    assert nvrtc.version() >= (11, 0)


SOURCE = """
/* extern "C" __global__ void decoy(int a) -- a comment is not a declaration */
extern "C" __global__ void example(
    const double* values, long long stride,   // trailing comment
    int n, double scale, int* counts)
{ }
"""


def test_parameters_are_read_from_the_declaration() -> None:
    assert kernel_parameters(SOURCE, "example") == (
        KernelParameter("values", "double", True),
        KernelParameter("stride", "long long", False),
        KernelParameter("n", "int", False),
        KernelParameter("scale", "double", False),
        KernelParameter("counts", "int", True),
    )
    with pytest.raises(KernelSourceError, match="decoy"):
        kernel_parameters(SOURCE, "decoy")
    with pytest.raises(KernelSourceError, match="'float\\* x'"):
        kernel_parameters('extern "C" __global__ void f(float* x) {}', "f")


def _good_arguments() -> list[Any]:
    return [np.zeros((2, 3)), np.int64(3), np.int32(3), np.float64(0.5), np.zeros(4, np.int32)]


def test_matching_arguments_pass() -> None:
    check_arguments("example", kernel_parameters(SOURCE, "example"), _good_arguments())


@pytest.mark.parametrize(
    ("position", "value", "message"),
    [
        (1, 3, "argument 2 \\(long long stride\\): needs numpy.int64\\(...\\), got int 3"),
        (2, np.int64(3), "argument 3 \\(int n\\): needs numpy.int32\\(...\\), got int64"),
        (3, 0.5, "argument 4 \\(double scale\\): needs numpy.float64\\(...\\), got float"),
        (
            4,
            np.zeros(4, np.int64),
            "argument 5 \\(int\\* counts\\): needs a int32 array, got int64",
        ),
        (0, np.float64(1.0), "argument 1 \\(double\\* values\\): needs an array, got float64"),
        (2, True, "needs numpy.int32\\(...\\), got bool"),
    ],
)
def test_mismatched_arguments_are_refused_by_name(position: int, value: Any, message: str) -> None:
    arguments = _good_arguments()
    arguments[position] = value
    with pytest.raises(KernelArgumentError, match=message):
        check_arguments("example", kernel_parameters(SOURCE, "example"), arguments)


def test_a_missing_argument_is_refused() -> None:
    with pytest.raises(KernelArgumentError, match=r"takes 5 arguments .* passes 4"):
        check_arguments("example", kernel_parameters(SOURCE, "example"), _good_arguments()[:4])


def test_a_name_declared_twice_needs_the_same_source() -> None:
    kernel = KERNELS[0]
    body = kernel.source[len(gpu.PREAMBLE) :]
    assert gpu.declare(body, kernel.name) == kernel
    with pytest.raises(KernelSourceError, match="declared twice"):
        gpu.declare(body + "\n/* changed */\n", kernel.name)
