"""numba's ``njit`` for the compiled host kernels, and the staleness check of its disk cache.

numba is a core dependency on the platforms it ships wheels for. Which kernel set runs is the
backend's choice (:attr:`minsep.framework.backend.Backend.kernels`, made once when the backend
is built): ``"numba"`` runs the fused host kernels (:mod:`.cpu_kernels`), ``"cuda"`` a CUDA
kernel on cupy (for a model that has one), ``"array"`` the portable array code. All consume the
random stream identically and agree to rounding (pinned by
``tests/unit/schemes/kernels/test_kernels*.py``).

Under ``MINSEP_KERNELS=array`` numba is not even imported (the way to get past a broken numba
install); :func:`njit` then returns the plain function, which no array backend calls.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, overload

from minsep.framework.backend import (
    INSTALL_COMMAND,
    KERNEL_CHOICES,
    KERNEL_SETS,
    SlowKernelsWarning,
    array_path_note,
    numba_unavailable_reason,
    requested_kernels,
)

__all__ = [
    "INSTALL_COMMAND",
    "KERNEL_CHOICES",
    "KERNEL_SETS",
    "NUMBA_AVAILABLE",
    "NUMBA_UNAVAILABLE_REASON",
    "SlowKernelsWarning",
    "array_path_note",
    "njit",
    "requested_kernels",
]

F = TypeVar("F", bound=Callable[..., Any])

requested_kernels()  # an invalid MINSEP_KERNELS fails when the kernels load

#: Why numba is not in use on the host: None when it imported, else the reason.
NUMBA_UNAVAILABLE_REASON: str | None = numba_unavailable_reason()
#: True when numba imported.
NUMBA_AVAILABLE = NUMBA_UNAVAILABLE_REASON is None

_numba: Any = None
if NUMBA_AVAILABLE:  # pragma: no branch - whichever environment runs the tests
    import numba as _numba


@overload
def njit(function: F) -> F: ...


@overload
def njit(function: None = None, **options: Any) -> Callable[[F], F]: ...


def njit(function: F | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, error_model="numpy", **options)`` when numba is
    present, else the function itself (never called then: no backend runs ``"numba"``).
    Usable bare (``@njit``) or with options (``@njit(fastmath={"contract"})``)."""

    def wrap(fn: F) -> F:
        if _numba is None:  # pragma: no cover
            return fn
        settings = {"cache": True, "nogil": True, "error_model": "numpy", **options}
        compiled: F = _numba.njit(**settings)(fn)
        if settings["cache"]:
            refresh_cache(compiled, fn)
        return compiled

    return wrap if function is None else wrap(function)


#: Package folders whose sources make up the compiled kernels (every ``njit`` function and
#: everything it calls lives in them).
KERNEL_FOLDERS = ("schemes", "accountants")


@functools.cache
def kernel_fingerprint() -> str:
    """sha256 of every source file of :data:`KERNEL_FOLDERS` (paths and contents)."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for folder in KERNEL_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def refresh_cache(compiled: Any, fn: Callable[..., Any]) -> None:
    """Drop the on-disk compiled copies of ``fn`` made from other kernel sources.

    numba's cache checks only the file that defines a function: a kernel whose callee in
    another file changed (``exp_row``, say) would load its old machine code, callee included,
    and silently run it. Beside each function's cache index this keeps the
    :func:`kernel_fingerprint` it was made under; when the sources differ, the index is flushed
    and numba compiles afresh on first call. A cache folder that cannot be written is left
    alone (numba then caches elsewhere or not at all)."""
    cache: Any = getattr(compiled, "_cache", None)
    try:
        folder = Path(cache.cache_path)
        stamp = folder / f"{fn.__module__}.{fn.__qualname__}.minsep-sources"
        fingerprint = kernel_fingerprint()
        if stamp.is_file() and stamp.read_text() == fingerprint:
            return
        cache.flush()
        temporary = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
        temporary.write_text(fingerprint)
        os.replace(temporary, stamp)
    except (AttributeError, OSError):  # no cache (or another numba's layout), read-only folder
        return
