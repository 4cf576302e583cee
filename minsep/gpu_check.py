"""Agreement of the GPU path with the CPU path: ``python -m minsep.gpu_check [--samples N]``.

For every registered loss model (those :mod:`minsep.bench` times, at its quick sizes), draws
one set of transcripts on the host backend, copies them to the GPU, and evaluates the loss on
both: the GPU runs the model's CUDA kernel where it has one (``kernels`` says which), else the
array code on cupy. Prints, per model and sigma, the largest absolute difference of the losses
and of the hockey-stick estimates ``delta(eps) = mean((1 - exp(eps - L))_+)`` over the samples
(the same samples and the same seed on both paths, so any difference is arithmetic). Exits 2
with one line on stderr when no CUDA device is usable, 1 when a difference exceeds
``--tolerance``. ``scripts/gpu_check.sh`` (``make gpu-check``) runs it after the gpu tests and
before the bench on cupy.

``--host-stand-in`` runs the same comparison without a GPU: numpy stands in for cupy and each
CUDA kernel runs its own source compiled for the host, one call per thread
(:mod:`minsep.testing.host_device`; needs a C++ compiler and the ``dev`` extra). It checks the
drivers and the kernels' arithmetic, not cupy, the device compiler or speed; it is slow (use a
few hundred ``--samples``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from minsep.framework.backend import Backend, get_backend, numpy_backend
from minsep.framework.errors import BackendUnavailableError
from minsep.framework.interfaces import Direction

SIGMAS = (0.3, 1.0, 4.0)
EPSILONS = (0.5, 2.0)


def to_device(transcript: Any, model: Any, device: Backend) -> Any:
    """The same transcript with every array on ``device`` and the kernels ``model`` runs there
    (attrs transcripts: every init field that holds an array is moved)."""
    changes: dict[str, Any] = {}
    for field in attrs.fields(type(transcript)):
        if not field.init:
            continue
        value = getattr(transcript, field.name)
        if isinstance(value, np.ndarray):
            changes[field.alias or field.name] = device.asarray(value)
    changes["xp"] = device.xp
    changes["kernels"] = model.kernel_set(device)
    return attrs.evolve(transcript, **changes)


def hockey_stick(losses: np.ndarray, epsilon: float) -> float:
    """``mean((1 - exp(epsilon - L))_+)``: the Monte Carlo estimate of delta(epsilon)."""
    return float(np.mean(np.maximum(0.0, -np.expm1(epsilon - losses))))


def compare(model: Any, samples: int, device: Backend, seed: int) -> dict[str, Any]:
    """Loss and delta differences of one model between the host and ``device``."""
    host = numpy_backend()
    worst_loss = worst_delta = 0.0
    for direction in Direction:
        rng = host.rng(np.random.SeedSequence([seed, int(direction is Direction.ADD)]))
        transcript = model.draw(samples, direction, rng, host)
        moved = to_device(transcript, model, device)
        for sigma in SIGMAS:
            cpu = np.asarray(model.privacy_loss(transcript, sigma))
            gpu = device.to_numpy(model.privacy_loss(moved, sigma))
            if not np.all(np.isfinite(gpu)):
                return {"error": f"non-finite GPU losses at sigma = {sigma}"}
            worst_loss = max(worst_loss, float(np.max(np.abs(cpu - gpu))))
            for epsilon in EPSILONS:
                gap = abs(hockey_stick(cpu, epsilon) - hockey_stick(gpu, epsilon))
                worst_delta = max(worst_delta, gap)
    return {
        "kernels": model.kernel_set(device),
        "max_abs_loss_difference": worst_loss,
        "max_abs_delta_difference": worst_delta,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m minsep.gpu_check``."""
    parser = argparse.ArgumentParser(
        prog="python -m minsep.gpu_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--samples", type=int, default=2048, help="samples per direction")
    parser.add_argument("--tolerance", type=float, default=1e-8, help="largest loss difference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of lines")
    parser.add_argument(
        "--host-stand-in",
        action="store_true",
        help="no GPU: numpy as cupy, the CUDA kernels compiled for the host (slow)",
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.host_stand_in:
            device = stack.enter_context(_stand_in())
        else:
            try:
                device = get_backend("cupy")
            except BackendUnavailableError as exc:
                print(f"minsep.gpu_check: no usable GPU: {exc}", file=sys.stderr)
                return 2
        return _report(args, device)


@contextlib.contextmanager
def _stand_in() -> Iterator[Backend]:
    """The host stand-in of a GPU backend, its kernels compiled into a temporary folder."""
    from minsep.testing.host_device import host_device

    with (
        tempfile.TemporaryDirectory(prefix="minsep-host-device-") as folder,
        host_device(Path(folder)) as backend,
    ):
        yield backend


def _report(args: argparse.Namespace, device: Backend) -> int:
    """Compare every model of the bench's quick sizes on ``device``, print the table; the exit
    status."""
    from minsep.bench import QUICK, bench_models

    rows: dict[str, Any] = {}
    for case in QUICK:
        for entry in bench_models(case):
            if entry.model is not None:
                label = f"{entry.label} [{case.name}]"
                rows[label] = compare(entry.model, args.samples, device, args.seed)
    failed = [
        label
        for label, row in rows.items()
        if "error" in row or row["max_abs_loss_difference"] > args.tolerance
    ]
    if args.json:
        print(json.dumps({"samples": args.samples, "models": rows, "failed": failed}, indent=2))
    else:
        for label, row in rows.items():
            if "error" in row:
                print(f"{label:<45} ERROR {row['error']}")
                continue
            print(
                f"{label:<45} {row['kernels']:<6} max |dL| {row['max_abs_loss_difference']:.2e}"
                f"  max |d delta| {row['max_abs_delta_difference']:.2e}"
            )
    if failed:
        print(f"minsep.gpu_check: GPU and CPU disagree on {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
