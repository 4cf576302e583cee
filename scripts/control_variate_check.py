"""How much the control variate W = e^{−L} (known mean 1) would reduce the variance of the
Monte Carlo δ estimate at the paper's config (a): the figures of docs/rdp-escort.md §8,
"Control variates".

Per direction the engine averages X = (1 − e^{ε − L})₊ over draws of the pair's first
distribution, L the privacy loss. W = e^{−L} is the likelihood ratio of the other distribution
against it, so E[W] = 1 exactly, and X = (1 − e^ε W)₊ is a function of W. The optimal linear
control variate X − β(W − 1) leaves the fraction 1 − ρ² of Var X (ρ = corr(X, W)). In the
remove direction W = Q/P ≤ 1/π(∅), which the script prints.

Run: ``.venv/bin/python scripts/control_variate_check.py`` (about 5 s on one core).
"""

from __future__ import annotations

import math

import numpy as np

from minsep.framework import schemes
from minsep.framework.backend import numpy_backend
from minsep.framework.loss_model import Direction
from minsep.framework.setup import build_strategy

STEPS, BANDS, MIN_SEP, RATE, SIGMA = 1024, 8, 8, 1 / 256, 1.0
EPSILON = 1.2277  # config (a)'s estimate at delta = 1e-3
SAMPLES = 400_000


def main() -> None:
    strategy = build_strategy(STEPS, BANDS)  # the CLI's MSE-optimal 8-BandMF
    scheme = schemes.get("b_min_sep").from_rate(STEPS, RATE, min_sep=MIN_SEP)
    log_empty = scheme.participation_chain().log_no_participation()
    print(f"1 / pi(empty) = {math.exp(-log_empty):.1f}  (ln: {-log_empty:.3f})")
    model = scheme.loss_model(strategy)
    backend = numpy_backend()
    for direction in (Direction.REMOVE, Direction.ADD):
        rng = backend.rng(np.random.SeedSequence(1))
        losses = np.asarray(model.privacy_losses(SAMPLES, direction, rng, backend, [SIGMA])[0])
        w = np.exp(-losses)
        x = np.clip(1.0 - np.exp(EPSILON - losses), 0.0, None)
        rho = float(np.corrcoef(x, w)[0, 1])
        print(
            f"{direction.name.lower():6s} mean X {x.mean():.3e}  P(X > 0) {(x > 0).mean():.2e}  "
            f"mean W {w.mean():.4f} ± {w.std() / np.sqrt(SAMPLES):.4f}  "
            f"W in [{w.min():.3f}, {w.max():.3f}]  rho {rho:+.4f}  1 - rho^2 {1 - rho**2:.4f}"
        )


if __name__ == "__main__":
    main()
