"""minsep.torch on a CUDA device (marked ``gpu``: skipped without one, or without CUDA torch).

The noise is drawn on the device (no host round trip), has the covariance s²·(CᵀC)⁻¹, resumes
bit-identically there, and a private step leaves the parameters on the device.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from minsep.framework.registries import schemes, strategies  # noqa: E402
from minsep.torch import NoiseStream, make_private  # noqa: E402
from minsep.training.private import PrivateRun  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA torch"),
]


def _run(steps: int = 8) -> PrivateRun:
    scheme = schemes.get("b_min_sep").from_rate(steps, 0.1, min_sep=3)
    strategy = strategies.get("banded_toeplitz").for_steps(steps, bands=3)
    return PrivateRun(scheme, strategy, 1.3, 1000, clip_norm=0.7)


def test_noise_is_drawn_on_the_device_with_the_right_covariance() -> None:
    run = _run()
    d = 200_000
    param = torch.zeros(d, dtype=torch.float64, device="cuda")
    rows = torch.stack([row[0] for row in NoiseStream(run, [param], seed=3)])
    assert rows.device.type == "cuda"
    x = rows.cpu().numpy()
    C = run.strategy.matrix(8)
    truth = run.noise_std**2 * np.linalg.inv(C.T @ C)
    error = np.sqrt((np.outer(np.diag(truth), np.diag(truth)) + truth**2) / d)
    assert np.all(np.abs(x @ x.T / d - truth) <= 5 * error)


def test_noise_resumes_bit_identically_on_the_device() -> None:
    run = _run()
    params = [torch.zeros(1000, device="cuda")]
    whole = [row[0] for row in NoiseStream(run, params, 5)]
    first = NoiseStream(run, params, 5)
    for _ in range(3):
        next(first)
    resumed = NoiseStream(run, params, 0)
    resumed.load_state_dict(first.state_dict())
    for a, b in zip(whole[3:], (row[0] for row in resumed), strict=True):
        assert torch.equal(a, b)


def test_a_private_run_trains_on_the_device() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).cuda()
    data = TensorDataset(torch.randn(200, 5), torch.randint(0, 3, (200,)))
    private = make_private(
        model, torch.optim.SGD(model.parameters(), lr=0.1), data, scheme="poisson", steps=10,
        rate=0.1, strategy="identity", sigma=1.0, delta=1e-5, say=lambda _: None,
    )  # fmt: skip
    for x, y in private.loader:
        private.optimizer.step(x.cuda(), y.cuda())
    assert all(p.device.type == "cuda" for p in model.parameters())
    assert private.optimizer.steps_taken == 10
