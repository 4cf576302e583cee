"""Compiled kernels of the loss models (numba on the host, CUDA on cupy) and the switch back to
pure array code.

numba is a core dependency on the platforms it ships wheels for. Where it imports and the
arrays are host numpy, the loss models run fused per-sample kernels (:mod:`.cpu_kernels`), and
on cupy a CUDA kernel (:mod:`.gpu_kernels`); everywhere else (numba missing or broken, any other
array-API namespace, :func:`pure_arrays` in force) they run the portable array code. Both paths
consume the random stream identically and agree to rounding (pinned by
``tests/unit/test_kernels*.py``). :func:`kernel_set` names the path in force.

The environment variable ``MINSEP_KERNELS`` chooses for a whole process: ``auto`` (default,
the compiled kernels where they apply) or ``array`` (pure array code everywhere, numba not even
imported: the way to time the array code or to get past a broken numba install). The older
``MINSEP_PURE_ARRAYS=1`` means ``MINSEP_KERNELS=array``.

When host numpy arrays take the array path outside :func:`pure_arrays`, a
:class:`SlowKernelsWarning` says so once on stderr (once per process tree: worker processes
started afterwards inherit a marker and stay quiet), with the command that installs the fast
kernels (:data:`INSTALL_COMMAND`).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from minsep.framework.errors import ConfigurationError

if TYPE_CHECKING:
    from minsep.framework.backend import Backend

F = TypeVar("F", bound=Callable[..., Any])

#: The kernel sets :func:`kernel_set` reports.
KERNEL_SETS = ("numba", "cuda", "array")
#: Values of the ``MINSEP_KERNELS`` environment variable.
KERNEL_CHOICES = ("auto", "array")
#: What installs the fast host kernels.
INSTALL_COMMAND = "pip install numba  (or: pip install 'minsep[fast]')"


class SlowKernelsWarning(UserWarning):
    """Host numpy arrays run the pure array code (several times slower than numba)."""


def requested_kernels(environ: dict[str, str] | None = None) -> str:
    """The kernel choice of the environment (``MINSEP_KERNELS``, else ``MINSEP_PURE_ARRAYS``)."""
    env = os.environ if environ is None else environ
    value = env.get("MINSEP_KERNELS", "").strip().lower()
    if not value:
        return "array" if env.get("MINSEP_PURE_ARRAYS", "") not in ("", "0") else "auto"
    if value not in KERNEL_CHOICES:
        raise ConfigurationError(
            f"environment variable MINSEP_KERNELS = {value!r} is invalid: must be one of "
            f"{list(KERNEL_CHOICES)} (or unset)"
        )
    return value


_FORCED_ARRAYS = requested_kernels() == "array"

_numba: Any = None
#: Why numba is not in use on the host: None when it imported, else the reason.
NUMBA_UNAVAILABLE_REASON: str | None = None
if _FORCED_ARRAYS:
    NUMBA_UNAVAILABLE_REASON = "MINSEP_KERNELS=array is set; unset it to use the numba kernels"
else:
    try:  # pragma: no cover - exercised by whichever environment runs the tests
        import numba as _numba
    except ImportError as exc:  # pragma: no cover
        NUMBA_UNAVAILABLE_REASON = (
            f"numba is not installed ({exc}). Install the fast kernels with: {INSTALL_COMMAND}"
        )
    except Exception as exc:  # pragma: no cover - a broken install (e.g. a numpy ABI mismatch)
        NUMBA_UNAVAILABLE_REASON = (
            f"numba failed to import ({type(exc).__name__}: {exc}). Reinstall the fast kernels "
            f"with: {INSTALL_COMMAND}"
        )

#: True when numba imported.
NUMBA_AVAILABLE = _numba is not None

#: Set in the environment once a process has warned, so that its worker processes stay quiet.
_WARNED_ENV = "MINSEP_SLOW_KERNELS_WARNED"
_state = {"pure": 0, "warned": os.environ.get(_WARNED_ENV) == "1"}  # pure: pure_arrays() depth


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


def _compiled_allowed() -> bool:
    return not _FORCED_ARRAYS and _state["pure"] == 0


def kernel_set(xp: Any = None, *, cuda: bool = False) -> str:
    """Which code evaluates arrays of namespace ``xp`` (default host numpy) in this process:
    ``"numba"`` (fused host kernels), ``"cuda"`` (a fused CUDA kernel on cupy, for a model that
    has one: ``cuda=True``) or ``"array"`` (portable array-API code)."""
    import numpy as np

    if xp is None or xp is np:
        return "numba" if NUMBA_AVAILABLE and _compiled_allowed() else "array"
    if cuda and gpu_enabled() and getattr(xp, "__name__", "") == "cupy":
        return "cuda"
    return "array"


def array_path_note() -> str:
    """Why host numpy runs the array code, and how to get the fast kernels."""
    reason = NUMBA_UNAVAILABLE_REASON or "within pure_arrays()"
    return (
        "the Monte Carlo loss models run the pure array code on the CPU (several times slower "
        f"than the numba kernels): {reason}"
    )


def kernels_enabled(xp: Any) -> bool:
    """True when the compiled host kernels apply to arrays of namespace ``xp``. The first
    False for host numpy outside :func:`pure_arrays` warns once (:class:`SlowKernelsWarning`)."""
    import numpy as np

    if xp is not np:
        return False
    if NUMBA_AVAILABLE and _compiled_allowed():
        return True
    if _state["pure"] == 0 and not _state["warned"]:
        _state["warned"] = True
        os.environ[_WARNED_ENV] = "1"
        warnings.warn(f"minsep: {array_path_note()}", SlowKernelsWarning, stacklevel=2)
    return False


def gpu_enabled() -> bool:
    """False within :func:`pure_arrays` or under ``MINSEP_KERNELS=array`` (the CUDA kernels
    follow the same switch)."""
    return _compiled_allowed()


@contextlib.contextmanager
def pure_arrays() -> Iterator[None]:
    """Within the block, run the portable array code even where numba (or a GPU) is there
    (silently: the caller asked for it)."""
    _state["pure"] += 1
    try:
        yield
    finally:
        _state["pure"] -= 1


class CompiledKernels:
    """Mixin of the loss models that run :mod:`.cpu_kernels` (and, with ``has_cuda_kernel``,
    :mod:`.gpu_kernels`): implements the kernel hooks of
    :class:`~minsep.framework.interfaces.PrivacyLossModel`."""

    __slots__ = ()

    #: True for a model with a fused CUDA kernel (used on cupy).
    has_cuda_kernel: ClassVar[bool] = False

    def kernel_set(self, backend: Backend) -> str:
        """``"numba"``, ``"cuda"`` or ``"array"``: see :func:`kernel_set`."""
        return kernel_set(backend.xp, cuda=self.has_cuda_kernel)

    def kernel_notes(self, backend: Backend) -> tuple[str, ...]:
        """A note with :func:`array_path_note` when host numpy runs the array code."""
        import numpy as np

        if backend.xp is np and self.kernel_set(backend) == "array":
            return (array_path_note(),)
        return ()
