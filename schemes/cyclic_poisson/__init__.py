"""The cyclic Poisson family: sampler and exact route (:mod:`.scheme`) and the random-phase
Monte Carlo loss model (:mod:`.loss`, imported by the accounting hook when it is called)."""

from minsep.schemes.cyclic_poisson.scheme import PARTITIONS, CyclicPoisson

__all__ = ["PARTITIONS", "CyclicPoisson"]
