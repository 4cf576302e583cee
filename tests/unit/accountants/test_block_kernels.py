"""The compiled block factors (:mod:`minsep.accountants.block_kernels`) against the array code
of :mod:`minsep.accountants.block_laws`: the same ``ln G_B`` and ``ln M_B`` up to the
exponential's last bits, for zone and entry-min kinds, few and many coefficients, blocks
shorter than the coefficients, and rows whose gains overflow or underflow."""

from __future__ import annotations

import numpy as np
import pytest

from minsep.accountants import block_laws
from minsep.accountants.block_laws import BlockKind, block_factors
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE

pytestmark = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")

KINDS = [
    BlockKind(64, 57, (0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1), 3),
    BlockKind(40, 40, (0.5, 0.5), 1),
    BlockKind(5, 5, (1.0, 0.0, 0.0), 1),
    BlockKind(64, 64, (1.0,) + (0.0,) * 7, 1, entries=1),
    BlockKind(96, 96, (1.0,) + (0.0,) * 7, 1, entries=5),
    BlockKind(6, 6, (1.0, 0.0, 0.0, 0.0), 1, entries=2),
]
COEFFICIENTS = [
    np.array([1.0]),
    np.array([0.8, 0.5, 0.3]),
    np.array([0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05]),
    np.linspace(1.0, 0.1, 13),
]


def _array_code(
    kind: BlockKind, c: np.ndarray, sigma: float, p: float, z: np.ndarray
) -> np.ndarray:
    real = block_laws._compiled
    block_laws._compiled = lambda: False
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # its passes over the inf rows
            return block_factors(kind, c, sigma, p, z)
    finally:
        block_laws._compiled = real


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"L{k.length}-zone{k.zone}-e{k.entries}")
@pytest.mark.parametrize("c", COEFFICIENTS, ids=lambda c: f"k{c.size}")
@pytest.mark.parametrize("sigma", [0.02, 0.3, 1.0, 5.0])
def test_compiled_factors_are_the_array_codes(kind: BlockKind, c: np.ndarray, sigma: float) -> None:
    z = np.random.default_rng(kind.length + c.size).standard_normal((200, kind.length))
    z[0], z[1] = 60.0, -60.0  # exponents far beyond the polynomial's range: inf and 0 gains
    assert block_laws._compiled()
    fast = block_factors(kind, c, sigma, 0.15, z)
    slow = _array_code(kind, c, sigma, 0.15, z)
    np.testing.assert_array_equal(np.isfinite(fast), np.isfinite(slow))
    np.testing.assert_array_equal(fast[~np.isfinite(slow)], slow[~np.isfinite(slow)])
    finite = np.isfinite(slow)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-14, atol=1e-14)


def test_the_array_code_runs_when_the_kernels_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``MINSEP_KERNELS=array`` takes the array code (the same numbers up to rounding)."""
    from minsep.framework import backend

    monkeypatch.setenv("MINSEP_KERNELS", "array")
    backend.numba_unavailable_reason.cache_clear()
    try:
        assert not block_laws._compiled()
        kind, c = KINDS[0], COEFFICIENTS[2]
        z = np.random.default_rng(0).standard_normal((50, kind.length))
        values = block_factors(kind, c, 1.0, 0.15, z)
        assert np.all(np.isfinite(values))
    finally:
        monkeypatch.delenv("MINSEP_KERNELS")
        backend.numba_unavailable_reason.cache_clear()
