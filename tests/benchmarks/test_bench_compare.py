"""Benchmarks of the exact accountants and of ``compare`` (skipped unless --benchmark-only).

Run: ``.venv/bin/python -m pytest tests/benchmarks/test_bench_compare.py --benchmark-only``.
Target (issue 6): the ``make demo`` compare (n = 1024, |D|/B = 256, delta = 1e-3, target
epsilon = 2) under 3 minutes on 2 cores; :data:`DEMO` mirrors the demo's flags.
"""

from __future__ import annotations

from typing import Any

import pytest

from minsep.accountants.gaussian import GaussianAccountant
from minsep.accountants.pld import PLDAccountant
from minsep.framework.compare import ComparisonSetup, compare
from minsep.framework.registries import schemes, strategies

N, RATE, DELTA = 1024, 1 / 256, 1e-3

#: The setup of ``make demo`` (keep in step with the Makefile's ``minsep compare`` flags).
DEMO = ComparisonSetup(
    n_steps=N,
    rate=RATE,
    delta=DELTA,
    epsilon=2.0,
    bands=(4, 8, 16),
    min_seps=(16, 64, 128),
    accountant_options={"samples": 30_000, "seed": 0, "workers": 2, "progress": False},
)


@pytest.mark.parametrize(
    ("name", "options", "bands"), [("poisson", {}, 1), ("cyclic_poisson", {"min_sep": 8}, 8)]
)
def test_bench_pld_calibrate(
    benchmark: Any, name: str, options: dict[str, Any], bands: int
) -> None:
    scheme = schemes.get(name).from_rate(N, RATE, **options)
    strategy = strategies.get("banded_toeplitz").for_steps(N, bands=bands)
    result = benchmark(PLDAccountant().calibrate, scheme, strategy, 2.0, DELTA)
    assert result.sigma > 0


def test_bench_gaussian_calibrate(benchmark: Any) -> None:
    scheme = schemes.get("b_min_sep").from_rate(N, RATE, min_sep=256)
    strategy = strategies.get("banded_toeplitz").for_steps(N, bands=8)
    result = benchmark(GaussianAccountant().calibrate, scheme, strategy, 2.0, DELTA)
    assert result.sigma > 0


def test_bench_compare_exact_rows(benchmark: Any) -> None:
    setup = ComparisonSetup(
        n_steps=N,
        rate=RATE,
        delta=DELTA,
        epsilon=2.0,
        bands=(1, 4, 8, 16, 32),
        families=("poisson", "cyclic_poisson", "unamplified"),
    )
    rows = benchmark.pedantic(compare, (setup,), rounds=1, iterations=1)
    assert len(rows) == 1 + 4 + 5


def test_bench_compare_demo(benchmark: Any) -> None:
    rows = benchmark.pedantic(compare, (DEMO,), rounds=1, iterations=1)
    assert {r.family for r in rows} == set(DEMO.families)
