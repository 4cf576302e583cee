"""The GPU check (``make gpu-check``) without a GPU: it fails in one line, and its comparison
runs end to end with the host array backend standing in for the device."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from minsep import gpu_check
from minsep.bench import QUICK, bench_models
from minsep.framework.backend import cupy_usable, numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.testing.host_device import cxx_compiler

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(cupy_usable(), reason="a GPU is present: the check would run")
def test_without_a_gpu_the_check_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("minsep.gpu_check: no usable GPU") and "\n" not in err


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="an NVIDIA driver is present")
def test_the_script_exits_2_without_a_gpu() -> None:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "gpu-check: no NVIDIA GPU visible (nvidia-smi lists none); nothing to check"
    ]


@pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba (the fast extra)")
def test_comparison_runs_on_every_model_with_a_stand_in_device() -> None:
    device = numpy_backend("array")
    labels = []
    for entry in bench_models(QUICK[0]):
        if entry.model is None:
            continue
        labels.append(entry.label)
        row = gpu_check.compare(entry.model, 32, device, seed=1)
        assert row["kernels"] == "array"
        assert 0.0 <= row["max_abs_loss_difference"] < 1e-8
        assert 0.0 <= row["max_abs_delta_difference"] < 1e-12
    assert {"b_min_sep", "multi_attribution", "truncated"} <= set(labels)


def test_to_device_moves_every_array_and_sets_the_kernels() -> None:
    (entry,) = [e for e in bench_models(QUICK[0]) if e.label == "truncated"]
    host = numpy_backend()
    transcript = entry.model.draw(4, Direction.REMOVE, host.rng(np.random.SeedSequence(0)), host)
    moved = gpu_check.to_device(transcript, entry.model, numpy_backend("array"))
    assert moved.kernels == "array" and moved.counts is not None
    np.testing.assert_array_equal(moved.counts, transcript.counts)
    np.testing.assert_array_equal(moved.signal, transcript.signal)


@pytest.mark.skipif(cxx_compiler() is None, reason="needs a C++ compiler")
def test_the_check_runs_on_the_host_stand_in(capsys: pytest.CaptureFixture[str]) -> None:
    """``--host-stand-in``: every model's CUDA drivers and kernels, on the host, agree."""
    import json

    assert gpu_check.main(["--host-stand-in", "--samples", "6", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["failed"] == []
    kernels = {label.split(" [")[0]: row["kernels"] for label, row in report["models"].items()}
    assert {kernels[name] for name in ("b_min_sep", "multi_attribution", "truncated")} == {"cuda"}
