"""On-disk cache of optimised strategy coefficients.

Optimised coefficients are a deterministic function of their inputs, so they are stored as small
JSON files keyed by those inputs and the algorithm version. The directory is
``$MINSEP_CACHE_DIR`` when set, else ``platformdirs.user_cache_dir("minsep")``; entries live in
its ``strategies/`` subfolder. A missing, unreadable, corrupt or mismatching file is treated as a
miss (and rewritten by the caller); an unwritable directory only costs the cache.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

ENV_VAR = "MINSEP_CACHE_DIR"


def cache_dir() -> Path:
    """The root cache directory (read from the environment at every call)."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else Path(platformdirs.user_cache_dir("minsep"))


def entry_path(key: Mapping[str, Any]) -> Path:
    """The file holding the entry for ``key`` (a flat mapping of simple values)."""
    stem = "-".join(f"{name}={key[name]}" for name in sorted(key))
    safe = "".join(ch if ch.isalnum() or ch in "=-_." else "_" for ch in stem)
    return cache_dir() / "strategies" / f"{safe}.json"


def load_coefficients(key: Mapping[str, Any], length: int) -> tuple[float, ...] | None:
    """The cached coefficients for ``key``, or None on a miss or an invalid file.

    A file counts only if it parses, repeats ``key`` exactly and holds ``length`` finite,
    non-negative numbers with a positive first entry.
    """
    path = entry_path(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != dict(key):
        return None
    values = data.get("coefficients")
    if not isinstance(values, list) or len(values) != length:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    floats = tuple(float(v) for v in values)
    if not all(math.isfinite(v) and v >= 0 for v in floats) or not floats[0] > 0:
        return None
    return floats


def store_coefficients(
    key: Mapping[str, Any], coefficients: tuple[float, ...], **extra: Any
) -> None:
    """Write the entry atomically (temporary file + rename); warn and go on if it fails."""
    path = entry_path(key)
    payload = {"key": dict(key), "coefficients": list(coefficients), **extra}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        warnings.warn(
            f"could not write the strategy cache entry {path}: {exc}", UserWarning, stacklevel=3
        )
