"""The on-disk kernel cache is dropped when any kernel source changes (not only the function's
own file): a kernel must never run stale machine code of a callee in another file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minsep.schemes.kernels import jit

pytestmark = pytest.mark.skipif(not jit.NUMBA_AVAILABLE, reason="needs numba")


class _Cache:
    def __init__(self, path: Path) -> None:
        self.cache_path = str(path)
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


class _Compiled:
    def __init__(self, path: Path) -> None:
        self._cache = _Cache(path)


def _kernel() -> None:
    """A stand-in kernel."""


def test_a_changed_fingerprint_flushes_the_index_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled = _Compiled(tmp_path)
    monkeypatch.setattr(jit, "kernel_fingerprint", lambda: "sources-1")
    jit.refresh_cache(compiled, _kernel)
    jit.refresh_cache(compiled, _kernel)
    assert compiled._cache.flushes == 1  # made under these sources: kept
    monkeypatch.setattr(jit, "kernel_fingerprint", lambda: "sources-2")
    jit.refresh_cache(compiled, _kernel)
    assert compiled._cache.flushes == 2
    stamps = list(tmp_path.glob("*.minsep-sources"))
    assert [p.read_text() for p in stamps] == ["sources-2"]


def test_an_unwritable_cache_folder_is_left_alone(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    compiled = _Compiled(blocker / "sub")
    jit.refresh_cache(compiled, _kernel)  # no error: numba caches elsewhere or not at all
    jit.refresh_cache(object(), _kernel)  # a dispatcher without a cache


SCRIPT = """
import sys
sys.path.insert(0, {folder!r})
from minsep.schemes.kernels import jit
jit.kernel_fingerprint = lambda: {fingerprint!r}
import demo_kernel
assert demo_kernel.twice(2.0) == 4.0
print(len(demo_kernel.twice.stats.cache_hits))
"""


def _run(folder: Path, fingerprint: str) -> int:
    script = SCRIPT.format(folder=str(folder), fingerprint=fingerprint)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    return int(done.stdout.split()[-1])


def test_numba_recompiles_a_cached_kernel_when_the_sources_change(tmp_path: Path) -> None:
    (tmp_path / "demo_kernel.py").write_text(
        textwrap.dedent(
            """
            from minsep.schemes.kernels.jit import njit

            @njit
            def twice(x: float) -> float:
                return 2.0 * x
            """
        )
    )
    assert _run(tmp_path, "a") == 0  # compiled, written to the cache
    assert _run(tmp_path, "a") == 1  # loaded from the cache
    assert _run(tmp_path, "b") == 0  # other kernel sources: compiled afresh
    assert _run(tmp_path, "b") == 1
