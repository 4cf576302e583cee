"""The logarithms ``ln(1 - u)`` of the b-min-sep chain's rounds, compiled and vectorised, with the
waits they give kept equal to those of numpy's ``log``.

A round of :func:`~minsep.schemes.kernels.sampling.chain_steps` turns each uniform into the wait
``floor(ln(1 - u) / ln(1 - p))``. numpy vectorises its float64 ``log`` only with AVX-512; on an
AVX2 core it calls the scalar ``log`` once per value, and the chain's logarithms were then about
half of its cost (docs/performance.md). :func:`log_complements` computes them in one
vectorisable loop:

* ``x = 1 - u`` (exact: numpy's uniforms are multiples of 2^-53 in [0, 1)) is split as ``x = 2^e
  m`` with ``m`` in ``[sqrt(1/2), sqrt(2)]``, from the bits of ``x`` by integer shifts and masks
  on the same register (AVX2 has no packed float-to-integer conversion; the exponent is read
  as a float by placing its bits in the mantissa of 2^52);
* ``ln m = 2 atanh(s) = 2 s + s z Q(z)``, ``s = (m - 1) / (m + 1)``, ``z = s^2 <= 0.0295``,
  ``Q(z) = sum_{j=0}^{8} 2 z^j / (2 j + 3)``: the series cut after z^8 errs by under 2.4e-17
  relatively (the first omitted terms bound the rest, a geometric series in z);
* ``ln x = e ln2_hi + (e ln2_lo + ln m)`` with ln 2 split so that ``e ln2_hi`` is exact.

The result is within a few ulp of ``ln x`` (pinned against mpmath in the tests), not bit for
bit numpy's. What the chain uses is only the integer ``floor(ln(1 - u) / ln(1 - p))``, and two
logarithms each within a few ulp of the true one give the same floor unless the quotient lies
within about 1e-15 relatively of an integer. So the kernel counts the values whose quotient lies
within :data:`AMBIGUOUS` (relatively) of an integer, and :func:`round_logs` recomputes such a
round with numpy's ``log`` itself: the waits, and so the participation steps, are those of the
array code bit for bit (a uniform sends its round to numpy with probability about ``2
AMBIGUOUS max(q, 1)``, q its quotient: rare enough that the fallback costs nothing).
"""

from __future__ import annotations

import numpy as np

from minsep.schemes.kernels.float_bits import as_bits, from_bits
from minsep.schemes.kernels.jit import njit

#: A quotient within this (relative) distance of an integer sends its round to numpy's log:
#: over 1,000 times the combined error of the two logarithms and the division.
AMBIGUOUS = 1e-12

_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000  # the bits of 1.0
_TWO52_BITS = 0x4330000000000000  # the bits of 2^52
_TWO52 = 4503599627370496.0
_SQRT2 = 1.4142135623730951
# fdlibm's split of ln 2: e * _LN2_HI is exact for |e| < 2^11
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# Q(z) = sum_j 2 z^j / (2 j + 3), j = 0..8
_Q0 = 2.0 / 3.0
_Q1 = 2.0 / 5.0
_Q2 = 2.0 / 7.0
_Q3 = 2.0 / 9.0
_Q4 = 2.0 / 11.0
_Q5 = 2.0 / 13.0
_Q6 = 2.0 / 15.0
_Q7 = 2.0 / 17.0
_Q8 = 2.0 / 19.0


@njit(fastmath={"contract"}, inline="always")
def _log(x: float) -> float:
    """``ln x`` for a positive normal ``x = 2^(E - 1023) M``, ``M`` in [1, 2): ``M`` and
    ``2^52 + E`` from the bits of ``x`` (shifts and masks of the same register,
    :mod:`~minsep.schemes.kernels.float_bits`), then the series of the module docstring after
    moving ``M`` into ``[sqrt(1/2), sqrt(2)]``."""
    word = as_bits(x)
    mantissa = from_bits((word & _MANTISSA) | _ONE_BITS)
    biased = from_bits((word >> 52) | _TWO52_BITS)  # x > 0: the sign bit is clear
    e = (biased - _TWO52) - 1023.0
    high = mantissa > _SQRT2
    m = 0.5 * mantissa if high else mantissa
    e = e + 1.0 if high else e
    f = m - 1.0  # exact: m in [0.70, 1.42]
    s = f / (2.0 + f)
    z = s * s
    q = _Q8
    q = q * z + _Q7
    q = q * z + _Q6
    q = q * z + _Q5
    q = q * z + _Q4
    q = q * z + _Q3
    q = q * z + _Q2
    q = q * z + _Q1
    q = q * z + _Q0
    return e * _LN2_HI + (e * _LN2_LO + (2.0 * s + s * z * q))


@njit(fastmath={"contract"})
def log_complements(u: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = ln(1 - u[i])`` within a few ulp, for every ``u`` in [0, 1) (vectorised; the
    logarithm :func:`log_waits` takes)."""
    for i in range(u.shape[0]):
        out[i] = _log(1.0 - u[i])


@njit(fastmath={"contract"})
def log_waits(u: np.ndarray, out: np.ndarray, log_stay: float, b: int, n: int) -> int:
    """``out[i] = min(floor(ln(1 - u[i]) / log_stay), n) + b`` (float64) for every ``u`` in
    [0, 1), the logarithm :func:`log_complements`'; returns how many quotients at most ``n + 1``
    lie within :data:`AMBIGUOUS` of an integer (NaN counts as ambiguous): their floor might
    differ from the one numpy's ``log`` gives. One vectorisable pass (``1 - u``, its bits, the
    series, the quotient and the wait). Above ``n + 1`` a quotient's wait is the horizon either
    way."""
    horizon = float(n)
    ambiguous = 0
    for i in range(u.shape[0]):
        quotient = _log(1.0 - u[i]) / log_stay
        whole = np.floor(quotient)
        gap = min(quotient - whole, whole + 1.0 - quotient)
        ambiguous += not (gap > AMBIGUOUS * max(quotient, 1.0) or quotient > horizon + 1.0)
        out[i] = min(whole, horizon) + b
    return ambiguous


def round_waits(u: np.ndarray, out: np.ndarray, log_stay: float, b: int, n: int) -> None:
    """``out = min(floor(ln(1 - u) / log_stay), n) + b``, the waits of a round of the chain, the
    same numbers as the array code's: :func:`log_waits`, or numpy's ``log`` and the same float
    operations when some wait is ambiguous. ``out``: at least ``u.size`` values; ``n``: the
    horizon; ``b``: the min-sep."""
    if log_waits(u, out, log_stay, b, n):
        np.log(np.subtract(1.0, u, out=out), out=out)
        np.floor(np.divide(out, log_stay, out=out), out=out)
        np.add(np.minimum(out, float(n), out=out), float(b), out=out)
