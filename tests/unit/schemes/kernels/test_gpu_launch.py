"""The CUDA drivers' shared launcher (schemes/kernels/gpu.py), run on numpy with a Python stand-in
for the kernel: every row is computed once, in batches whose scratch stays below the budget, and
the operands carry float64 rows with their strides in elements."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from minsep.schemes.kernels import gpu


def test_launch_covers_every_row_once_in_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "RING_BYTES", 8 * 3 * 7)  # 7 rows of 3 ring values per launch
    launches: list[tuple[int, int, int, int]] = []
    seen = np.zeros(30, dtype=np.int64)

    def kernel(grid: tuple[int], block: tuple[int], args: tuple[Any, ...]) -> None:
        scale, out, row0, count, ring = args
        launches.append((grid[0], int(row0), int(count), ring.size))
        assert block == (gpu.THREADS,) and grid[0] * gpu.THREADS >= count
        out[row0 : row0 + count] = scale * np.arange(row0, row0 + count) + 1.0
        seen[row0 : row0 + count] += 1

    out = gpu.launch(kernel, 30, 3, (2.0,), np)
    np.testing.assert_array_equal(out, 2.0 * np.arange(30) + 1.0)
    np.testing.assert_array_equal(seen, 1)
    assert [(row0, count) for _, row0, count, _ in launches] == [
        (0, 7), (7, 7), (14, 7), (21, 7), (28, 2)
    ]  # fmt: skip
    assert all(size == 3 * 7 for *_, size in launches)


def test_rows_are_float64_with_strides_in_elements() -> None:
    values = np.arange(12, dtype=np.float32).reshape(3, 4).T  # (4, 3), column-major
    rows, stride_s, stride_i = gpu.float64_rows(values, np)
    assert rows.dtype == np.float64 and (stride_s, stride_i) == (1, 4)
    signal, *strides, has_signal = gpu.signal_rows(None, rows, np)
    assert signal is rows and has_signal == 0 and strides == [1, 4]
    dense = np.ones((4, 3))
    signal, *strides, has_signal = gpu.signal_rows(dense, rows, np)
    assert signal is dense and has_signal == 1 and strides == [3, 1]
