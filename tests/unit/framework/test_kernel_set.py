"""Which kernel set runs (numba / cuda / array) is chosen once by the backend, reported, warned
about and recorded (issues 20 and 14).

The array path is reached by building an array backend (``numpy_backend("array")``, spec
``"numpy:array"``), by simulating a missing numba (``sys.modules["numba"] = None``) or by forcing
it (``MINSEP_KERNELS=array``), the last two in a fresh interpreter so that the once-per-process
warning and the import-time switch are observed as a user sees them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from typing import Any

import attrs
import numpy as np
import pytest

from minsep import bench
from minsep.accountants.monte_carlo import MonteCarloAccountant, RunSettings
from minsep.framework.backend import (
    Backend,
    get_backend,
    namespace_backend,
    numpy_backend,
    requested_kernels,
)
from minsep.framework.errors import BackendUnavailableError, ConfigurationError
from minsep.framework.interfaces import Direction, PrivacyLossModel
from minsep.framework.registries import schemes, strategies
from minsep.framework.results import Result
from minsep.schemes.kernels.jit import NUMBA_AVAILABLE
from minsep.schemes.losses import (
    BallsInBinsLossModel,
    BMinSepLossModel,
    MultiAttributionLossModel,
)

needs_numba = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")

WARNING = "SlowKernelsWarning"

#: Draws and evaluates two models three times each, then prints what was reported.
USE_MODELS = """
import json
import numpy as np
from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BallsInBinsLossModel, BMinSepLossModel
backend = numpy_backend()
models = [
    BMinSepLossModel(coefficients=(0.8, 0.5), n_steps=30, min_sep=2, probability=0.2,
                     warm_start=True),
    BallsInBinsLossModel(coefficients=(0.8, 0.5), n_steps=30, cycle_length=5),
]
for seed in range(3):
    for model in models:
        rng = backend.rng(np.random.SeedSequence(seed))
        model.log_ratio(model.draw(4, Direction.REMOVE, rng, backend), 0.9)
print(json.dumps({"process": backend.kernels, "models": [m.kernel_set(backend) for m in models],
                  "notes": list(models[0].kernel_notes(backend))}))
"""

NO_NUMBA = 'import sys\nsys.modules["numba"] = None  # import numba now raises ImportError\n'


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MINSEP_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _bmin() -> BMinSepLossModel:
    return BMinSepLossModel(
        coefficients=(0.8, 0.5), n_steps=30, min_sep=2, probability=0.2, warm_start=True
    )


@needs_numba
def test_the_backend_chooses_the_kernel_set_once() -> None:
    assert numpy_backend().kernels == "numba" and numpy_backend().spec == "numpy:numba"
    assert numpy_backend("numba") is numpy_backend()
    assert numpy_backend("array").kernels == "array"
    assert get_backend("numpy:array") is numpy_backend("array")
    assert get_backend(numpy_backend("array").spec) is numpy_backend("array")
    xp = pytest.importorskip("array_api_strict")
    assert namespace_backend(xp).kernels == "array"


def test_a_kernel_set_the_namespace_cannot_run_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"backend 'numpy': kernels = 'cuda'.*'numba'"):
        numpy_backend("cuda")
    with pytest.raises(ConfigurationError, match=r"backend = 'numpy:cuda' is invalid"):
        get_backend("numpy:cuda")
    xp = pytest.importorskip("array_api_strict")
    with pytest.raises(ConfigurationError, match=r"kernels = 'numba' is invalid.*\['array'\]"):
        Backend("array_api_strict", xp, numpy_backend().rng, np.asarray, kernels="numba")


def test_asking_for_numba_where_it_is_missing_fails_loudly() -> None:
    code = NO_NUMBA + "from minsep.framework.backend import numpy_backend\nnumpy_backend('numba')"
    out = _python(code)
    assert out.returncode != 0
    assert BackendUnavailableError.__name__ in out.stderr and "pip install numba" in out.stderr


def test_cuda_is_reported_only_for_models_with_a_cuda_kernel_on_cupy() -> None:
    cupy = types.ModuleType("cupy")  # a stand-in: the models only read backend.kernels here
    gpu = Backend("cupy", cupy, numpy_backend().rng, np.asarray, kernels="cuda")
    bins = BallsInBinsLossModel(coefficients=(0.8, 0.5), n_steps=30, cycle_length=5)
    assert _bmin().kernel_set(gpu) == "cuda"
    assert bins.kernel_set(gpu) == "array"
    plain = Backend("cupy", cupy, numpy_backend().rng, np.asarray, kernels="array")
    assert _bmin().kernel_set(plain) == bins.kernel_set(plain) == "array"
    assert "cuda" in BMinSepLossModel.kernel_table.kernel_sets
    assert "cuda" not in BallsInBinsLossModel.kernel_table.kernel_sets


@needs_numba
def test_models_report_their_kernel_set() -> None:
    backend = numpy_backend()
    model = _bmin()
    assert model.kernel_set(backend) == "numba"
    assert model.kernel_notes(backend) == ()
    array = numpy_backend("array")
    assert model.kernel_set(array) == "array"
    (note,) = model.kernel_notes(array)
    assert "pure array code" in note and "kernels = 'array'" in note


def test_a_model_without_kernels_reports_the_array_path_by_default() -> None:
    class Plain(PrivacyLossModel):
        n_steps = 1  # type: ignore[assignment]

        def draw(self, *args: Any) -> Any:
            raise NotImplementedError

        def log_ratio(self, *args: Any) -> Any:
            raise NotImplementedError

    assert Plain().kernel_set(numpy_backend()) == "array"
    (note,) = Plain().kernel_notes(numpy_backend())  # said once, naming the model
    assert "loss model Plain has no compiled kernels" in note and "Compiled kernels" in note


def test_environment_choice_is_validated() -> None:
    assert requested_kernels({}) == "auto"
    assert requested_kernels({"MINSEP_KERNELS": "Array "}) == "array"
    assert requested_kernels({"MINSEP_PURE_ARRAYS": "1"}) == "array"
    assert requested_kernels({"MINSEP_PURE_ARRAYS": "0"}) == "auto"
    with pytest.raises(ConfigurationError, match=r"MINSEP_KERNELS = 'gpu'.*'auto', 'array'"):
        requested_kernels({"MINSEP_KERNELS": "gpu"})


def test_an_invalid_environment_choice_fails_when_the_kernels_load() -> None:
    out = _python("import minsep.schemes.losses", MINSEP_KERNELS="fastest")
    assert out.returncode != 0
    assert "ConfigurationError" in out.stderr and "MINSEP_KERNELS = 'fastest'" in out.stderr


def test_missing_numba_runs_the_array_path_and_warns_once() -> None:
    out = _python(NO_NUMBA + USE_MODELS)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["process"] == "array" and report["models"] == ["array", "array"]
    assert out.stderr.count(WARNING) == 1, out.stderr
    assert "numba is not installed" in out.stderr and "pip install numba" in out.stderr
    (note,) = report["notes"]
    assert "pip install numba" in note


def test_forced_array_path_warns_once_without_importing_numba() -> None:
    code = USE_MODELS + 'import sys; assert "numba" not in sys.modules\n'
    out = _python(code, MINSEP_KERNELS="array")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["models"] == ["array", "array"]
    assert out.stderr.count(WARNING) == 1, out.stderr
    assert "MINSEP_KERNELS=array" in out.stderr


@needs_numba
def test_an_array_backend_asked_for_does_not_warn() -> None:
    code = USE_MODELS.replace("numpy_backend()", "numpy_backend('array')")
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["models"] == ["array", "array"]
    assert WARNING not in out.stderr


def _epsilon_result(backend: str = "numpy", **options: Any) -> Result:
    n = 16
    scheme = schemes.get("b_min_sep").from_rate(n, 1 / 8, min_sep=2)
    strategy = strategies.get("identity").for_steps(n)
    accountant = MonteCarloAccountant(
        samples=2000,
        pilot_samples=1000,
        seed=3,
        run=RunSettings(progress=False, backend=backend, **options),
    )
    return accountant.epsilon(scheme, strategy, 1.0, 1e-2)


@needs_numba
def test_monte_carlo_results_record_the_kernel_set() -> None:
    result = _epsilon_result()
    assert result.to_dict()["monte_carlo"]["kernels"] == "numba"
    assert Result.from_json(result.to_json()) == result
    assert not any("pure array code" in note for note in result.notes)
    slow = _epsilon_result("numpy:array")
    assert slow.to_dict()["monte_carlo"]["kernels"] == "array"
    assert any("pure array code" in note for note in slow.notes)
    # same stream, same losses up to rounding: the certified epsilon agrees closely
    assert slow.epsilon == pytest.approx(result.epsilon, rel=1e-6)


def test_worker_processes_run_the_parents_kernel_set() -> None:
    """The engine hands workers the resolved spec ("numpy:array"), not a bare name that each
    process would resolve again: a process pool gives the in-process tallies bit for bit."""
    model = _bmin()
    config = MonteCarloAccountant(run=RunSettings(backend="numpy:array"))._config(model)
    assert config.backend == "numpy:array"
    if NUMBA_AVAILABLE:
        assert MonteCarloAccountant()._config(model).backend == "numpy:numba"
    local = _epsilon_result("numpy:array")
    pooled = _epsilon_result("numpy:array", workers=2, executor="processes")
    assert pooled.to_dict()["monte_carlo"]["kernels"] == "array"
    assert pooled.epsilon == local.epsilon


def test_monte_carlo_result_without_numba_says_how_to_install_it() -> None:
    code = (
        NO_NUMBA + "from tests.unit.framework.test_kernel_set import _epsilon_result\n"
        "result = _epsilon_result().to_dict()\n"
        "kernels = result['monte_carlo']['kernels']\n"
        "import json; print(json.dumps({'kernels': kernels, 'notes': result['notes']}))"
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["kernels"] == "array"
    assert any("pip install numba" in note for note in result["notes"])


QUICK_SMALL = ["--quick", "--no-engine", "--case", "small", "--repeats", "1"]


@needs_numba
def test_bench_fails_when_another_kernel_set_is_required(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main([*QUICK_SMALL, "--require-kernels", "array"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing measured
    assert "'numba' is in use, 'array' was required" in captured.err


@needs_numba
def test_bench_reports_the_kernel_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main([*QUICK_SMALL, "--require-kernels", "numba", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"] == "numba"
    assert bench.main(QUICK_SMALL) == 0
    assert "kernels numba" in capsys.readouterr().out.splitlines()[0]


def test_bench_requiring_numba_fails_on_the_array_path() -> None:
    code = "import sys\nfrom minsep import bench\nsys.exit(bench.main(sys.argv[1:]))"
    out = subprocess.run(
        [sys.executable, "-c", code, *QUICK_SMALL, "--require-kernels", "numba"],
        env={**os.environ, "MINSEP_KERNELS": "array"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 3, out.stderr
    assert "'array' is in use, 'numba' was required" in out.stderr
    assert "MINSEP_KERNELS=array" in out.stderr


def test_a_plugin_model_on_the_array_path_says_so_once_in_the_result() -> None:
    from minsep.accountants.monte_carlo import MonteCarloAccountant
    from tests.unit.montecarlo_toys import ToyScheme, ToyStrategy

    accountant = MonteCarloAccountant(samples=2_000, seed=0, run=RunSettings(progress=False))
    result = accountant.delta(ToyScheme(), ToyStrategy(), 1.0, 1.0)
    notes = [n for n in result.notes if "has no compiled kernels" in n]
    assert len(notes) == 1 and "SubsampledGaussianToy" in notes[0]


@needs_numba
def test_a_dense_entry_reads_the_signal_of_a_transcript_drawn_as_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A transcript drawn sparsely (numba) and evaluated on a kernel set with only a dense entry
    (what gpu_check does when it moves host draws to the GPU) must hand that entry the signal,
    rebuilt from the steps: before the fix it got None and evaluated x = 0."""
    model = MultiAttributionLossModel(
        coefficients=(0.8, 0.5, 0.3), n_steps=30, min_sep=3, probability=0.2, max_user_examples=3
    )
    backend = numpy_backend("numba")
    transcript = model.draw(6, Direction.REMOVE, backend.rng(np.random.SeedSequence(4)), backend)
    assert transcript.stored_signal is None and transcript.steps is not None
    seen: dict[str, Any] = {}

    def dense(values: Any, given: Any, sigma: float, value_scale: float, owner: Any) -> Any:
        seen["signal"] = given.signal
        return np.zeros(values.shape[0])

    table = attrs.evolve(model.kernel_table, dense_ratio={"dense-only": dense})
    monkeypatch.setattr(MultiAttributionLossModel, "kernel_table", table)
    model.log_ratio(attrs.evolve(transcript, kernels="dense-only"), 1.0)
    assert np.any(seen["signal"] != 0.0)
    np.testing.assert_array_equal(seen["signal"], transcript.signal)
