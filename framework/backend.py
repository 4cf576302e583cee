"""Array backends: one engine, several array libraries.

A :class:`Backend` bundles an array namespace (``numpy`` or ``cupy``; any array-API namespace
for portability tests), a random generator built from a :class:`numpy.random.SeedSequence`, and
the transfer of results back to host numpy. Monte Carlo code is written once against
``backend.xp`` and ``backend.rng(...)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from minsep.framework.errors import BackendUnavailableError, ConfigurationError

BACKEND_NAMES = ("numpy", "cupy", "auto")


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


@attrs.frozen
class Backend:
    """An array namespace with its RNG and host transfer.

    Attributes:
        name: ``"numpy"``, ``"cupy"`` or the name of a stand-in namespace.
        xp: the array namespace (module) all engine code calls.
        rng: ``rng(seed_sequence)`` -> a :class:`RandomSource` producing ``xp`` arrays.
        to_numpy: copies an ``xp`` array to a host :class:`numpy.ndarray`.
    """

    name: str
    xp: Any = attrs.field(repr=False)
    rng: Callable[[np.random.SeedSequence], RandomSource] = attrs.field(repr=False)
    to_numpy: Callable[[Any], np.ndarray] = attrs.field(repr=False)

    def asarray(self, value: Any) -> Any:
        """Move host data into this backend's namespace."""
        return self.xp.asarray(value)


def _numpy_rng(seed: np.random.SeedSequence) -> RandomSource:
    # SFC64 is the fastest of numpy's bit generators and passes the usual test batteries.
    return _GeneratorSource(np.random.Generator(np.random.SFC64(seed)))


@functools.cache
def numpy_backend() -> Backend:
    """The host backend (always available)."""
    return Backend("numpy", np, _numpy_rng, np.asarray)


def cupy_usable() -> bool:
    """True when cupy imports and sees at least one CUDA device."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # import error, missing driver, no device: all mean "not usable"
        return False


@functools.cache
def cupy_backend() -> Backend:
    """The GPU backend; raises BackendUnavailableError with the reason when unusable."""
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

    return Backend("cupy", cupy, rng, cupy.asnumpy)


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


def get_backend(name: str | Backend = "numpy") -> Backend:
    """Resolve ``"numpy"``, ``"cupy"`` or ``"auto"`` (cupy only where a GPU is usable)."""
    if isinstance(name, Backend):
        return name
    if name == "numpy":
        return numpy_backend()
    if name == "cupy":
        return cupy_backend()
    if name == "auto":
        return cupy_backend() if cupy_usable() else numpy_backend()
    raise ConfigurationError(f"backend = {name!r} is invalid: must be one of {list(BACKEND_NAMES)}")
