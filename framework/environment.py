"""What produced a result: package versions and the git commit of the source tree.

Every accounting result (``Result.environment``), every ``compare --json`` output and every
paper JSON records :func:`environment`, so that a number can be traced to the code and the
numerical libraries that computed it (dp_accounting's PLD, numpy/scipy and numba all move
results in the last digits between releases).
"""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import subprocess
from pathlib import Path

__all__ = ["PACKAGES", "environment", "git_commit"]

#: Distributions whose versions are recorded (``"not installed"`` when missing).
PACKAGES = ("minsep", "numpy", "scipy", "dp-accounting", "numba")

#: The folder whose git commit is recorded: the source tree this module was loaded from.
_SOURCE = Path(__file__).resolve().parent


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(folder: Path, *command: str) -> str:
    """The stripped output of ``git COMMAND`` run in ``folder`` (raises on failure)."""
    return subprocess.run(
        ["git", *command], cwd=folder, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def git_commit(folder: Path = _SOURCE) -> str:
    """The commit checked out at ``folder`` (with ``+dirty`` when tracked files differ from
    it), or ``"unknown"`` when it is not a git checkout or git is unavailable."""
    try:
        commit = _git(folder, "rev-parse", "HEAD")
        status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not commit:
        return "unknown"
    return f"{commit}+dirty" if status else commit


def environment() -> dict[str, str]:
    """``{package: version, ..., "python": ..., "git_commit": ...}`` (computed once per
    process; the keys use import names, e.g. ``dp_accounting``)."""
    return dict(_environment())


@functools.cache
def _environment() -> tuple[tuple[str, str], ...]:
    versions = [(name.replace("-", "_"), _version(name)) for name in PACKAGES]
    return (*versions, ("python", platform.python_version()), ("git_commit", git_commit()))
