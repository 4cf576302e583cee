"""Which kernel set runs (numba / cuda / array) is reported, warned about and recorded (issue 20).

The array path is reached by simulating a missing numba (``sys.modules["numba"] = None``) or by
forcing it (``MINSEP_KERNELS=array``), each in a fresh interpreter so that the once-per-process
warning and the import-time switch are observed as a user sees them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from typing import Any

import numpy as np
import pytest

from minsep import bench
from minsep.accountants.monte_carlo import MonteCarloAccountant
from minsep.framework.backend import numpy_backend
from minsep.framework.errors import ConfigurationError
from minsep.framework.interfaces import PrivacyLossModel
from minsep.framework.registries import schemes, strategies
from minsep.framework.results import Result
from minsep.schemes.kernels.jit import (
    NUMBA_AVAILABLE,
    kernel_set,
    pure_arrays,
    requested_kernels,
)
from minsep.schemes.losses import BallsInBinsLossModel, BMinSepLossModel

needs_numba = pytest.mark.skipif(not NUMBA_AVAILABLE, reason="needs numba")

WARNING = "SlowKernelsWarning"

#: Draws and evaluates two models three times each, then prints what was reported.
USE_MODELS = """
import json
import numpy as np
from minsep.framework.backend import numpy_backend
from minsep.framework.interfaces import Direction
from minsep.schemes.losses import BallsInBinsLossModel, BMinSepLossModel
from minsep.schemes.kernels.jit import kernel_set
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
print(json.dumps({"process": kernel_set(), "models": [m.kernel_set(backend) for m in models],
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
def test_kernel_set_names_the_path_in_force() -> None:
    assert kernel_set() == kernel_set(np) == "numba"
    with pure_arrays():
        assert kernel_set() == "array"
    assert kernel_set() == "numba"
    xp = pytest.importorskip("array_api_strict")
    assert kernel_set(xp) == "array"


def test_cuda_is_reported_only_for_models_with_a_cuda_kernel_on_cupy() -> None:
    cupy = types.ModuleType("cupy")  # only its name matters to the switch
    assert kernel_set(cupy, cuda=True) == "cuda"
    assert kernel_set(cupy) == "array"
    with pure_arrays():
        assert kernel_set(cupy, cuda=True) == "array"
    assert BMinSepLossModel.has_cuda_kernel and not BallsInBinsLossModel.has_cuda_kernel


@needs_numba
def test_models_report_their_kernel_set() -> None:
    backend = numpy_backend()
    model = _bmin()
    assert model.kernel_set(backend) == "numba"
    assert model.kernel_notes(backend) == ()
    with pure_arrays():
        assert model.kernel_set(backend) == "array"
        (note,) = model.kernel_notes(backend)
        assert "pure array code" in note


def test_a_model_without_kernels_reports_the_array_path_by_default() -> None:
    class Plain(PrivacyLossModel):
        n_steps = 1  # type: ignore[assignment]

        def draw(self, *args: Any) -> Any:
            raise NotImplementedError

        def log_ratio(self, *args: Any) -> Any:
            raise NotImplementedError

    assert Plain().kernel_set(numpy_backend()) == "array"
    assert Plain().kernel_notes(numpy_backend()) == ()


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
def test_pure_arrays_block_does_not_warn() -> None:
    code = "from minsep.schemes.kernels.jit import pure_arrays\nwith pure_arrays():\n" + "".join(
        f"    {line}\n" for line in USE_MODELS.strip().splitlines()
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert WARNING not in out.stderr


def _epsilon_result() -> Result:
    n = 16
    scheme = schemes.get("b_min_sep").from_rate(n, 1 / 8, min_sep=2)
    strategy = strategies.get("identity").for_steps(n)
    accountant = MonteCarloAccountant(samples=2000, pilot_samples=1000, seed=3, progress=False)
    return accountant.epsilon(scheme, strategy, 1.0, 1e-2)


@needs_numba
def test_monte_carlo_results_record_the_kernel_set() -> None:
    result = _epsilon_result()
    assert result.to_dict()["kernels"] == "numba"
    assert Result.from_json(result.to_json()) == result
    assert not any("pure array code" in note for note in result.notes)
    with pure_arrays():
        slow = _epsilon_result()
    assert slow.to_dict()["kernels"] == "array"
    assert any("pure array code" in note for note in slow.notes)


def test_monte_carlo_result_without_numba_says_how_to_install_it() -> None:
    code = (
        NO_NUMBA + "from tests.unit.test_kernel_set import _epsilon_result\n"
        "result = _epsilon_result().to_dict()\n"
        "import json; print(json.dumps({'kernels': result['kernels'], 'notes': result['notes']}))"
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
