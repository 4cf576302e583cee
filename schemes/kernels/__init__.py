"""Loss-model machinery shared by several scheme families (docs/math.md §2-§6).

- :mod:`.transcript`: the sigma-free transcripts the models draw;
- :mod:`.blocks`: banded dot products and tail norms of the strategy's first column;
- :mod:`.recursion`: the log-sum-exp recursions over participation states;
- :mod:`.sampling`: participation draws (chains, users, public counts);
- :mod:`.fields`: attrs validators of the models' fields;
- :mod:`.jit`: numba's ``njit`` wrapper, the kernel-set choice and its notes;
- :mod:`.cpu_kernels` / :mod:`.fused`: the shared numba kernels and their drivers (correlated
  noise, the log-domain recursion rows, the chain's participation steps).
- :mod:`.count_dots`: the dots ``<c_i, y>`` of ``y = C x + sigma z`` from integer counts x and
  the noise correlations, without forming y (the escort's draws);
- :mod:`.mixture_kernels`: the numba pieces the mixture models' fused kernels share (weighted
  sparse signal, block-wise uniforms).

Family-specific code lives with its family (``minsep.schemes.<family>.loss``).
"""
