"""Optional numba compilation of the host kernels, with a switch back to pure array code.

numba ships in the ``fast`` extra. Where it is importable and the arrays are host numpy, the
loss models run fused per-sample kernels (:mod:`.cpu_kernels`), and on cupy a CUDA kernel
(:mod:`.gpu_kernels`); everywhere else (numba missing, any other array-API namespace, or
:func:`pure_arrays` in force) they run the portable array code. Both paths consume the
random stream identically and agree to rounding (pinned by ``tests/unit/test_kernels*.py``).
``MINSEP_PURE_ARRAYS=1`` in the environment disables the kernels for a whole process (e.g. to
time the array code).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])

_numba: Any
try:  # pragma: no cover - exercised by whichever environment runs the tests
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None

#: True when numba imported.
NUMBA_AVAILABLE = _numba is not None

_state = {"enabled": os.environ.get("MINSEP_PURE_ARRAYS", "") in ("", "0")}


@overload
def njit(function: F) -> F: ...


@overload
def njit(function: None = None, **options: Any) -> Callable[[F], F]: ...


def njit(function: F | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, error_model="numpy", **options)`` when numba is
    present, else the function itself (never called then: :func:`kernels_enabled` is False).
    Usable bare (``@njit``) or with options (``@njit(fastmath={"contract"})``)."""

    def wrap(fn: F) -> F:
        if _numba is None:  # pragma: no cover
            return fn
        settings = {"cache": True, "nogil": True, "error_model": "numpy", **options}
        compiled: F = _numba.njit(**settings)(fn)
        return compiled

    return wrap if function is None else wrap(function)


def kernels_enabled(xp: Any) -> bool:
    """True when the compiled host kernels apply to arrays of namespace ``xp``."""
    import numpy as np

    return NUMBA_AVAILABLE and _state["enabled"] and xp is np


def gpu_enabled() -> bool:
    """False within :func:`pure_arrays` (the CUDA kernels follow the same switch)."""
    return _state["enabled"]


@contextlib.contextmanager
def pure_arrays() -> Iterator[None]:
    """Within the block, run the portable array code even where numba (or a GPU) is there."""
    before = _state["enabled"]
    _state["enabled"] = False
    try:
        yield
    finally:
        _state["enabled"] = before
