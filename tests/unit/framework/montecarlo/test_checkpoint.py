"""Checkpoints of Monte Carlo runs: resume bit-identically, never redo or double-count a chunk,
refuse corrupt or mismatched files."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import numpy as np
import pytest

from minsep.framework.errors import CheckpointError, ConfigurationError
from minsep.framework.interfaces import Direction
from minsep.framework.montecarlo import (
    BOTH,
    PILOT_STREAM,
    Checkpoint,
    ChunkTask,
    EngineConfig,
    SweepTally,
    certify_epsilon,
    estimate_delta,
    estimate_epsilon,
    sample,
    sample_chunks,
)
from minsep.framework.montecarlo.checkpoint import FORMAT, canonical_json
from minsep.framework.option_groups import grouped
from minsep.framework.registries import accountants
from tests.unit.montecarlo_toys import SubsampledGaussianToy, ToyScheme, ToyStrategy

T = TypeVar("T")
MODEL = SubsampledGaussianToy(rate=0.3)
SIGMAS = (0.8, 1.3)
CHECKS = (0.25, 1.0)


class SimulatedCrashError(RuntimeError):
    """Stands for the process dying mid-run."""


@attrs.define
class Recording:
    """In-process executor that records every chunk it computes (over all its ``map`` calls)
    and crashes once it has computed ``crash_after`` chunks."""

    crash_after: int | None = None
    executed: list[int] = attrs.field(factory=list)

    @property
    def workers(self) -> int:
        return 1

    def map(self, task: Callable[[int], T], indices: Sequence[int]) -> Iterator[T]:
        for i in indices:
            if self.crash_after is not None and len(self.executed) >= self.crash_after:
                raise SimulatedCrashError(f"crashed before chunk {i}")
            self.executed.append(i)
            yield task(i)


def _task(n_samples: int = 10_500, seed: int = 5, **changes: Any) -> ChunkTask:
    task = ChunkTask(MODEL, SIGMAS, n_samples, seed, PILOT_STREAM, CHECKS, BOTH, 1000)
    return attrs.evolve(task, **changes)


def _config(executor: Any = None, checkpoint: Checkpoint | None = None) -> EngineConfig:
    return EngineConfig(chunk_size=1000, executor=executor or Recording(), checkpoint=checkpoint)


def _whole(task: ChunkTask) -> SweepTally:
    return sample_chunks(task, range(task.n_chunks), _config())


def _assert_identical(a: SweepTally, b: SweepTally) -> None:
    assert a.to_dict() == b.to_dict()
    for key, tally in a.tallies.items():
        other = b.tallies[key]
        np.testing.assert_array_equal(tally.sum_x, other.sum_x)
        if tally.histogram is not None:
            assert other.histogram is not None
            assert tally.histogram.counts.shape == other.histogram.counts.shape
            np.testing.assert_array_equal(tally.histogram.counts, other.histogram.counts)
    for i in range(len(a.sigmas)):
        assert estimate_delta(a, CHECKS[1], i).value == estimate_delta(b, CHECKS[1], i).value
        assert estimate_epsilon(a, 1e-2, i).value == estimate_epsilon(b, 1e-2, i).value


def _run(task: ChunkTask, path: Path, executor: Recording, **policy: Any) -> SweepTally:
    checkpoint = Checkpoint(path, **policy)
    return sample_chunks(task, range(task.n_chunks), _config(executor, checkpoint), stage="s")


# -- resume ----------------------------------------------------------------------------------


def test_uninterrupted_checkpointed_run_is_identical_and_a_rerun_computes_nothing(
    tmp_path: Path,
) -> None:
    task = _task()
    path = tmp_path / "run.ckpt"
    first = Recording()
    checkpointed = _run(task, path, first, every_chunks=4)
    _assert_identical(checkpointed, _whole(task))
    assert first.executed == list(range(task.n_chunks))
    stage = Checkpoint(path).read()["s"]
    assert stage["chunks_done"] == stage["n_chunks"] == task.n_chunks == 11
    again = Recording()
    _assert_identical(_run(task, path, again), checkpointed)
    assert again.executed == []


@pytest.mark.parametrize(("every", "crash_after", "saved"), [(1, 7, 7), (3, 7, 6), (None, 5, 0)])
def test_crash_and_resume_is_bit_identical_and_never_reruns_a_saved_chunk(
    tmp_path: Path, every: int | None, crash_after: int, saved: int
) -> None:
    task = _task()
    path = tmp_path / "run.ckpt"
    crashed = Recording(crash_after=crash_after)
    with pytest.raises(SimulatedCrashError):
        _run(task, path, crashed, every_chunks=every, every_seconds=3600.0)
    assert crashed.executed == list(range(crash_after))
    if saved:
        assert Checkpoint(path).read()["s"]["chunks_done"] == saved
    else:
        assert not path.exists()  # nothing was due before the crash
    resumed = Recording()
    result = _run(task, path, resumed, every_chunks=every, every_seconds=3600.0)
    assert resumed.executed == list(range(saved, task.n_chunks))  # finished chunks skipped
    _assert_identical(result, _whole(task))
    assert result.count == task.n_samples  # each chunk counted exactly once


def test_repeated_crashes_still_converge_to_the_same_bits(tmp_path: Path) -> None:
    task = _task(n_samples=12_000)
    path = tmp_path / "run.ckpt"
    executed: list[int] = []
    for _ in range(5):
        executor = Recording(crash_after=3)
        try:
            result = _run(task, path, executor, every_chunks=1)
        except SimulatedCrashError:
            executed += executor.executed
            continue
        executed += executor.executed
        break
    assert sorted(executed) == list(range(task.n_chunks))  # each chunk computed once
    _assert_identical(result, _whole(task))


def test_time_based_saving(tmp_path: Path) -> None:
    task = _task()
    path = tmp_path / "run.ckpt"
    with pytest.raises(SimulatedCrashError):
        _run(task, path, Recording(crash_after=4), every_seconds=0.0)
    assert Checkpoint(path).read()["s"]["chunks_done"] == 4


def test_histogram_lengths_survive_the_round_trip(tmp_path: Path) -> None:
    """Trailing empty bins (as left by overflowing samples) are restored, so every later
    dot product reads arrays of the same length as the uninterrupted run."""
    task = _task(n_samples=3000, sigmas=(0.3,))
    tally = task.empty()
    hist = tally.tally(0, Direction.ADD).histogram
    assert hist is not None
    hist.counts = np.array([0, 995, 0, 0, 0], dtype=np.int64)
    hist.overflow = 5
    other = tally.tally(0, Direction.REMOVE).histogram
    assert other is not None
    other.counts = np.array([1000], dtype=np.int64)
    for t in tally.tallies.values():
        t.count = 1000
    journal = Checkpoint(tmp_path / "h.ckpt").journal("s", task.describe(), task.n_chunks)
    journal.record(tally, 1)
    journal.save(tally)
    restored = Checkpoint(tmp_path / "h.ckpt").journal("s", task.describe(), task.n_chunks)
    assert restored.tally is not None and restored.chunks_done == 1
    again = restored.tally.tally(0, Direction.ADD).histogram
    assert again is not None
    np.testing.assert_array_equal(again.counts, [0, 995, 0, 0, 0])
    assert again.overflow == 5


def test_stages_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "q.ckpt"
    config = EngineConfig(chunk_size=1000, checkpoint=Checkpoint(path, every_chunks=2))
    reference = certify_epsilon(
        MODEL, 1.0, 1e-2, samples=8000, pilot_samples=3000, seed=4,
        config=EngineConfig(chunk_size=1000),
    )  # fmt: skip
    first = certify_epsilon(MODEL, 1.0, 1e-2, samples=8000, pilot_samples=3000, seed=4,
                            config=config)  # fmt: skip
    stages = Checkpoint(path).read()
    assert set(stages) == {"pilot", "verify"}
    assert stages["pilot"]["identity"]["stream"] == 0
    assert stages["verify"]["identity"]["stream"] == 1
    nothing = attrs.evolve(config, executor=Recording(crash_after=0))  # computes no chunk
    again = certify_epsilon(MODEL, 1.0, 1e-2, samples=8000, pilot_samples=3000, seed=4,
                            config=nothing)  # fmt: skip
    for cert in (first, again):
        assert attrs.asdict(cert, filter=lambda a, _: a.name != "seconds") == attrs.asdict(
            reference, filter=lambda a, _: a.name != "seconds"
        )


# -- refusals --------------------------------------------------------------------------------


def _complete_checkpoint(tmp_path: Path) -> Path:
    path = tmp_path / "run.ckpt"
    _run(_task(), path, Recording(), every_chunks=1)
    return path


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"n_samples": 20_000}, "n_samples = 10500 in the checkpoint, 20000 in this run"),
        ({"seed": 6}, "seed = 5 in the checkpoint, 6 in this run"),
        ({"sigmas": (0.8, 1.4)}, "sigmas = [0.8,1.3] in the checkpoint, [0.8,1.4] in this run"),
        ({"model": SubsampledGaussianToy(rate=0.25)}, "model = "),
        ({"chunk_size": 500}, "chunk_size = 1000 in the checkpoint, 500 in this run"),
        ({"checks": (0.5,)}, "checks = "),
    ],
)
def test_checkpoint_of_other_parameters_is_refused_naming_the_difference(
    tmp_path: Path, change: dict[str, Any], named: str
) -> None:
    path = _complete_checkpoint(tmp_path)
    before = path.read_bytes()
    executor = Recording()
    with pytest.raises(CheckpointError, match="other parameters") as info:
        _run(_task(**change), path, executor)
    assert named in str(info.value)
    assert "stage 's'" in str(info.value)
    assert executor.executed == []
    assert path.read_bytes() == before  # never overwritten


def _rewrite(path: Path, edit: Callable[[dict[str, Any]], None], *, reseal: bool) -> None:
    document = json.loads(path.read_text())
    edit(document)
    if reseal:  # a consistent checksum, so the deeper checks are reached
        import hashlib

        body = canonical_json(document["body"]).encode()
        document["checksum"] = "sha256:" + hashlib.sha256(body).hexdigest()
    path.write_text(json.dumps(document))


def _bump_count(document: dict[str, Any]) -> None:
    document["body"]["stages"]["s"]["tally"]["tallies"][0]["count"] += 1


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document[key] = value

    return edit


def _set_stage(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document["body"]["stages"]["s"][key] = value

    return edit


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "not valid JSON"),
        (lambda p: p.write_bytes(b""), "not valid JSON"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "cannot be read"),
        (lambda p: p.write_text('{"hello": 1}'), "not a minsep Monte Carlo checkpoint"),
        (lambda p: p.write_text("[1, 2]"), "not a minsep Monte Carlo checkpoint"),
        (lambda p: _rewrite(p, _set("version", 99), reseal=False), "format version 99"),
        (lambda p: _rewrite(p, _bump_count, reseal=False), "checksum does not match"),
        (lambda p: _rewrite(p, _set("checksum", None), reseal=False), "checksum does not match"),
        (lambda p: _rewrite(p, _bump_count, reseal=True), "stage 's' is malformed"),
        (lambda p: _rewrite(p, _set_stage("chunks_done", 12), reseal=True), "malformed"),
        (lambda p: _rewrite(p, _set_stage("chunks_done", 3), reseal=True), "expected 3000"),
        (lambda p: _rewrite(p, _set_stage("identity_sha256", "0" * 64), reseal=True), "malformed"),
        (lambda p: _rewrite(p, _set_stage("tally", {"x": 1}), reseal=True), "malformed"),
    ],
)
def test_corrupt_checkpoint_is_refused(
    tmp_path: Path, damage: Callable[[Path], None], message: str
) -> None:
    path = _complete_checkpoint(tmp_path)
    damage(path)
    executor = Recording()
    with pytest.raises(CheckpointError, match="is refused") as info:
        _run(_task(), path, executor)
    assert message in str(info.value)
    assert str(path) in str(info.value) and "start afresh" in str(info.value)
    assert executor.executed == []


def test_a_crash_while_writing_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = _task()
    path = tmp_path / "run.ckpt"
    with pytest.raises(SimulatedCrashError):
        _run(task, path, Recording(crash_after=4), every_chunks=2)
    before = path.read_bytes()

    def dying_replace(src: Any, dst: Any) -> None:
        raise SimulatedCrashError("power cut during os.replace")

    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(SimulatedCrashError, match="power cut"):
        _run(task, path, Recording(), every_chunks=2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["run.ckpt"]  # no temporary left behind
    resumed = Recording()
    _assert_identical(_run(task, path, resumed, every_chunks=2), _whole(task))
    assert resumed.executed == list(range(4, task.n_chunks))


def test_checkpointed_runs_must_cover_every_chunk(tmp_path: Path) -> None:
    task = _task()
    config = _config(checkpoint=Checkpoint(tmp_path / "x.ckpt"))
    with pytest.raises(ConfigurationError, match="indices"):
        sample_chunks(task, range(3), config, stage="s")
    with pytest.raises(ConfigurationError, match="indices"):
        sample_chunks(task, range(task.n_chunks), config, into=task.empty(), stage="s")
    # without a stage label the checkpoint is not used
    sample_chunks(task, range(3), config)
    assert not (tmp_path / "x.ckpt").exists()


def test_checkpoint_configuration_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="path"):
        Checkpoint(tmp_path / "missing" / "run.ckpt")
    with pytest.raises(ConfigurationError, match="path"):
        Checkpoint(tmp_path)
    with pytest.raises(ConfigurationError, match="every_chunks"):
        Checkpoint(tmp_path / "a", every_chunks=0)
    with pytest.raises(ConfigurationError, match="every_seconds"):
        Checkpoint(tmp_path / "a", every_seconds=-1.0)


def test_file_layout(tmp_path: Path) -> None:
    path = _complete_checkpoint(tmp_path)
    text = path.read_text()
    document = json.loads(text)
    assert text == canonical_json(document)
    assert document["format"] == FORMAT and document["version"] == 1
    assert document["checksum"].startswith("sha256:")
    stage = document["body"]["stages"]["s"]
    assert stage["identity"] == json.loads(canonical_json(_task().describe()))
    assert SweepTally.from_dict(stage["tally"]).count == 10_500


# -- the accountant --------------------------------------------------------------------------


def _accountant(**options: Any) -> Any:
    cls = accountants.get("monte_carlo")
    return cls(
        **grouped(cls, {"samples": 6000, "pilot_samples": 2000, "chunk_size": 500, **options})
    )


def _same(a: Any, b: Any) -> None:
    assert a.to_dict() | {"seconds": 0} == b.to_dict() | {"seconds": 0}


def test_accountant_resumes_a_crashed_epsilon_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "eps.ckpt")
    reference = _accountant(seed=8).epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    cls = accountants.get("monte_carlo")
    crashing = Recording(crash_after=7)  # pilot: 4 chunks, verify: 12; crash after verify's 3rd
    monkeypatch.setattr(cls, "_executor", lambda self: crashing)
    acc = _accountant(seed=8, checkpoint=path, checkpoint_interval=0.0)
    with pytest.raises(SimulatedCrashError):
        acc.epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    stages = Checkpoint(path).read()
    assert stages["pilot"]["chunks_done"] == 4 and stages["verify"]["chunks_done"] == 3
    resumed = Recording()
    monkeypatch.setattr(cls, "_executor", lambda self: resumed)
    _same(acc.epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2), reference)
    assert resumed.executed == list(range(3, 12))  # verify's remaining chunks only


def test_accountant_reuses_the_checkpoint_seed_when_none_is_given(tmp_path: Path) -> None:
    path = str(tmp_path / "eps.ckpt")
    first = _accountant(checkpoint=path).epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    assert Checkpoint(path).stored_seed() == first.seed
    again = _accountant(checkpoint=path).epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    _same(again, first)
    with pytest.raises(CheckpointError, match="seed"):
        _accountant(checkpoint=path, seed=first.seed + 1).epsilon(
            ToyScheme(), ToyStrategy(), 1.0, 1e-2
        )


def test_accountant_refuses_a_checkpoint_of_another_question(tmp_path: Path) -> None:
    path = str(tmp_path / "eps.ckpt")
    _accountant(seed=1, checkpoint=path).epsilon(ToyScheme(), ToyStrategy(), 1.0, 1e-2)
    with pytest.raises(CheckpointError, match=r"stage 'pilot'.*sigmas = \[1\.0\]"):
        _accountant(seed=1, checkpoint=path).epsilon(ToyScheme(), ToyStrategy(), 1.2, 1e-2)


def test_accountant_calibration_checkpoints_every_stage(tmp_path: Path) -> None:
    path = str(tmp_path / "cal.ckpt")
    reference = _accountant(seed=2).calibrate(ToyScheme(), ToyStrategy(), 2.0, 1e-2)
    checkpointed = _accountant(seed=2, checkpoint=path).calibrate(
        ToyScheme(), ToyStrategy(), 2.0, 1e-2
    )
    _same(checkpointed, reference)
    assert set(Checkpoint(path).read()) == {"pilot coarse", "pilot fine", "calibrate"}
    _same(_accountant(seed=2, checkpoint=path).calibrate(ToyScheme(), ToyStrategy(), 2.0, 1e-2),
          reference)  # fmt: skip


def test_accountant_checkpoint_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="checkpoint"):
        _accountant(checkpoint=str(tmp_path / "missing" / "x.ckpt"))
    with pytest.raises(ConfigurationError, match="checkpoint_interval"):
        _accountant(checkpoint_interval=-1.0)


def test_sample_uses_the_description_as_stage(tmp_path: Path) -> None:
    path = tmp_path / "s.ckpt"
    config = EngineConfig(chunk_size=1000, checkpoint=Checkpoint(path))
    sample(MODEL, [1.0], n_samples=2500, seed=1, config=config, description="first")
    sample(MODEL, [1.0], n_samples=2500, seed=1, stream=1, config=config, description="second")
    assert set(Checkpoint(path).read()) == {"first", "second"}
    with pytest.raises(CheckpointError, match="stage 'first'"):
        sample(MODEL, [1.0], n_samples=2500, seed=2, config=config, description="first")
