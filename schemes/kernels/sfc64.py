"""numpy's SFC64 stream drawn inside compiled kernels: the same doubles and standard normals as
``Generator(SFC64).random(out=...)`` and ``.standard_normal(out=...)``, bit for bit, with the
generator's state handed back afterwards, so that whatever draws next from the generator sees
the state numpy itself would have left.

Why: numpy fills an array by calling its generator through a function pointer once per
number; the same algorithm compiled into one loop with the four state words in registers runs
several times faster, and every loss model that draws normals gains that much per sample·step
(``python -m minsep.bench`` measures both; figures: docs/performance.md).

The algorithms are numpy's:

* ``sfc64_next``: ``out = a + b + w; w += 1; a = b ^ (b >> 11); b = c + (c << 3);
  c = rotl(c, 24) + out`` (Chris Doty-Humphrey's Small Fast Counting generator);
* ``next_double``: ``(out >> 11) * 2^-53``;
* ``random_standard_normal``: the 256-layer ziggurat of Marsaglia and Tsang on 52-bit
  mantissas (the low byte of a word picks the layer, the next bit the sign), with the tail
  beyond ``r = 3.654...`` by Marsaglia's exponential method and the wedges by one more
  uniform. Its tables are numba's copy of numpy's (``numba.np.random._constants``, which numba
  uses for the same bit-exact ``Generator`` support).

:func:`compiled_normals_reason` checks the compiled normals against numpy's own on a fixed
stream once per process (through the tail and the wedges) before any kernel uses them; where
numba, its tables or that agreement is missing, :func:`fill` calls numpy, so the numbers are
numpy's either way and only the speed differs.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from minsep.schemes.kernels.jit import NUMBA_AVAILABLE, NUMBA_UNAVAILABLE_REASON, njit

_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U8 = np.uint64(8)
_U11 = np.uint64(11)
_U24 = np.uint64(24)
_U40 = np.uint64(40)
_LAYER = np.uint64(0xFF)
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)
_TWO_M53 = 1.0 / 9007199254740992.0

#: Draws of the start-up agreement check (on its stream 22 of them lie in the tail beyond r,
#: and about 1,950 leave their layer's rectangle for the wedge or tail test).
CHECK_DRAWS = 1 << 17


@njit(inline="always")
def sfc64_next(a: Any, b: Any, c: Any, w: Any) -> tuple[Any, Any, Any, Any, Any]:
    """numpy's ``sfc64_next`` on the state words ``(a, b, c, w)`` (uint64): ``(output, a', b',
    c', w')``. Inlined into the calling kernel, so the words stay in registers."""
    word = a + b + w
    return word, b ^ (b >> _U11), c + (c << _U3), ((c << _U24) | (c >> _U40)) + word, w + _U1


@njit
def sfc64_doubles(state: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = `` the next doubles of numpy's SFC64 with ``state`` (its four words, advanced
    in place): the same numbers as ``Generator(SFC64).random``."""
    a, b, c, w = state[0], state[1], state[2], state[3]
    for i in range(out.shape[0]):
        word, a, b, c, w = sfc64_next(a, b, c, w)
        out[i] = float(word >> _U11) * _TWO_M53
    state[0], state[1], state[2], state[3] = a, b, c, w


@njit
def sfc64_normals(
    state: np.ndarray,
    out: np.ndarray,
    ki: np.ndarray,
    wi: np.ndarray,
    fi: np.ndarray,
    r: float,
    inv_r: float,
) -> None:
    """``out[:] = `` the next standard normals of numpy's SFC64 with ``state`` (its four words,
    advanced in place) by numpy's ziggurat with tables ``ki`` (uint64 thresholds), ``wi``
    (layer widths per mantissa unit) and ``fi`` (densities at the layer edges), tail start
    ``r`` and ``inv_r = 1 / r``: the same numbers as ``Generator(SFC64).standard_normal``."""
    a, b, c, w = state[0], state[1], state[2], state[3]
    for i in range(out.shape[0]):
        while True:
            word, a, b, c, w = sfc64_next(a, b, c, w)
            layer = int(word & _LAYER)
            word >>= _U8
            rabs = (word >> _U1) & _MANTISSA
            x = float(rabs) * wi[layer]
            if word & _U1:
                x = -x
            if rabs < ki[layer]:  # inside the layer's rectangle: 98.5 % of draws
                out[i] = x
                break
            # a second word decides the tail (layer 0) or the wedge (any other layer)
            word2, a, b, c, w = sfc64_next(a, b, c, w)
            u = float(word2 >> _U11) * _TWO_M53
            if layer == 0:  # the tail beyond r, by Marsaglia's exponential method
                while True:
                    xx = -inv_r * np.log1p(-u)
                    word3, a, b, c, w = sfc64_next(a, b, c, w)
                    yy = -np.log1p(-(float(word3 >> _U11) * _TWO_M53))
                    if yy + yy > xx * xx:
                        out[i] = -(r + xx) if (rabs >> _U8) & _U1 else r + xx
                        break
                    word2, a, b, c, w = sfc64_next(a, b, c, w)  # the next attempt's uniform
                    u = float(word2 >> _U11) * _TWO_M53
                break
            if (fi[layer - 1] - fi[layer]) * u + fi[layer] < np.exp(-0.5 * x * x):
                out[i] = x
                break
    state[0], state[1], state[2], state[3] = a, b, c, w


@njit
def sfc64_normal_rows(
    state: np.ndarray,
    out: np.ndarray,
    ki: np.ndarray,
    wi: np.ndarray,
    fi: np.ndarray,
    r: float,
    inv_r: float,
) -> None:
    """:func:`sfc64_normals` into the rows of a 2-D ``out`` in order (row-major: the numbers of
    the same call on a C-contiguous array), where the rows are contiguous but not adjacent (a
    column slice of a wider array, such as the zero-padded input of an FFT)."""
    for row in range(out.shape[0]):
        sfc64_normals(state, out[row], ki, wi, fi, r, inv_r)


def state_words(generator: np.random.Generator) -> np.ndarray | None:
    """The four state words of ``generator``'s SFC64 (a copy the kernels advance), or None when
    its bit generator is not SFC64."""
    if not isinstance(generator.bit_generator, np.random.SFC64):
        return None
    return np.array(generator.bit_generator.state["state"]["state"], dtype=np.uint64)


def set_state_words(generator: np.random.Generator, words: np.ndarray) -> None:
    """Put ``words`` back as the state of ``generator``'s SFC64 (its 32-bit buffer kept)."""
    state = generator.bit_generator.state
    state["state"]["state"] = words.copy()
    generator.bit_generator.state = state


@functools.cache
def ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float] | None:
    """``(ki, wi, fi, r, 1 / r)`` of numpy's normal ziggurat from numba's copy, or None when
    this numba has none."""
    try:
        from numba.np.random import _constants as tables
    except ImportError:  # pragma: no cover - another numba layout: numpy draws
        return None
    try:
        ki = np.ascontiguousarray(tables.ki_double, dtype=np.uint64)
        wi = np.ascontiguousarray(tables.wi_double, dtype=np.float64)
        fi = np.ascontiguousarray(tables.fi_double, dtype=np.float64)
        r = float(tables.ziggurat_nor_r)
        inv_r = float(tables.ziggurat_nor_inv_r)
    except AttributeError:  # pragma: no cover
        return None
    if not ki.shape == wi.shape == fi.shape == (256,):  # pragma: no cover
        return None
    return ki, wi, fi, r, inv_r


@functools.cache
def compiled_normals_reason() -> str | None:
    """None when :func:`sfc64_normals` draws numpy's normals here, else why not (numba missing,
    no tables, or a disagreement with numpy on :data:`CHECK_DRAWS` draws of a fixed stream,
    state included). Checked once per process."""
    if not NUMBA_AVAILABLE:
        return f"numba is unavailable ({NUMBA_UNAVAILABLE_REASON})"
    tables = ziggurat_tables()
    if tables is None:
        return "this numba carries no ziggurat tables (numba.np.random._constants)"
    generator = np.random.Generator(np.random.SFC64(20261201))
    words = state_words(generator)
    assert words is not None
    got = np.empty(CHECK_DRAWS)
    sfc64_normals(words, got, *tables)
    want = generator.standard_normal(CHECK_DRAWS)
    left = state_words(generator)
    if not np.array_equal(got, want) or left is None or not np.array_equal(words, left):
        return "the compiled ziggurat disagrees with numpy's standard_normal on this install"
    return None


def fill(generator: np.random.Generator, draw: str, out: np.ndarray) -> None:
    """``getattr(generator, draw)(out=out)`` for ``draw`` ``"standard_normal"`` or
    ``"random"``: by the compiled kernels when the generator is SFC64, ``out`` is C-contiguous
    float64 and (for normals) :func:`compiled_normals_reason` is None, else by numpy. The same
    numbers and the same final state either way. A 2-D ``out`` whose rows are contiguous but
    not adjacent (a column slice) is filled row after row (:func:`sfc64_normal_rows`; numpy
    itself would refuse it, so its draws then go through a contiguous array)."""
    kernel = {"standard_normal": _compiled_normals, "random": sfc64_doubles}.get(draw)
    if kernel is None:
        raise ValueError(f"draw must be 'standard_normal' or 'random', got {draw!r}")
    words = state_words(generator) if NUMBA_AVAILABLE else None
    usable = draw == "random" or compiled_normals_reason() is None
    rows = not out.flags.c_contiguous and out.ndim == 2 and out.strides[1] == out.itemsize
    compiled = usable and out.dtype == np.float64
    if words is not None and compiled and out.flags.c_contiguous:
        kernel(words, out.reshape(-1))
    elif words is not None and compiled and rows and draw == "standard_normal":
        tables: Any = ziggurat_tables()
        sfc64_normal_rows(words, out, *tables)
    elif rows:  # numpy draws only into contiguous arrays: the same numbers through one
        out[...] = getattr(generator, draw)(out.shape)
        return
    else:  # numpy's own checks refuse any other strided target
        getattr(generator, draw)(out=out)
        return
    set_state_words(generator, words)


def _compiled_normals(words: np.ndarray, out: np.ndarray) -> None:
    tables: Any = ziggurat_tables()
    sfc64_normals(words, out, *tables)
