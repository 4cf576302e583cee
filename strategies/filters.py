"""scipy.signal's linear filter and FFT convolution, imported on first use.

``scipy.signal`` costs ~0.7 s to import; the strategies need it only when they compute
columns, so importing :mod:`minsep.strategies` (and every CLI start) stays light.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def lfilter(b: Any, a: Any, x: Any) -> np.ndarray:
    """``scipy.signal.lfilter(b, a, x)``: the rational filter ``B(z) / A(z)`` applied to ``x``."""
    from scipy.signal import lfilter as scipy_lfilter

    return np.asarray(scipy_lfilter(b, a, x))


def fftconvolve(a: Any, b: Any) -> np.ndarray:
    """``scipy.signal.fftconvolve(a, b)`` (full linear convolution)."""
    from scipy.signal import fftconvolve as scipy_fftconvolve

    return np.asarray(scipy_fftconvolve(a, b))
