"""The b-min-sep family: sampler (:mod:`.scheme`), Monte Carlo loss model (:mod:`.loss`) and the
kernels only it uses: the numba rows (:mod:`.cpu_kernels`, driven by :mod:`.fused`) and the CUDA
kernel (:mod:`.gpu_kernels`).

Only the sampler is imported here; the loss model (and with it the compiled kernels) is imported
by the scheme's accounting hooks when they are called.
"""

from minsep.schemes.b_min_sep.scheme import BMinSep

__all__ = ["BMinSep"]
