"""Exact escort draws of b-min-sep BandMF on the multiset chain (docs/rdp-escort.md §3.1, §6).

The escort's tuple law (§6) is exchangeable in the lam copies and its output ``sum_j x_j``
(the per-step participation count) depends only on the multiset of the copies' slots, so the
multiset chain of :mod:`.multiset_moments` is sampled instead of the joint one of
:mod:`.escort` (which stays as the reference): forward filtering with the message kept every
``block`` steps (default ``ceil(sqrt(n))``; every step where all n fit
:data:`FULL_MESSAGES_BYTES`), the final multiset drawn from the last message,
then a compiled backward walk (:func:`~.multiset_kernels.backward_block`) that draws the
multiset before each step from ``alpha_t(n) K_t(n, n')``. The count at step t is the number of
copies in the free slot after it. The draws do not depend on ``block``; they are independent
and exact, but not the same numbers as :mod:`.escort` draws (other random-number use).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from minsep.accountants import multiset_moments as multiset
from minsep.accountants import rdp_moments as moments
from minsep.accountants.escort import EscortDraw, sample_escort_counts
from minsep.framework.participation import ParticipationChain
from minsep.framework.validation import check_range

__all__ = [
    "forward_log_moment",
    "sample_multiset_escort_batch",
    "sample_multiset_escort_counts",
]

#: The last forward pass of this process (one entry), as ``escort._FORWARD``: passes whose
#: checkpoints exceed :data:`FORWARD_MEMO_BYTES` are not kept.
_FORWARD: dict[str, _ForwardPass] = {}
FORWARD_MEMO_BYTES = 1 << 29
#: A pass whose n messages take at most this many bytes keeps every one (and every step's
#: exponents), so the backward walks read them instead of recomputing each block from its
#: checkpoint (n = 1024, b = 8: 14 MB at order 6, 53 MB at order 8).
FULL_MESSAGES_BYTES = 1 << 26


@attrs.frozen(eq=False)
class _ForwardPass:
    """The multiset pass at one (chain, strategy, sigma, order, block): the message before
    every block-th step, the normalised final message and ``ln Z`` (read only)."""

    key: tuple[object, ...]
    checkpoints: dict[int, np.ndarray]
    final: np.ndarray
    log_z: float
    messages: np.ndarray | None = None
    exponents: np.ndarray | None = None


def _default_block(n_steps: int) -> int:
    return max(1, math.isqrt(n_steps - 1) + 1)


def _forward_pass(
    runner: multiset.StepRunner, coefficients: np.ndarray, block: int
) -> _ForwardPass:
    """Run (or recall, :data:`_FORWARD`) the checkpointed pass: the same steps and rescalings
    as :func:`~.multiset_moments.log_moment`, so the same ``ln Z``."""
    chain, lam = runner.chain, runner.table.order
    c = np.asarray(coefficients, dtype=np.float64)
    key = (chain, c.tobytes(), runner.sigma, lam, block)
    last = _FORWARD.get("last")  # one lookup: safe when threads share the memo
    if last is not None and last.key == key:
        return last
    n = chain.n_steps
    message = multiset.initial_message(chain, runner.table)
    mass, log_scale = float(message.sum()), 0.0
    checkpoints: dict[int, np.ndarray] = {}
    full = n * message.nbytes <= FULL_MESSAGES_BYTES
    messages = np.empty((n, message.size)) if full else None
    for first in range(0, n, block):
        checkpoints[first] = message.copy()
        stop = min(first + block, n)
        if messages is None:
            mass, log_scale = multiset.run_steps(runner, message, first, stop, mass, log_scale)
            continue
        for t in range(first, stop):  # the same steps one at a time: the same floats
            messages[t] = message
            mass, log_scale = multiset.run_steps(runner, message, t, t + 1, mass, log_scale)
    total = float(message.sum())
    exponents = np.stack([runner.exponents(t) for t in range(n)]) if full else None
    result = _ForwardPass(key, checkpoints, message / total, log_scale + math.log(total),
                          messages, exponents)  # fmt: skip
    if (len(checkpoints) + 1 + (n if full else 0)) * message.nbytes <= FORWARD_MEMO_BYTES:
        _FORWARD["last"] = result
    else:
        _FORWARD.pop("last", None)
    return result


def forward_log_moment(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> float:
    """``ln Z_lam`` as :func:`~.multiset_moments.log_moment` computes it (the same float), by
    the checkpointing pass, kept for the draws that follow (b = 1: the closed form)."""
    lam, products = multiset.prepare("log_moment", chain, coefficients, sigma, order, max_states)
    if chain.min_sep == 1:
        return moments.log_moment(chain, coefficients, sigma, lam, max_states=max_states)
    runner = multiset.StepRunner.build(chain, products, float(sigma), lam)
    return _forward_pass(runner, coefficients, _default_block(chain.n_steps)).log_z


def sample_multiset_escort_counts(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    n_samples: int,
    rng: np.random.Generator,
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
    block: int | None = None,
) -> EscortDraw:
    """``n_samples`` exact independent draws of ``sum_j x_j`` under the escort's tuple law.

    The input checks of :func:`~.multiset_moments.log_moment` (ConfigurationError naming the
    parameter); ``block`` is the checkpoint spacing. b = 1: the memoryless sampler of
    :func:`~.escort.sample_escort_counts`.
    """
    owner = "sample_escort_counts"
    lam, products = multiset.prepare(owner, chain, coefficients, sigma, order, max_states)
    check_range(owner, "n_samples", n_samples, low=1, integer=True)
    block = _default_block(chain.n_steps) if block is None else block
    check_range(owner, "block", block, low=1, integer=True)
    if chain.min_sep == 1:
        return sample_escort_counts(chain, coefficients, sigma, lam, n_samples, rng)
    runner = multiset.StepRunner.build(chain, products, float(sigma), lam)
    forward = _forward_pass(runner, coefficients, int(block))
    (counts,) = _backward_walks(runner, forward, int(block), [int(n_samples)], [rng])
    return EscortDraw(counts=counts, log_z=forward.log_z, order=lam)


def sample_multiset_escort_batch(
    chain: ParticipationChain,
    coefficients: np.ndarray,
    sigma: float,
    order: int,
    sizes: list[int],
    rngs: list[np.random.Generator],
    *,
    max_states: int = moments.DEFAULT_MAX_STATES,
) -> list[EscortDraw]:
    """:func:`sample_multiset_escort_counts` for several calls at once (``sizes[k]`` draws on
    ``rngs[k]``, each generator used as its own call would use it, so the same draws), with
    the block messages recomputed once for all of them."""
    owner = "sample_escort_counts"
    lam, products = multiset.prepare(owner, chain, coefficients, sigma, order, max_states)
    for size in sizes:
        check_range(owner, "n_samples", size, low=1, integer=True)
    if chain.min_sep == 1:
        return [
            sample_escort_counts(chain, coefficients, sigma, lam, size, rng)
            for size, rng in zip(sizes, rngs, strict=True)
        ]
    block = _default_block(chain.n_steps)
    runner = multiset.StepRunner.build(chain, products, float(sigma), lam)
    forward = _forward_pass(runner, coefficients, block)
    counts = _backward_walks(runner, forward, block, [int(s) for s in sizes], list(rngs))
    return [EscortDraw(counts=c, log_z=forward.log_z, order=lam) for c in counts]


def _backward_walks(
    runner: multiset.StepRunner,
    forward: _ForwardPass,
    block: int,
    sizes: list[int],
    rngs: list[np.random.Generator],
) -> list[np.ndarray]:
    """One backward walk per generator, block by block from the last: each block's messages
    are read from the pass or recomputed from its checkpoint once
    (:func:`_block_messages`), then every walk takes its steps through it. Each
    generator draws the final multisets (``Generator.choice``), then per block one uniform per
    step and draw."""
    chain, table = runner.chain, runner.table
    n, lam, b = chain.n_steps, table.order, chain.min_sep
    kernels = multiset.compiled_kernels()
    posts, counts = [], []
    for size, rng in zip(sizes, rngs, strict=True):
        picks = rng.choice(table.states, size=size, p=forward.final / forward.final.sum())
        post = np.empty((size, lam), dtype=np.int64)
        kernels.unrank(np.asarray(picks, dtype=np.int64), lam, table.binom, post)
        posts.append(post)
        counts.append(np.zeros((size, n), dtype=np.int8))
    for first in sorted(forward.checkpoints, reverse=True):
        last = min(first + block, n) - 1
        messages, exponents = _block_messages(runner, forward, first, last)
        for post, count, rng in zip(posts, counts, rngs, strict=True):
            uniforms = rng.random((last - first + 1, post.shape[0]))
            kernels.backward_block(messages, exponents, uniforms, first, last, b, table.binom,
                                   runner.join_pow, runner.decline_pow, post, count)  # fmt: skip
    return counts


def _block_messages(
    runner: multiset.StepRunner, forward: _ForwardPass, first: int, last: int
) -> tuple[np.ndarray, np.ndarray]:
    """The messages before steps ``first .. last`` and their exponents: the pass's own where it
    kept them all, else recomputed from the checkpoint at ``first`` (the same steps; only a
    rescaling may fall elsewhere, which the backward draws do not see but in the last bit)."""
    if forward.messages is not None and forward.exponents is not None:
        return forward.messages[first : last + 1], forward.exponents[first : last + 1]
    messages = np.empty((last - first + 1, runner.table.states))
    messages[0] = forward.checkpoints[first]
    mass = float(messages[0].sum())
    for t in range(first, last):
        np.copyto(messages[t - first + 1], messages[t - first])
        mass, _ = multiset.run_steps(runner, messages[t - first + 1], t, t + 1, mass)
    exponents = np.stack([runner.exponents(t) for t in range(first, last + 1)])
    return messages, exponents
