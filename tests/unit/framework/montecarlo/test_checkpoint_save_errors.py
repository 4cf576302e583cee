"""A checkpoint that cannot be saved names the file and keeps the previous save (issue 28)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from minsep.framework.errors import CheckpointError
from minsep.framework.montecarlo import Checkpoint


def test_a_checkpoint_that_cannot_be_saved_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "q.ckpt"
    checkpoint = Checkpoint(path)
    checkpoint.write({})
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(CheckpointError) as info:
        checkpoint.write({})
    message = str(info.value)
    assert str(path) in message and "No space left" in message and "previous save" in message
    assert path.read_bytes() == before and not list(tmp_path.glob(".q.ckpt.*"))
