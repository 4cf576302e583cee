"""The figures of docs/math.md §10.2: the balls-in-bins add bound at n = 1024, T = 256.

Run: ``.venv/bin/python scripts/bins_add_figures.py`` (about 20 s on one core).
"""

from __future__ import annotations

import math
import time

import numpy as np

from minsep.accountants.add_bound import phase_add_bound
from minsep.accountants.bins_add_bound import bin_norms, bins_add_bound
from minsep.accountants.gaussian import log_gaussian_delta, smallest_epsilon
from minsep.framework.phase_mixture import PhaseMixture
from minsep.framework.setup import build_strategy


def main() -> None:
    n, t = 1024, 256
    for k in (4, 8):
        c = np.asarray(build_strategy(n, k).coefficients)
        sensitivity = math.sqrt(float(bin_norms(c, n, t).max()))
        for sigma in (1.0, 1.2, 1.45, 1.7):
            start = time.perf_counter()
            bound = bins_add_bound(n, t, c, sigma)
            e6, e8 = bound.epsilon(1e-6), bound.epsilon(1e-8)
            log_delta, kappa = bound.log_delta(2.0)
            wall = time.perf_counter() - start
            phase = phase_add_bound(PhaseMixture(n_steps=n, phases=t, probability=1.0), c, sigma)
            noise = sigma / sensitivity
            print(
                f"k={k} sigma={sigma}: bins eps(1e-6)={e6:.4f} eps(1e-8)={e8:.4f} "
                f"log10 delta(2)={min(log_delta, 0.0) / math.log(10):.3f} (kappa {kappa:.1f}); "
                f"phase eps(1e-6)={phase.epsilon(1e-6)} delta(2)={phase.delta(2.0)}; "
                f"gaussian(S={sensitivity:.3f}) eps(1e-6)={smallest_epsilon(noise, 1e-6):.3f} "
                f"eps(1e-8)={smallest_epsilon(noise, 1e-8):.3f} "
                f"log10 delta(2)={log_gaussian_delta(noise, 2.0) / math.log(10):.3f}; "
                f"{wall:.2f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
