"""The bits of a float64 as an int64 and back, inside compiled kernels: an LLVM ``bitcast``
(no instruction at all on x86, and vectorisable), where numba otherwise needs two views of one
scratch array, a store and a reload between the float and the integer lanes.

Used where a kernel builds ``2^m`` from its exponent bits (:func:`~minsep.schemes.b_min_sep.
cpu_kernels.exp_row`) or splits a float into exponent and mantissa
(:mod:`~minsep.schemes.kernels.chain_logs`). Without numba (``MINSEP_KERNELS=array``) the two
are plain functions over numpy scalars: no array backend calls them, and the tests use them as
the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

__all__ = ["as_bits", "from_bits"]


def _as_bits_reference(value: float) -> int:
    """``value``'s IEEE 754 binary64 bits as a signed 64-bit integer."""
    return int(np.float64(value).view(np.int64))


def _from_bits_reference(bits: int) -> float:
    """The float64 whose IEEE 754 bits are ``bits`` (a signed 64-bit integer)."""
    return float(np.int64(bits).view(np.float64))


as_bits: Callable[[float], int] = _as_bits_reference
from_bits: Callable[[int], float] = _from_bits_reference

if NUMBA_AVAILABLE:  # pragma: no branch - whichever environment runs the tests
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _as_bits_compiled(typingctx: Any, value: Any) -> Any:
        """Compiled :func:`_as_bits_reference` (float64 to int64, the same bits)."""
        if value != types.float64:
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], ir.IntType(64))

        return types.int64(types.float64), codegen

    @intrinsic
    def _from_bits_compiled(typingctx: Any, bits: Any) -> Any:
        """Compiled :func:`_from_bits_reference` (int64 to float64, the same bits)."""
        if bits != types.int64:
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen

    # called from compiled code only, where numba types them by the signatures above
    as_bits = cast(Callable[[float], int], _as_bits_compiled)
    from_bits = cast(Callable[[int], float], _from_bits_compiled)
