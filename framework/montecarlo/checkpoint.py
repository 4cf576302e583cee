"""Checkpoints of long Monte Carlo runs: save the merged tally, resume after a crash.

One checkpoint file serves one accounting question. Each :func:`~minsep.framework.montecarlo.
sampling.sample` call of that question is a **stage**, keyed by its label (``"pilot"`` and
``"verify"`` for a certified epsilon or delta; ``"pilot coarse"``, ``"pilot fine"`` and
``"calibrate"`` for Algorithm 5; ``"curve"`` for a certified curve), so the pilot (stream 0)
and the verification (stream 1) live side by side in the same file and a finished stage is
never recomputed.

What a stage records. The engine merges chunk results strictly in chunk order, so the
finished chunks of a stage are always the **prefix** ``0 .. chunks_done - 1``: the checkpoint
stores that count (not a set), the tally of exactly those chunks, and the run identity
(:meth:`ChunkTask.describe` and its SHA-256). Completions that a parallel executor holds
out of order are not recorded; after a crash they are recomputed (at most the executor's
window of chunks). Since the tally and ``chunks_done`` are written together in one atomic
replace, a chunk is either in both or in neither: a resumed run never counts a chunk twice and
never skips one. Resuming continues the merge at chunk ``chunks_done`` in the same order, so
the final tally, float sums included, is bit-identical to an uninterrupted run (histogram
array lengths are stored too, so even the dot products read the same arrays).

File format (JSON, version 1)::

    {"format": "minsep-montecarlo-checkpoint", "version": 1,
     "body": {"stages": {label: {"identity": {...}, "identity_sha256": "...",
                                 "n_chunks": N, "chunks_done": k, "tally": {...},
                                 "histogram_sizes": [[sigma_index, direction, size], ...],
                                 "saved_at": unix_time}}},
     "checksum": "sha256:<hex of the canonical JSON of body>"}

Writes go to a temporary file in the same folder, are fsync'ed, then ``os.replace``'d over the
checkpoint (atomic on POSIX and Windows), so a crash mid-write leaves the previous checkpoint.
A stage is saved every ``every_chunks`` merged chunks or ``every_seconds`` seconds, whichever
comes first, and once when it completes.

One run at a time. While a question runs, it holds an exclusive ``fcntl.flock`` on the
sidecar file ``.NAME.lock`` beside the checkpoint (:meth:`Checkpoint.locked`; re-entrant within
a process), so a second process using the same checkpoint fails at once with a
CheckpointError instead of interleaving its stages with the first. Holding the lock, a run
deletes the temporary files ``.NAME.*.tmp`` left by a writer killed mid-write (SIGKILL): no
other writer can own them. The holder deletes the lock file when it lets go (a process that
locked the deleted file notices and locks the new one). Where ``fcntl`` does not exist
(Windows) there is no lock.

The checkpoint's folder must exist and be writable when the :class:`Checkpoint` is built,
so an unusable path fails before any sampling, not at the first save.

Refusals (:class:`~minsep.framework.errors.CheckpointError`, never silently ignored): a file
that another user owns or that group or others can write (written 0600; the message says
``chmod 600``: README "Trust model"), that is not valid JSON (e.g. truncated), not a minsep
checkpoint, of another format version, whose checksum does not match its contents, or whose
entries are malformed or inconsistent;
and a stage written for other parameters (the message names each differing parameter with
both values). Delete the file, or pass another path, to start afresh.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep.framework import validation as v
from minsep.framework.errors import CheckpointError
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo.accumulators import SweepTally

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT", "VERSION", "Checkpoint", "Journal", "canonical_json", "identity_digest"]

#: The ``format`` field of every checkpoint file.
FORMAT = "minsep-montecarlo-checkpoint"
#: The format version this module writes and reads.
VERSION = 1


def canonical_json(data: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces); floats round-trip exactly."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def identity_digest(identity: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a run identity (``ChunkTask.describe()``)."""
    return hashlib.sha256(canonical_json(identity).encode()).hexdigest()


def _checksum(body: dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(body).encode()).hexdigest()


@attrs.frozen
class Checkpoint:
    """Where a run keeps its progress, and how often it saves it.

    Attributes:
        path: the checkpoint file (created on the first save; its folder must exist).
        every_chunks: save after this many newly merged chunks (None: only by time).
        every_seconds: save when this many seconds passed since the last save (0: after
            every chunk).
    """

    path: Path = attrs.field(converter=Path)
    every_chunks: int | None = attrs.field(default=None, validator=v.optional(v.positive_int()))
    every_seconds: float = attrs.field(default=60.0, validator=v.number(low=0.0))

    def __attrs_post_init__(self) -> None:
        if not self.path.parent.is_dir():
            raise v.fail(self, "path", str(self.path), "a file in an existing folder")
        if self.path.is_dir():
            raise v.fail(self, "path", str(self.path), "a file, not a folder")
        problem = writable_folder_problem(self.path)
        if problem is not None:
            raise v.fail(self, "path", str(self.path), f"a file in a writable folder ({problem})")

    @property
    def lock_path(self) -> Path:
        """The sidecar lock file ``.NAME.lock`` beside the checkpoint."""
        return self.path.with_name(f".{self.path.name}.lock")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the checkpoint for this process while the block runs (module docstring).

        Re-entrant within the process. Raises CheckpointError at once when another process
        holds it. On first entry, deletes the stale temporary files of killed writers.
        """
        key = str(self.path.resolve())
        with _HELD_GUARD:
            held = _HELD.get(key)
            if held is not None:
                _HELD[key] = (held[0], held[1] + 1)
            else:
                _HELD[key] = (self._acquire(), 1)
                self._remove_stale_temporaries()
        try:
            yield
        finally:
            with _HELD_GUARD:
                fd, depth = _HELD.pop(key)
                if depth > 1:
                    _HELD[key] = (fd, depth - 1)
                else:
                    _release(fd, self.lock_path)

    def _acquire(self) -> int:
        """Open and lock the sidecar file; -1 where there is no ``fcntl``.

        The holder deletes the file when it lets go, so a lock taken on a file that was
        deleted meanwhile (its inode no longer at the path) is dropped and taken again.
        """
        if fcntl is None:  # pragma: no cover - Windows
            return -1
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise CheckpointError(
                    f"checkpoint {str(self.path)!r} cannot be locked: {str(self.lock_path)!r} "
                    f"cannot be opened ({exc.strerror or exc})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise CheckpointError(
                    f"checkpoint {str(self.path)!r} is in use by another run (process {holder} "
                    f"holds {str(self.lock_path)!r}): one file serves one run at a time. Wait "
                    "for it to finish, or choose another checkpoint path."
                ) from None
            try:
                current = os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                break
            _release(fd, None)  # deleted by its previous holder meanwhile: lock the new file
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        return fd

    def _remove_stale_temporaries(self) -> None:
        for stale in self.path.parent.glob(f".{glob.escape(self.path.name)}.*.tmp"):
            stale.unlink(missing_ok=True)

    # -- reading --------------------------------------------------------------------------

    def read(self) -> dict[str, dict[str, Any]]:
        """The verified stages of the file (``{}`` when it does not exist yet).

        Raises CheckpointError when the file is corrupt (see the module docstring).
        """
        from minsep.framework.montecarlo.trust import others_can_write

        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise self._corrupt(f"it cannot be read ({exc})") from exc
        loose = others_can_write(self.path, "tallies")
        if loose is not None:
            raise CheckpointError(f"checkpoint {str(self.path)!r} is refused: {loose}")
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._corrupt(f"it is not valid JSON, perhaps truncated ({exc})") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise self._corrupt("it is not a minsep Monte Carlo checkpoint")
        if document.get("version") != VERSION:
            raise self._corrupt(
                f"it has format version {document.get('version')!r}; this minsep reads "
                f"version {VERSION}"
            )
        body = document.get("body")
        if not isinstance(body, dict) or document.get("checksum") != _checksum(body):
            raise self._corrupt("its checksum does not match its contents (modified or damaged)")
        stages = body.get("stages")
        if not isinstance(stages, dict):
            raise self._corrupt("it has no stage table")
        for label, entry in stages.items():
            self._check_entry(label, entry)
        return stages

    def stored_seed(self) -> int | None:
        """The seed the stages of the file were drawn with (None: no file or no stage).

        Lets a run started with fresh entropy resume with the same seed.
        """
        seeds = {int(entry["identity"]["seed"]) for entry in self.read().values()}
        if len(seeds) > 1:
            raise self._corrupt(f"its stages were drawn with different seeds {sorted(seeds)}")
        return seeds.pop() if seeds else None

    def _corrupt(self, why: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {str(self.path)!r} is refused: {why}. Delete it (or choose another "
            "checkpoint path) to start afresh."
        )

    def _check_entry(self, label: str, entry: Any) -> None:
        try:
            identity = entry["identity"]
            ok = (
                isinstance(identity, dict)
                and isinstance(identity.get("seed"), int)
                and entry["identity_sha256"] == identity_digest(identity)
                and isinstance(entry["n_chunks"], int)
                and isinstance(entry["chunks_done"], int)
                and 0 <= entry["chunks_done"] <= entry["n_chunks"]
            )
            if not ok:
                raise ValueError("identity digest or chunk counts inconsistent")
            tally = _decode(entry)
            size, total = int(identity["chunk_size"]), int(identity["n_samples"])
            expected = min(entry["chunks_done"] * size, total)
            for t in tally.tallies.values():
                held = {t.count} | (set() if t.histogram is None else {t.histogram.total})
                if held != {expected}:
                    raise ValueError(f"a tally holds {sorted(held)} samples, expected {expected}")
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise self._corrupt(f"stage {label!r} is malformed ({exc})") from None

    # -- running --------------------------------------------------------------------------

    def journal(self, stage: str, identity: dict[str, Any], n_chunks: int) -> Journal:
        """Open ``stage`` for a run identified by ``identity`` (``ChunkTask.describe()``).

        Returns a :class:`Journal` holding the restored tally and ``chunks_done`` (None and 0
        for a new stage). Raises CheckpointError when the file is corrupt or the stage was
        written for other parameters.
        """
        stages = self.read()
        entry = stages.get(stage)
        if entry is None:
            return Journal(self, stage, identity, n_chunks, stages, None, 0)
        stored = entry["identity"]
        if identity_digest(stored) != identity_digest(identity):
            raise CheckpointError(
                f"checkpoint {str(self.path)!r} is refused: its stage {stage!r} was written for "
                f"other parameters ({_differences(stored, identity)}). Use the original "
                "parameters to resume, or delete the file (or choose another checkpoint path) "
                "to start afresh."
            )
        if entry["n_chunks"] != n_chunks:  # implied by the identity; a guard all the same
            raise self._corrupt(f"stage {stage!r} has {entry['n_chunks']} chunks, not {n_chunks}")
        restored = _decode(entry)
        return Journal(self, stage, identity, n_chunks, stages, restored, entry["chunks_done"])

    def write(self, stages: dict[str, dict[str, Any]]) -> None:
        """Atomically replace the file with ``stages`` (temporary file, fsync, os.replace)."""
        body = canonical_json({"stages": stages})  # encoded once: checksum and document
        checksum = "sha256:" + hashlib.sha256(body.encode()).hexdigest()
        text = (  # = canonical_json(document): keys in sorted order
            f'{{"body":{body},"checksum":{json.dumps(checksum)},'
            f'"format":{json.dumps(FORMAT)},"version":{VERSION}}}'
        )
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:  # e.g. ENOSPC: name the file, say what is kept
            kept = "keeps the previous save" if self.path.exists() else "is not written"
            raise CheckpointError(
                f"checkpoint {str(self.path)!r} cannot be saved: {exc.strerror or exc} "
                f"(writing {str(temporary)!r}); the checkpoint {kept}. Free space, or "
                "choose another checkpoint path."
            ) from None
        finally:
            temporary.unlink(missing_ok=True)


#: Checkpoints this process holds: resolved path -> (lock file descriptor, nesting depth).
_HELD: dict[str, tuple[int, int]] = {}
_HELD_GUARD = threading.Lock()


def _release(fd: int, path: Path | None) -> None:
    """Delete the lock file at ``path`` (while still holding it), then unlock and close."""
    if fd < 0 or fcntl is None:  # pragma: no cover - Windows
        return
    try:
        if path is not None:
            path.unlink(missing_ok=True)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def writable_folder_problem(path: str | os.PathLike[str]) -> str | None:
    """None when a file can be created in the folder of ``path``, else why not.

    Creates and deletes a probe file (``os.access`` is not enough: it ignores read-only
    mounts on some systems and is always true for root).
    """
    folder = Path(path).parent
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{Path(path).name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        return f"cannot create a file in {str(folder)!r}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(probe)
    return None


def _differences(stored: dict[str, Any], current: dict[str, Any]) -> str:
    parts = []
    for key in sorted(set(stored) | set(current)):
        old, new = stored.get(key, "<absent>"), current.get(key, "<absent>")
        if canonical_json(old) != canonical_json(new):
            parts.append(f"{key} = {_short(old)} in the checkpoint, {_short(new)} in this run")
    return "; ".join(parts) or "identity digests differ"


def _short(value: Any, limit: int = 120) -> str:
    text = canonical_json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _encode(tally: SweepTally) -> dict[str, Any]:
    sizes = [
        [i, d.value, int(t.histogram.counts.size)]
        for (i, d), t in sorted(tally.tallies.items(), key=lambda kv: (kv[0][0], kv[0][1].value))
        if t.histogram is not None
    ]
    return {"tally": tally.to_dict(), "histogram_sizes": sizes}


def _decode(entry: dict[str, Any]) -> SweepTally:
    """The stage's tally, histogram arrays restored to their saved lengths."""
    tally = SweepTally.from_dict(entry["tally"])
    for i, direction, size in entry["histogram_sizes"]:
        hist = tally.tallies[(int(i), Direction(direction))].histogram
        if hist is None or int(size) < hist.counts.size:
            raise ValueError("histogram sizes disagree with the tally")
        padding = np.zeros(int(size) - hist.counts.size, dtype=np.int64)
        hist.counts = np.concatenate([hist.counts, padding])
    return tally


@attrs.define(eq=False)
class Journal:
    """The progress of one stage: the restored tally, and saving as chunks are merged.

    ``tally`` and ``chunks_done`` are what the checkpoint held (None and 0 for a new stage).
    The sampler merges chunk ``chunks_done``, then ``chunks_done + 1``, ... into the running
    tally and calls :meth:`record` after each; :meth:`finish` saves the completed stage.
    """

    checkpoint: Checkpoint
    stage: str
    identity: dict[str, Any]
    n_chunks: int
    stages: dict[str, dict[str, Any]]
    tally: SweepTally | None
    chunks_done: int
    _saved_chunks: int = attrs.field(init=False)
    _saved_at: float = attrs.field(init=False, factory=time.monotonic)
    _digest: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._saved_chunks = self.chunks_done
        self._digest = identity_digest(self.identity)

    @property
    def complete(self) -> bool:
        """True when every chunk of the stage is in the restored tally."""
        return self.chunks_done == self.n_chunks

    def record(self, tally: SweepTally, chunks_done: int) -> None:
        """Chunks ``0 .. chunks_done - 1`` are merged into ``tally``; save if one is due."""
        if chunks_done != self.chunks_done + 1:
            raise CheckpointError(
                f"chunks must be recorded in order: got {chunks_done} after {self.chunks_done}"
            )
        self.chunks_done = chunks_done
        every = self.checkpoint.every_chunks
        due_by_count = every is not None and chunks_done - self._saved_chunks >= every
        elapsed = time.monotonic() - self._saved_at
        if due_by_count or elapsed >= self.checkpoint.every_seconds or self.complete:
            self.save(tally)

    def finish(self, tally: SweepTally) -> None:
        """Save ``tally`` unless the file already holds ``chunks_done`` chunks (at the end of
        the stage, and when a run is interrupted)."""
        if self._saved_chunks != self.chunks_done:
            self.save(tally)

    def save(self, tally: SweepTally) -> None:
        """Write ``tally`` with ``chunks_done`` (one atomic replace of the whole file)."""
        self.stages[self.stage] = {
            "identity": self.identity,
            "identity_sha256": self._digest,
            "n_chunks": self.n_chunks,
            "chunks_done": self.chunks_done,
            **_encode(tally),
            "saved_at": math.floor(time.time()),
        }
        self.checkpoint.write(self.stages)
        self._saved_chunks = self.chunks_done
        self._saved_at = time.monotonic()
