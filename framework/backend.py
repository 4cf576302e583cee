"""Array backends: one engine, several array libraries, and the kernel set each one runs.

A :class:`Backend` bundles an array namespace (``numpy`` or ``cupy``; any array-API namespace
for portability tests), a random generator built from a :class:`numpy.random.SeedSequence`, the
transfer of results back to host numpy, and the kernel set the loss models run on it, chosen
once when the backend is built:

- ``"numba"``: fused compiled kernels on host numpy (numba importable);
- ``"cuda"``: fused CUDA kernels on cupy (for the models that have one; others use arrays);
- ``"array"``: portable array-API code (any namespace).

All kernel sets consume the random stream identically and agree to rounding. The default is the
fastest set the namespace supports, unless the environment variable ``MINSEP_KERNELS=array``
(or the older ``MINSEP_PURE_ARRAYS=1``) asks for the array code in the whole process (numba is
then not even imported). A backend *spec* ``"name[:kernels]"`` (``"numpy"``, ``"numpy:array"``,
``"cupy:cuda"``, ...) names both and travels to worker processes (:attr:`Backend.spec`).

Monte Carlo code is written once against ``backend.xp`` and ``backend.rng(...)``; the kernels
themselves live with the loss models, which read ``backend.kernels``.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from minsep.framework.errors import BackendUnavailableError, ConfigurationError
from minsep.framework.methods import Word

BACKEND_NAMES = ("numpy", "cupy", "auto")


class KernelSet(Word):
    """The kernel set a backend's loss models run (its value is the word of specs and JSON)."""

    #: Fused compiled kernels on host numpy (numba importable).
    NUMBA = "numba"
    #: Fused CUDA kernels on cupy.
    CUDA = "cuda"
    #: Portable array-API code (any namespace).
    ARRAY = "array"


class KernelChoice(Word):
    """Values of the ``MINSEP_KERNELS`` environment variable."""

    #: The fastest kernel set the namespace supports.
    AUTO = "auto"
    #: The array code in the whole process.
    ARRAY = "array"


#: The kernel sets a backend can run.
KERNEL_SETS = tuple(k.value for k in KernelSet)
#: The kernel sets each named namespace supports (the first one is the fastest).
SUPPORTED_KERNELS = {"numpy": ("numba", "array"), "cupy": ("cuda", "array")}
#: Every valid backend spec: a name, or ``name:kernels``.
BACKEND_SPECS = (
    *BACKEND_NAMES,
    *(f"{name}:{k}" for name, sets in SUPPORTED_KERNELS.items() for k in sets),
    "auto:array",
)
#: Values of the ``MINSEP_KERNELS`` environment variable.
KERNEL_CHOICES = tuple(k.value for k in KernelChoice)
#: What installs the fast host kernels.
INSTALL_COMMAND = "pip install numba  (or: pip install 'minsep[fast]')"
#: Set in the environment once a process has warned, so that its worker processes stay quiet.
_WARNED_ENV = "MINSEP_SLOW_KERNELS_WARNED"


class SlowKernelsWarning(UserWarning):
    """Host numpy arrays run the pure array code (several times slower than numba)."""


def requested_kernels(environ: Mapping[str, str] | None = None) -> KernelChoice:
    """The kernel choice of the environment (``MINSEP_KERNELS``, else ``MINSEP_PURE_ARRAYS``):
    ``"auto"`` or ``"array"``."""
    env = os.environ if environ is None else environ
    value = env.get("MINSEP_KERNELS", "").strip().lower()
    if not value:
        pure = env.get("MINSEP_PURE_ARRAYS", "") not in ("", "0")
        return KernelChoice.ARRAY if pure else KernelChoice.AUTO
    if value not in KERNEL_CHOICES:
        raise ConfigurationError(
            f"environment variable MINSEP_KERNELS = {value!r} is invalid: must be one of "
            f"{list(KERNEL_CHOICES)} (or unset)"
        )
    return KernelChoice(value)


@functools.cache
def numba_unavailable_reason() -> str | None:
    """None when numba imports (and the environment does not force the array code), else why
    not, with the command that installs it. Imports numba on the first call."""
    if requested_kernels() == "array":
        return "MINSEP_KERNELS=array is set; unset it to use the numba kernels"
    try:  # pragma: no cover - exercised by whichever environment runs the tests
        import numba  # noqa: F401
    except ImportError as exc:  # pragma: no cover
        return f"numba is not installed ({exc}). Install the fast kernels with: {INSTALL_COMMAND}"
    except Exception as exc:  # pragma: no cover - a broken install (e.g. a numpy ABI mismatch)
        return (
            f"numba failed to import ({type(exc).__name__}: {exc}). Reinstall the fast kernels "
            f"with: {INSTALL_COMMAND}"
        )
    return None


def array_path_note() -> str:
    """Why host numpy runs the array code, and how to get the fast kernels."""
    reason = numba_unavailable_reason() or "the backend was built with kernels = 'array'"
    return (
        "the Monte Carlo loss models run the pure array code on the CPU (several times slower "
        f"than the numba kernels): {reason}"
    )


def _warn_slow_once() -> None:
    if os.environ.get(_WARNED_ENV) == "1":
        return
    os.environ[_WARNED_ENV] = "1"  # inherited by worker processes started afterwards
    warnings.warn(f"minsep: {array_path_note()}", SlowKernelsWarning, stacklevel=4)


def _check_kernels(name: str, kernels: str) -> None:
    allowed = SUPPORTED_KERNELS.get(name, ("array",))
    if kernels not in allowed:
        raise ConfigurationError(
            f"backend {name!r}: kernels = {kernels!r} is invalid: must be one of {list(allowed)}"
        )


class RandomSource(Protocol):
    """The random draws the engine needs, producing arrays of the backend's namespace.

    Host sources also expose the underlying :class:`numpy.random.Generator` as the optional
    attribute ``generator``; compiled CPU kernels use it to draw into reused buffers
    (``standard_normal(out=...)``). Code must fall back to the two methods when it is absent.
    """

    def standard_normal(self, shape: Sequence[int]) -> Any:
        """i.i.d. N(0, 1) float64 array of ``shape``."""

    def random(self, shape: Sequence[int]) -> Any:
        """i.i.d. Uniform[0, 1) float64 array of ``shape``."""


@attrs.frozen
class _GeneratorSource:
    """RandomSource over a numpy-like ``Generator`` (numpy's or cupy's)."""

    generator: Any

    def standard_normal(self, shape: Sequence[int]) -> Any:
        return self.generator.standard_normal(tuple(shape))

    def random(self, shape: Sequence[int]) -> Any:
        return self.generator.random(tuple(shape))


@attrs.frozen
class _ConvertingSource:
    """RandomSource drawing on host numpy and converting into another namespace."""

    generator: np.random.Generator
    asarray: Callable[[Any], Any]

    def standard_normal(self, shape: Sequence[int]) -> Any:
        return self.asarray(self.generator.standard_normal(tuple(shape)))

    def random(self, shape: Sequence[int]) -> Any:
        return self.asarray(self.generator.random(tuple(shape)))


def _kernel_set(value: Any) -> Any:
    """Converter: a kernel-set word to its :class:`KernelSet` (others for the validator)."""
    try:
        return KernelSet(value)
    except (ValueError, TypeError):
        return value


def _kernels_validator(instance: Backend, attribute: Any, value: str) -> None:
    _check_kernels(instance.name, value)


@attrs.frozen
class Backend:
    """An array namespace with its RNG, host transfer and kernel set.

    Attributes:
        name: ``"numpy"``, ``"cupy"`` or the name of a stand-in namespace.
        xp: the array namespace (module) all engine code calls.
        rng: ``rng(seed_sequence)`` -> a :class:`RandomSource` producing ``xp`` arrays.
        to_numpy: copies an ``xp`` array to a host :class:`numpy.ndarray`.
        kernels: the kernel set the loss models run here: ``"numba"`` (numpy only), ``"cuda"``
            (cupy only) or ``"array"`` (any namespace).
    """

    name: str
    xp: Any = attrs.field(repr=False)
    rng: Callable[[np.random.SeedSequence], RandomSource] = attrs.field(repr=False)
    to_numpy: Callable[[Any], np.ndarray] = attrs.field(repr=False)
    kernels: KernelSet = attrs.field(
        default=KernelSet.ARRAY, kw_only=True, converter=_kernel_set, validator=_kernels_validator
    )

    @property
    def spec(self) -> str:
        """``"name:kernels"``: what :func:`get_backend` rebuilds this backend from (in a
        worker process, say)."""
        return f"{self.name}:{self.kernels}"

    def asarray(self, value: Any) -> Any:
        """Move host data into this backend's namespace."""
        return self.xp.asarray(value)


def _numpy_rng(seed: np.random.SeedSequence) -> RandomSource:
    # SFC64 is the fastest of numpy's bit generators and passes the usual test batteries.
    return _GeneratorSource(np.random.Generator(np.random.SFC64(seed)))


def numpy_backend(kernels: str | None = None) -> Backend:
    """The host backend (always available).

    ``kernels``: ``"numba"`` (BackendUnavailableError, with the reason, where numba is not
    usable), ``"array"``, or None for the default: numba where it imports and the environment
    does not ask for the array code, else the array code (warning once, with
    :class:`SlowKernelsWarning`, how to install numba).
    """
    if kernels is None:
        kernels = "numba" if numba_unavailable_reason() is None else "array"
        if kernels == "array":
            _warn_slow_once()
    return _numpy_backend(kernels)


@functools.cache
def _numpy_backend(kernels: str) -> Backend:
    _check_kernels("numpy", kernels)
    if kernels == "numba" and (reason := numba_unavailable_reason()) is not None:
        raise BackendUnavailableError(f"backend 'numpy' with kernels = 'numba': {reason}")
    return Backend("numpy", np, _numpy_rng, np.asarray, kernels=kernels)


def cupy_usable() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # import error, missing driver, no device: all mean "not usable"
        return False


def cupy_backend(kernels: str | None = None) -> Backend:
    """The GPU backend; raises BackendUnavailableError with the reason when unusable.

    ``kernels``: ``"cuda"``, ``"array"``, or None for the default (``"cuda"`` unless the
    environment asks for the array code).
    """
    if kernels is None:
        kernels = "array" if requested_kernels() == "array" else "cuda"
    return _cupy_backend(kernels)


@functools.cache
def _cupy_backend(kernels: str) -> Backend:
    _check_kernels("cupy", kernels)
    try:
        import cupy
    except ImportError as exc:
        raise BackendUnavailableError(
            "backend 'cupy' needs the cupy package: pip install 'minsep[gpu]' "
            f"(import failed: {exc})"
        ) from exc
    if not cupy_usable():
        raise BackendUnavailableError("backend 'cupy' is installed but no CUDA device is usable")

    def rng(seed: np.random.SeedSequence) -> RandomSource:
        state = int(seed.generate_state(2, np.uint64)[0])
        return _GeneratorSource(cupy.random.Generator(cupy.random.XORWOW(state)))

    return Backend("cupy", cupy, rng, cupy.asnumpy, kernels=kernels)


def forget_cupy_backends() -> None:
    """Drop the GPU backends built so far (they are built once per kernel set and kept): the
    next :func:`cupy_backend` imports cupy again (a test's stand-in for it, say)."""
    _cupy_backend.cache_clear()


def namespace_backend(xp: Any, name: str | None = None) -> Backend:
    """A backend over any array-API namespace, drawing randomness on host numpy.

    Used to prove portability: running the engine on ``array_api_strict`` catches numpy-only
    calls that would break on cupy.
    """

    def rng(seed: np.random.SeedSequence) -> RandomSource:
        return _ConvertingSource(np.random.Generator(np.random.SFC64(seed)), xp.asarray)

    def to_numpy(arr: Any) -> np.ndarray:
        return np.asarray(np.from_dlpack(arr)) if hasattr(arr, "__dlpack__") else np.asarray(arr)

    label = name or str(getattr(xp, "__name__", "namespace"))
    return Backend(label, xp, rng, to_numpy)


def default_kernels(xp: Any) -> str:
    """The kernel set a default backend over namespace ``xp`` runs (``"array"`` for any
    namespace other than numpy and cupy)."""
    if xp is np:
        return numpy_backend().kernels
    if getattr(xp, "__name__", "") == "cupy":
        return "array" if requested_kernels() == "array" else "cuda"
    return "array"


def get_backend(spec: str | Backend = "numpy") -> Backend:
    """Resolve a backend spec ``"name[:kernels]"``: name ``"numpy"``, ``"cupy"`` or
    ``"auto"`` (cupy only where a GPU is usable), kernels as in :data:`KERNEL_SETS` (default:
    the fastest the namespace supports, see :func:`numpy_backend`)."""
    if isinstance(spec, Backend):
        return spec
    name, _, kernels = str(spec).partition(":")
    if spec not in BACKEND_SPECS:
        raise ConfigurationError(
            f"backend = {spec!r} is invalid: must be one of {list(BACKEND_SPECS)}"
        )
    choice = kernels or None
    if name == "auto":
        name = "cupy" if cupy_usable() else "numpy"
    if name == "numpy":
        return numpy_backend(choice)
    return cupy_backend(choice)
