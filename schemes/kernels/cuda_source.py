"""What a CUDA kernel's source says about its arguments, and the check of a launch against it.

cupy launches a raw kernel with whatever it is given: an array becomes its device pointer and
a numpy scalar its bytes, but nothing is compared with the parameter list, so a Python ``int``
where the kernel declares ``int``, or an int64 array where it reads ``int*``, would corrupt
memory silently on the first GPU run. :func:`kernel_parameters` reads the parameter list of
``extern "C" __global__ void name(...)`` from the source, and :func:`check_arguments` holds a
launch's arguments to it (``minsep.schemes.kernels.gpu`` checks every launch; the host stand-in
of :mod:`minsep.testing.host_device` runs the same check in CI, without a GPU).

The kernels' parameters use three C types, each with its numpy type: ``double`` (float64),
``int`` (int32) and ``long long`` (int64), by value or as (``const``) pointers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import MinsepError

#: numpy type of each C type a kernel parameter may have.
C_TYPES: dict[str, type[np.generic]] = {
    "double": np.float64,
    "int": np.int32,
    "long long": np.int64,
}

_PARAMETER = re.compile(r"^(?:const\s+)?(double|int|long\s+long)\s*(\*)?\s*([A-Za-z_]\w*)$")


class KernelArgumentError(MinsepError, TypeError):
    """A launch's arguments do not match the kernel's parameter list."""


class KernelSourceError(MinsepError, ValueError):
    """A CUDA source without the kernel asked for, or with a parameter type outside
    :data:`C_TYPES`."""


@attrs.frozen
class KernelParameter:
    """One parameter of a kernel: its name, C type (a key of :data:`C_TYPES`) and whether it
    is a pointer."""

    name: str
    c_type: str
    pointer: bool

    @property
    def numpy_type(self) -> type[np.generic]:
        """The numpy type of the value (of the elements, for a pointer)."""
        return C_TYPES[self.c_type]

    def describe(self) -> str:
        """``"const double* values"``-like, for messages."""
        return f"{self.c_type}{'*' if self.pointer else ''} {self.name}"


def kernel_parameters(source: str, name: str) -> tuple[KernelParameter, ...]:
    """The parameters of ``extern "C" __global__ void name(...)`` in ``source``, in order.

    Raises :class:`KernelSourceError` when ``source`` declares no such kernel or a parameter
    is not one of :data:`C_TYPES` (by value or pointer)."""
    pattern = re.compile(
        r'extern\s+"C"\s+__global__\s+void\s+' + re.escape(name) + r"\s*\(([^)]*)\)"
    )
    match = pattern.search(_without_comments(source))
    if match is None:
        raise KernelSourceError(f'the CUDA source declares no extern "C" __global__ {name}(...)')
    parameters = []
    for text in match.group(1).split(","):
        words = " ".join(text.split())
        parsed = _PARAMETER.match(words)
        if parsed is None:
            raise KernelSourceError(
                f"kernel {name}: parameter {words!r} is not one of "
                f"{sorted(C_TYPES)} by value or pointer"
            )
        c_type = " ".join(parsed.group(1).split())
        parameters.append(KernelParameter(parsed.group(3), c_type, parsed.group(2) is not None))
    return tuple(parameters)


def _without_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


def is_array(value: Any) -> bool:
    """True for an array of any namespace (numpy, cupy): it has a shape and a dtype and is not
    a numpy scalar."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.generic)


def check_arguments(name: str, parameters: Sequence[KernelParameter], args: Sequence[Any]) -> None:
    """Raise :class:`KernelArgumentError` unless ``args`` match ``parameters``: as many, each
    pointer an array whose dtype is the parameter's numpy type, each value a numpy scalar of
    exactly that type (a Python ``int``, ``float`` or ``bool`` is refused: cupy would not
    convert it to the declared width)."""
    if len(args) != len(parameters):
        raise KernelArgumentError(
            f"kernel {name} takes {len(parameters)} arguments "
            f"({', '.join(p.name for p in parameters)}), the launch passes {len(args)}"
        )
    for position, (parameter, value) in enumerate(zip(parameters, args, strict=True), 1):
        expected = np.dtype(parameter.numpy_type)
        where = f"kernel {name}, argument {position} ({parameter.describe()})"
        if parameter.pointer:
            if not is_array(value):
                raise KernelArgumentError(f"{where}: needs an array, got {type(value).__name__}")
            if np.dtype(value.dtype) != expected:
                raise KernelArgumentError(
                    f"{where}: needs a {expected.name} array, got {np.dtype(value.dtype).name}"
                )
        elif type(value) is not parameter.numpy_type:
            raise KernelArgumentError(
                f"{where}: needs numpy.{expected.name}(...), got {type(value).__name__} {value!r}"
            )


__all__ = [
    "C_TYPES",
    "KernelArgumentError",
    "KernelParameter",
    "KernelSourceError",
    "check_arguments",
    "is_array",
    "kernel_parameters",
]
