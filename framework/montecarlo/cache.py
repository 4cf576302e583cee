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
atomic (a temporary file renamed into place) and state the question key they answer. What is
read back is data, not a computation: an entry that cannot be read, is not a result, answers
another question or whose numbers contradict each other (:mod:`.trust`) is ignored with a
warning and recomputed. The folders are created 0700, and one that another user can write (or
owns) is refused with a warning saying how to fix it, as ssh refuses a loose key file; a
folder that cannot be written only costs the cache (README "Trust model").
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
from minsep.framework.option_groups import flat_options
from minsep.framework.results import Result

__all__ = [
    "CACHE_ENV",
    "ENTRY_FORMAT",
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
        k: v for k, v in flat_options(cast(Any, accountant)).items() if k not in EXECUTION_ONLY
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


def _warn(message: str) -> None:
    """A UserWarning of one line."""
    warnings.warn(message, stacklevel=5)


#: The ``format`` tag of an entry: ``{"format": ..., "question_key": key, "result": {...}}``.
ENTRY_FORMAT = "minsep-answer"


@attrs.frozen
class AnswerCache:
    """Results stored by question key in ``folder`` (module docstring)."""

    folder: Path = attrs.field(factory=lambda: cache_folder(), converter=Path)
    #: where the one-line warnings go (the command line prints them on stderr)
    report: Callable[[str], None] = attrs.field(default=_warn, eq=False)

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.folder / f"{key}.json"

    def _tell(self, message: str) -> None:
        self.report(" ".join(message.split()))  # one line

    def trusted(self) -> bool:
        """True when ``folder`` exists and only this user can write it (and so replace its
        entries: a folder above it that others can write only lets them swap in a folder of
        their own, which this refuses); else (when it exists) a warning says why and how to
        fix it."""
        from minsep.framework.montecarlo import trust

        if not self.folder.exists():
            return False
        problem = trust.others_can_write(self.folder, "answers", fix=f"set {CACHE_ENV}")
        if problem is not None:
            self._tell(f"answer cache: refusing to use it: {problem}")
            return False
        return True

    def _usable(self) -> bool:
        """Create the folders 0700 when missing, then :meth:`trusted` (warnings: why not)."""
        try:
            for folder in (self.folder.parent, self.folder):
                folder.mkdir(mode=0o700, exist_ok=True, parents=True)
        except OSError as exc:
            self._tell(f"answer cache: cannot write in {self.folder}: {exc}")
            return False
        return self.trusted()

    def load(
        self, key: str, kind: type[R], asked: Mapping[str, Any] | None = None
    ) -> tuple[R, datetime.datetime] | None:
        """The stored ``kind`` result of ``key`` and when it was stored, or None: missing, or
        refused with a warning naming the file, which is then recomputed and overwritten.

        Refused: a folder others can write (:func:`.trust.others_can_write`), a file that cannot be
        read or is not a result, a result stored under another question key or answering
        other ``asked`` numbers (e.g. ``{"sigma": 1.0}``), or whose numbers contradict each
        other (:mod:`.trust`: e.g. a certified epsilon below its estimate or not supported
        by its own verification evidence)."""
        if not self.path(key).exists() or not self.trusted():
            return None
        return self._read(key, kind, asked)

    def _read(
        self, key: str, kind: type[R], asked: Mapping[str, Any] | None
    ) -> tuple[R, datetime.datetime] | None:
        from minsep.framework.montecarlo import trust

        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
            stamp = path.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._tell(f"answer cache: cannot read {path}: {exc}")
            return None
        try:
            entry = json.loads(text)
            if not isinstance(entry, dict) or entry.get("format") != ENTRY_FORMAT:
                raise MinsepError("not a minsep answer entry")
            if entry.get("question_key") != key:
                raise MinsepError(f"it answers question {entry.get('question_key')!r}")
            result = trust.check_stored(entry.get("result"), kind)  # format, evidence
            trust.check_question(result, asked or {})
        except (MinsepError, ValueError) as exc:
            self._tell(f"answer cache: ignoring {path} (recomputing): {exc}")
            return None
        return result, datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC)

    def store(self, key: str, result: Result) -> None:
        """Save ``result`` under ``key`` atomically, in folders created 0700 (folders that
        others can write are not used); a failure only warns."""
        if self._usable():
            self._write(key, result)

    def _write(self, key: str, result: Result) -> None:
        temporary = None
        try:
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            entry = {"format": ENTRY_FORMAT, "question_key": key, "result": result.to_dict()}
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(json.dumps(entry))
            os.replace(temporary, self.path(key))
            temporary = None
        except OSError as exc:
            self._tell(f"answer cache: cannot write in {self.folder}: {exc}")
        finally:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)

    def answer(
        self,
        key: str | None,
        kind: type[R],
        compute: Callable[[], R],
        asked: Mapping[str, Any] | None = None,
    ) -> tuple[R, datetime.datetime | None]:
        """The cached answer of ``key`` (checked against ``asked``, :meth:`load`) with its
        date, else ``compute()`` stored (when ``key`` is not None) with None; folders that
        others can write are neither read nor written (one warning)."""
        from minsep.framework.montecarlo import trust

        usable = key is not None and self._usable()
        if usable:
            assert key is not None
            found = self._read(key, kind, asked)
            if found is not None:
                return found
        result = compute()
        if usable and not any(True for _ in trust.evidence_problems(result)):
            assert key is not None  # an answer it could not trust on reading is not stored
            self._write(key, result)
        return result, None


def describe_hit(when: datetime.datetime, result: Any) -> str:
    """``cached answer from 2026-12-01 05:40 UTC (computed in 52.3 s; --no-cache to
    recompute)``."""
    seconds = getattr(result, "seconds", None)
    took = f"computed in {seconds:.3g} s; " if isinstance(seconds, float) else ""
    return f"cached answer from {when:%Y-%m-%d %H:%M} UTC ({took}--no-cache to recompute)"
