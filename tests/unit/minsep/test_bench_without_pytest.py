"""``python -m minsep.bench`` runs on a user's install, which has no pytest (CI's user venv)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["pytest"] = None  # importing pytest now raises ImportError, as without it
from minsep.bench import QUICK, bench_models
entries = bench_models(QUICK[0])
assert any(e.label == "b_min_sep" for e in entries), [e.label for e in entries]
"""


def test_bench_models_are_built_without_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
