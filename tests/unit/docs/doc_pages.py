"""Running the Python blocks of a docs/ page in order, as the walkthrough tests do."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[3] / "docs"


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of ``page``, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)


@contextmanager
def executed(page: Path, module: str, cleanup: Callable[[], None]) -> Iterator[dict[str, Any]]:
    """The namespace after executing every Python block of ``page``; ``cleanup`` runs after
    (e.g. unregistering what the page registered), whether the blocks ran or failed."""
    namespace: dict[str, Any] = {"__name__": module}
    try:
        for number, block in enumerate(python_blocks(page), start=1):
            exec(compile(block, f"{page.name} (python block {number})", "exec"), namespace)
        yield namespace
    finally:
        cleanup()
