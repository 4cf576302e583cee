"""Exact draws from the escort R_lam of b-min-sep BandMF and the importance weight W.

docs/rdp-escort.md §6. The escort ``R_lam(y) = u(y)^lam Q(y) / Z_lam`` is the mixture over
lam-tuples of patterns, weighted by ``omega(x_1..x_lam)`` (§1), of ``N(C sum_j x_j, sigma^2 I)``.
The tuple law is the Markov chain of the forward pass (§3), so exact independent tuples come from
forward filtering, backward sampling: run the pass, draw the final joint state from the last
message, then walk back one step at a time drawing the previous state from
``alpha_t(s) * weight(s -> s')``. Only ``sum_j x_j`` (the participation count of each step)
is needed for y, so that is what :func:`sample_escort_counts` returns.

Memory: the forward messages are kept every ``block`` steps (default ``ceil(sqrt(n))``) and
each block is recomputed from its checkpoint when the backward walk reaches it: about
``2 sqrt(n)`` arrays of ``(b + 1)^lam`` floats and two forward passes in all. The draws do not
depend on ``block`` (the random numbers are consumed in the same order).

The weight: ``E_{R_lam}[W] = E_P[(1 - e^eps / u)_+] = delta_remove(eps)`` with
``W = Z_lam u^(1 - lam) (1 - e^eps / u)_+``, and ``0 <= W <= s_lam(eps) = Z_lam
e^{-(lam - 1) eps} (lam - 1)^(lam - 1) / lam^lam`` pointwise (§6).
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from minsep.accountants import rdp_moments as moments
from minsep.framework.errors import ConfigurationError
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range

__all__ = [
    "EscortDraw",
    "escort_outputs",
    "forward_log_moment",
    "log_escort_weight",
    "log_support_bound",
    "sample_escort_batch",
    "sample_escort_counts",
]


@attrs.frozen
class EscortDraw:
    """Independent draws of the escort's tuple law.

    Attributes:
        counts: ``(n_samples, n)`` int8: how many of the lam copies participate at each step.
        log_z: ``ln Z_lam`` from the same forward pass.
        order: lam.
    """

    counts: np.ndarray
    log_z: float
    order: int


def sample_escort_counts(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    n_samples: int,
    rng: np.random.Generator,
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
    block: int | None = None,
    kernels: str = "auto",
) -> EscortDraw:
    """``n_samples`` exact independent draws of ``sum_j x_j`` under the escort's tuple law.

    Same input checks as :func:`~minsep.accountants.rdp_moments.log_moment` (ConfigurationError
    naming the parameter); ``block`` is the checkpoint spacing of the forward messages;
    ``kernels``: ``"numba"`` (the compiled backward walk of :mod:`.escort_kernels`, same draws),
    ``"array"`` (numpy only) or ``"auto"`` (numba when available).
    """
    owner = "sample_escort_counts"
    lam, products = moments.prepare(owner, chain, coefficients, sigma, order, max_states)
    check_range(owner, "n_samples", n_samples, low=1, integer=True)
    n = chain.n_steps
    if block is None:
        block = max(1, math.isqrt(n - 1) + 1)
    check_range(owner, "block", block, low=1, integer=True)
    if chain.min_sep == 1:
        return _memoryless(chain, products, float(sigma), lam, n_samples, rng)
    if kernels not in ("auto", "numba", "array"):
        raise ConfigurationError(
            f"{owner}.kernels = {kernels!r} is invalid: must be 'auto', 'numba' or 'array'"
        )
    # lazy: the compiled kernels import numba (~0.4 s), which `minsep --help` does not need
    from minsep.accountants.escort_kernels import NUMBA_AVAILABLE

    compiled = NUMBA_AVAILABLE and kernels != "array"
    return _forward_filter_backward_sample(
        chain, coefficients, products, float(sigma), lam, n_samples, rng, int(block), compiled
    )


def _memoryless(
    chain: ParticipationChain,
    products: moments.ColumnProducts,
    sigma: float,
    lam: int,
    n_samples: int,
    rng: np.random.Generator,
) -> EscortDraw:
    """b = 1: the steps are independent; each draws its count from the normalised weights."""
    from scipy.special import logsumexp  # lazy: scipy.special costs ~0.15 s to import

    log_w = moments.memoryless_log_weights(chain, products, sigma, lam)
    log_norm = float(logsumexp(log_w))
    law = np.exp(log_w - log_norm)
    counts = rng.choice(lam + 1, size=(n_samples, chain.n_steps), p=law / law.sum())
    return EscortDraw(counts=counts.astype(np.int8), log_z=chain.n_steps * log_norm, order=lam)


def _normalised(state: np.ndarray) -> tuple[np.ndarray, float]:
    total = float(state.sum())
    return state / total, math.log(total)


@attrs.frozen(eq=False)
class _ForwardPass:
    """The forward pass of the tuple law at one (chain, strategy, sigma, order, block): the
    message before every block-th step, the normalised final message and ``ln Z``. Read
    only: the backward walk copies what it changes."""

    key: tuple[object, ...]
    checkpoints: dict[int, np.ndarray]
    final: np.ndarray
    log_z: float


#: The last forward pass of this process (one entry): every chunk of a sampling call, and the
#: ``ln Z`` of its setup, run the same deterministic pass, so it is run once. Passes whose
#: arrays exceed :data:`FORWARD_MEMO_BYTES` are not kept.
_FORWARD: dict[str, _ForwardPass] = {}
FORWARD_MEMO_BYTES = 1 << 29


def forward_log_moment(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> float:
    """``ln Z_lam``, as :func:`~minsep.accountants.rdp_moments.log_moment` computes it (the
    same steps and rescalings, so the same float), by the escort's checkpointing pass, which
    is kept for the draws that follow at this sigma and order (b >= 2; b = 1: the closed
    form)."""
    lam, products = moments.prepare("log_moment", chain, coefficients, sigma, order, max_states)
    if chain.min_sep == 1:
        return moments.log_moment(chain, coefficients, sigma, order, max_states=max_states)
    block = max(1, math.isqrt(chain.n_steps - 1) + 1)
    return _forward_pass(chain, coefficients, products, float(sigma), lam, block).log_z


def _forward_pass(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    products: moments.ColumnProducts,
    sigma: float,
    lam: int,
    block: int,
) -> _ForwardPass:
    """The forward pass (memoised, :data:`_FORWARD`): keep the (normalised) message before
    every block-th step, and ln Z. Messages are only needed up to a constant per step, so
    checkpoints keep the running scale of the pass (rescaled like log_moment when the mass
    leaves its range)."""
    c = np.asarray(coefficients, dtype=np.float64)
    key = (chain, c.tobytes(), sigma, lam, block)
    last = _FORWARD.get("last")  # one lookup: safe when threads share the memo
    if last is not None and last.key == key:
        return last
    n = chain.n_steps
    checkpoints: dict[int, np.ndarray] = {}
    state = moments.initial_state(chain, lam)
    log_scale, mass = 0.0, float(state.sum())
    for t in range(n):
        if t % block == 0:
            checkpoints[t] = state.copy()
        mass += moments.forward_step(state, t, chain, products, sigma)
        if not (1.0 / moments.RESCALE <= mass <= moments.RESCALE):
            state, log_total = _normalised(state)
            log_scale, mass = log_scale + log_total, 1.0
    state, log_total = _normalised(state)
    result = _ForwardPass(key, checkpoints, state, log_scale + log_total)
    if (len(checkpoints) + 1) * state.nbytes <= FORWARD_MEMO_BYTES:
        _FORWARD["last"] = result
    else:
        _FORWARD.pop("last", None)
    return result


def _forward_filter_backward_sample(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    products: moments.ColumnProducts,
    sigma: float,
    lam: int,
    n_samples: int,
    rng: np.random.Generator,
    block: int,
    compiled: bool = False,
) -> EscortDraw:
    forward = _forward_pass(chain, coefficients, products, sigma, lam, block)
    (counts,) = _backward_walks(chain, products, forward, sigma, [n_samples], [rng], compiled)
    return EscortDraw(counts=counts, log_z=forward.log_z, order=lam)


def sample_escort_batch(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    sizes: list[int],
    rngs: list[np.random.Generator],
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> list[EscortDraw]:
    """:func:`sample_escort_counts` for several independent calls at once (``sizes[k]`` draws
    on ``rngs[k]``), each consuming its generator exactly as its own call would, so the draws
    are the same; the block messages of the backward walks are recomputed once for all of
    them instead of once per call (docs/rdp-escort.md §6, "Exact draws")."""
    lam, products = moments.prepare(
        "sample_escort_counts", chain, coefficients, sigma, order, max_states
    )
    if chain.min_sep == 1 or len(sizes) == 1:
        return [
            sample_escort_counts(
                chain, coefficients, sigma, order, size, rng, max_states=max_states
            )
            for size, rng in zip(sizes, rngs, strict=True)
        ]
    for size in sizes:
        check_range("sample_escort_counts", "n_samples", size, low=1, integer=True)
    from minsep.accountants.escort_kernels import NUMBA_AVAILABLE

    block = max(1, math.isqrt(chain.n_steps - 1) + 1)
    forward = _forward_pass(chain, coefficients, products, float(sigma), lam, block)
    counts = _backward_walks(
        chain, products, forward, float(sigma), list(sizes), list(rngs), NUMBA_AVAILABLE
    )
    return [EscortDraw(counts=c, log_z=forward.log_z, order=lam) for c in counts]


def _backward_walks(
    chain: ParticipationChain,
    products: moments.ColumnProducts,
    forward: _ForwardPass,
    sigma: float,
    sizes: list[int],
    rngs: list[np.random.Generator],
    compiled: bool,
) -> list[np.ndarray]:
    """The backward walks of :func:`sample_escort_batch` (one per generator), block by block
    from the last: each block's messages are recomputed from its checkpoint once, then every
    walk takes its steps through it with its own generator."""
    n, lam = chain.n_steps, len(forward.final.shape)
    block = forward.key[-1]
    assert isinstance(block, int)
    checkpoints = dict(forward.checkpoints)  # popped below; the arrays are only read
    state = forward.final
    flat = state.ravel()
    posts, counts = [], []
    for size, rng in zip(sizes, rngs, strict=True):
        # The final joint state (slot b is empty, so never drawn).
        picks = rng.choice(flat.size, size=size, p=flat / flat.sum())
        post = np.stack(np.unravel_index(picks, state.shape), axis=1)  # (size, lam) slots
        posts.append(np.ascontiguousarray(post, dtype=np.int64))
        counts.append(np.zeros((size, n), dtype=np.int8))
    messages = np.empty((min(block, n), *state.shape))
    for first in sorted(checkpoints, reverse=True):
        # Recompute this block's messages alpha_t, t = first .. min(first + block, n) - 1.
        # (into one preallocated buffer: fresh arrays per step cost page faults).
        messages[0] = checkpoints.pop(first)
        mass = float(messages[0].sum())
        for t in range(first, min(first + block, n) - 1):
            nxt = messages[t - first + 1]
            np.copyto(nxt, messages[t - first])
            mass += moments.forward_step(nxt, t, chain, products, sigma)
            if not (1.0 / moments.RESCALE <= mass <= moments.RESCALE):
                nxt /= float(nxt.sum())
                mass = 1.0
        last = min(first + block, n) - 1
        for k, rng in enumerate(rngs):
            if compiled:
                _compiled_block(chain, products, sigma, messages, first, last, posts[k],
                                counts[k], rng)  # fmt: skip
            else:
                posts[k] = _array_block(
                    chain, products, sigma, lam, messages, first, last, posts[k], counts[k], rng
                )
    return counts


def _compiled_block(
    chain: ParticipationChain,
    products: moments.ColumnProducts,
    sigma: float,
    messages: np.ndarray,
    first: int,
    last: int,
    post: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """Steps ``last .. first`` of one walk by the compiled kernel (same subsets, weights and
    uniforms as :func:`_array_block`, per draw)."""
    from minsep.accountants.escort_kernels import backward_block

    b, p = chain.min_sep, chain.probability
    exponents = np.stack(
        [moments.interaction_exponents(t, b, products, sigma) for t in range(first, last + 1)]
    )
    uniforms = rng.random((last - first + 1, post.shape[0]))
    rows_flat = messages[: last - first + 1].reshape(last - first + 1, -1)
    backward_block(rows_flat, exponents, uniforms, first, last, b, p, post, counts)


def _array_block(
    chain: ParticipationChain,
    products: moments.ColumnProducts,
    sigma: float,
    lam: int,
    messages: np.ndarray,
    first: int,
    last: int,
    post: np.ndarray,
    counts: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Steps ``last .. first`` of one walk in numpy; returns the slots before step ``first``."""
    b, p = chain.min_sep, chain.probability
    subsets = [np.array(m, dtype=bool) for m in itertools.product((False, True), repeat=lam)]
    rows = np.arange(post.shape[0])
    for t in range(last, first - 1, -1):
        alpha = messages[t - first]
        free, after = t % b, (t + 1) % b
        joined = post == free  # slot f after step t: joined at t (b >= 2)
        n_joined = joined.sum(axis=1)
        counts[:, t] = n_joined
        w = moments.interaction_exponents(t, b, products, sigma)
        weights = np.zeros((len(subsets), post.shape[0]))
        candidates = []
        for i, declined in enumerate(subsets):
            # Copies in ``declined`` were available and declined (now in slot `after`).
            ok = np.all(post[:, declined] == after, axis=1)
            pre = post.copy()
            pre[joined] = free
            pre[:, declined] = free
            candidates.append(pre)
            pair = w[np.where(joined, b, pre)]  # exponent each other copy contributes
            others = np.where(joined, 0.0, pair).sum(axis=1)
            exponent = n_joined * others + n_joined * (n_joined - 1) / 2.0 * w[b]
            log_t = (
                n_joined * math.log(p)
                + (declined.sum() * math.log1p(-p) if p < 1.0 and declined.any() else 0.0)
                + exponent
            )
            if p >= 1.0 and declined.any():
                ok[:] = False
            value = alpha[tuple(pre.T)] * np.exp(log_t)
            weights[i] = np.where(ok, value, 0.0)
        cumulative = np.cumsum(weights, axis=0)
        pick = (rng.random(post.shape[0]) * cumulative[-1] < cumulative).argmax(axis=0)
        post = np.stack(candidates)[pick, rows]
    return post


def escort_outputs(
    counts: np.ndarray, coefficients: np.ndarray, sigma: float, rng: np.random.Generator
) -> np.ndarray:
    """``y = C counts + sigma z`` per row (banded Toeplitz C, rows cut at step n).

    ``C counts`` is built from the nonzero counts only (a draw participates a few times), so
    the cost is O(nonzeros * k) plus the normals, not O(n k) per row. The engine forms y only
    for models without ``log_ratio_of_counts`` (docs/rdp-escort.md §7); the normals are
    ``rng.standard_normal(counts.shape)``'s, scaled and shifted in place.
    """
    c = np.asarray(coefficients, dtype=np.float64)
    n = counts.shape[1]
    mean = np.zeros(counts.shape, dtype=np.float64)
    rows, steps = np.nonzero(counts)
    values = counts[rows, steps].astype(np.float64)
    for j in range(min(c.size, n)):
        columns = steps + j
        keep = columns < n
        # (row, step) pairs are distinct, so are (row, step + j): a plain += adds each once
        mean[rows[keep], columns[keep]] += values[keep] * c[j]
    out = np.empty(counts.shape)  # the generator's normals (compiled for SFC64, same numbers)
    from minsep.schemes.kernels import sfc64  # lazy: it compiles with numba (not at start-up)

    sfc64.fill(rng, "standard_normal", out)
    out *= sigma
    out += mean
    return out


def log_escort_weight(log_u: np.ndarray, log_z: float, order: int, epsilon: float) -> np.ndarray:
    """``ln W = ln Z + (1 - lam) ln u + ln(1 - e^{eps - ln u})`` (``-inf`` where ln u <= eps)."""
    log_u = np.asarray(log_u, dtype=np.float64)
    gap = np.minimum(epsilon - log_u, 0.0)
    with np.errstate(divide="ignore"):
        tail = np.log(-np.expm1(gap))
    return np.where(log_u > epsilon, log_z + (1 - order) * log_u + tail, -np.inf)


def log_support_bound(log_z: float, order: int, epsilon: float) -> float:
    """``ln s_lam(eps) = ln Z - (lam - 1) eps + (lam - 1) ln(lam - 1) - lam ln lam``."""
    lam = order
    return log_z - (lam - 1) * epsilon + (lam - 1) * math.log(lam - 1) - lam * math.log(lam)
