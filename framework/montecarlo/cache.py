"""An on-disk cache of seeded accounting answers, so that a repeated question is instant.

A Monte Carlo answer is a function of the question and the seed: the same scheme, strategy,
numbers (sigma, epsilon, delta), accountant options that change the sample (samples, pilot
samples, seed, chunk size and memory budget, backend and kernel set, proposal, sweep) and the
same code give the same bits (executors and worker counts do not change them,
:mod:`.sampling`). :func:`question_key` hashes all of that together with :func:`code_version`
(the package version and a hash of every source file of the package), so an edit of the code
or any other question misses the cache. An unseeded question draws fresh entropy and is never
cached: its answer is a new random draw each time, and reusing one would hide that.

Entries are result JSON (:meth:`~minsep.framework.results.Result.to_json`) in
:func:`cache_folder`: ``answers/`` under ``$MINSEP_CACHE_DIR``, else under the platform's user
cache folder (``~/.cache/minsep`` on Linux, as for the strategy coefficients). Writes are
atomic (a temporary file renamed into place); an entry that cannot be read or is not a result
is ignored with a warning and recomputed; a folder that cannot be written only costs the
cache.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import importlib
import importlib.metadata
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs
import platformdirs

from minsep.framework.backend import get_backend
from minsep.framework.errors import MinsepError
from minsep.framework.interfaces import Accountant, SamplingScheme, Strategy
from minsep.framework.results import Result

__all__ = [
    "CACHE_ENV",
    "EXECUTION_ONLY",
    "AnswerCache",
    "cache_folder",
    "code_version",
    "describe_hit",
    "question_key",
]

#: Environment variable naming the cache folder.
CACHE_ENV = "MINSEP_CACHE_DIR"
#: Accountant options that change how an answer is computed, never what it is.
EXECUTION_ONLY = frozenset(
    {"workers", "executor", "scheduler", "checkpoint", "checkpoint_interval", "progress",
     "max_seconds"}
)  # fmt: skip
#: The packages whose source makes up the code version.
_PACKAGES = (
    "minsep",
    "minsep.framework",
    "minsep.schemes",
    "minsep.strategies",
    "minsep.accountants",
)

R = TypeVar("R", bound=Result)


def cache_folder() -> Path:
    """``answers/`` in minsep's cache folder: ``$MINSEP_CACHE_DIR`` when set, else the
    platform's user cache folder (``~/.cache/minsep`` on Linux), shared with the strategy
    cache."""
    named = os.environ.get(CACHE_ENV)
    root = Path(named) if named else Path(platformdirs.user_cache_dir("minsep"))
    return root / "answers"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version and a SHA-256 of every ``.py`` file of the accounting packages."""
    digest = hashlib.sha256()
    for package in _PACKAGES:
        module = importlib.import_module(package)
        for folder in getattr(module, "__path__", []):
            for path in sorted(Path(folder).rglob("*.py")):
                digest.update(str(path.relative_to(folder)).encode())
                digest.update(path.read_bytes())
    try:
        version = importlib.metadata.version("minsep")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        version = "unknown"
    return f"{version}+{digest.hexdigest()[:16]}"


def question_key(
    question: str,
    scheme: SamplingScheme,
    strategy: Strategy,
    numbers: Mapping[str, float],
    accountant: Accountant,
) -> str | None:
    """The cache key of ``question`` (module docstring), or None when the answer must not be
    reused: the accountant has no fixed ``seed`` (fresh entropy) or options that are not
    plain data."""
    if getattr(accountant, "seed", None) is None or not attrs.has(type(accountant)):
        return None
    options = {
        k: v
        for k, v in attrs.asdict(cast(Any, accountant), recurse=True).items()
        if k not in EXECUTION_ONLY
    }
    if "backend" in options:  # the kernel set changes the random stream's rounding
        options["backend"] = get_backend(options["backend"]).spec
    payload = {
        "question": question,
        "numbers": {k: float(v) for k, v in sorted(numbers.items())},
        "scheme": scheme.public_parameters(),
        "strategy": strategy.public_parameters(),
        "accountant": getattr(type(accountant), "registry_name", type(accountant).__name__),
        "options": options,
        "code": code_version(),
    }
    try:
        text = json.dumps(payload, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


@attrs.frozen
class AnswerCache:
    """Results stored by question key in ``folder`` (module docstring)."""

    folder: Path = attrs.field(factory=lambda: cache_folder(), converter=Path)

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.folder / f"{key}.json"

    def load(self, key: str, kind: type[R]) -> tuple[R, datetime.datetime] | None:
        """The stored ``kind`` result of ``key`` and when it was stored, or None (missing or
        unreadable: a warning names the file, which is then recomputed and overwritten)."""
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
            stamp = path.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError as exc:
            warnings.warn(f"answer cache: cannot read {path}: {exc}", stacklevel=2)
            return None
        try:
            result = kind.from_json(text)
        except MinsepError as exc:
            warnings.warn(f"answer cache: ignoring corrupt entry {path}: {exc}", stacklevel=2)
            return None
        return result, datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC)

    def store(self, key: str, result: Result) -> None:
        """Save ``result`` under ``key`` atomically; a failure only warns."""
        temporary = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(result.to_json())
            os.replace(temporary, self.path(key))
            temporary = None
        except OSError as exc:
            warnings.warn(f"answer cache: cannot write in {self.folder}: {exc}", stacklevel=2)
        finally:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)

    def answer(
        self, key: str | None, kind: type[R], compute: Callable[[], R]
    ) -> tuple[R, datetime.datetime | None]:
        """The cached answer of ``key`` with its date, else ``compute()`` stored (when ``key``
        is not None) with None."""
        if key is not None:
            found = self.load(key, kind)
            if found is not None:
                return found
        result = compute()
        if key is not None:
            self.store(key, result)
        return result, None


def describe_hit(when: datetime.datetime, result: Any) -> str:
    """``cached answer from 2026-12-01 05:40 UTC (computed in 52.3 s; --no-cache to
    recompute)``."""
    seconds = getattr(result, "seconds", None)
    took = f"computed in {seconds:.3g} s; " if isinstance(seconds, float) else ""
    return f"cached answer from {when:%Y-%m-%d %H:%M} UTC ({took}--no-cache to recompute)"
