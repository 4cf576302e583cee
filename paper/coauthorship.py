"""A synthetic co-authorship graph for paper §7.3's analogue
(:mod:`minsep.paper.multi_attribution`): papers with >= 2 authors drawn with Zipf-like
productivity, each author then bounded to k_u papers."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from minsep.framework.validation import integer, number, positive_int
from minsep.schemes import AttributionGraph


@attrs.frozen(kw_only=True)
class GraphSettings:
    """A co-authorship-like attribution graph (examples = papers, users = authors).

    Attributes:
        papers: papers drawn before cleaning and bounding.
        users: the author pool.
        zipf_exponent: author i (in a random order) is drawn with weight (rank)^-exponent,
            giving a heavy-tailed number of papers per author.
        extra_authors: mean of the Poisson number of authors beyond two per paper.
        max_authors: cap on the authors of one paper.
        max_user_examples: k_u of the contribution bounding.
        seed: seed of the generator and of the bounding order.
    """

    papers: int = attrs.field(validator=positive_int())
    users: int = attrs.field(validator=positive_int())
    zipf_exponent: float = attrs.field(default=0.75, validator=number(low=0.0))
    extra_authors: float = attrs.field(default=1.5, validator=number(low=0.0))
    max_authors: int = attrs.field(default=12, validator=integer(low=2))
    max_user_examples: int = attrs.field(default=2, validator=positive_int())
    seed: int = attrs.field(default=7301, validator=integer(low=0))


@attrs.frozen
class GraphSummary:
    """The bounded graph and how it was obtained."""

    graph: AttributionGraph
    statistics: dict[str, Any]


def synthetic_coauthorship(settings: GraphSettings) -> GraphSummary:
    """Draw papers with 2 + Poisson(extra_authors) author slots (capped), fill the slots with
    authors by Zipf-like productivity, merge repeated authors, drop papers left with one
    author (every example has >= 2 users, as the paper's preprocessing), then bound every
    author to k_u papers greedily in a random order. Deterministic given ``settings``."""
    rng = np.random.default_rng(settings.seed)
    slots = 2 + np.minimum(
        rng.poisson(settings.extra_authors, settings.papers), settings.max_authors - 2
    )
    weights = np.arange(1, settings.users + 1, dtype=np.float64) ** -settings.zipf_exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(int(slots.sum())), side="right")
    authors = rng.permutation(settings.users)[np.minimum(ranks, settings.users - 1)]
    papers = np.repeat(np.arange(settings.papers, dtype=np.int64), slots)
    keys = np.unique(papers * settings.users + authors)
    paper_of, author_of = keys // settings.users, keys % settings.users
    counts = np.bincount(paper_of, minlength=settings.papers)
    multi = counts >= 2
    keep = multi[paper_of]
    kept_counts = counts[multi]
    raw = AttributionGraph(
        indptr=np.concatenate([[0], np.cumsum(kept_counts)]),
        indices=author_of[keep],
        n_users=settings.users,
    )
    bounded, _kept = raw.bound_contributions(settings.max_user_examples, rng)
    sizes = bounded.neighbourhood_sizes()
    per_user = bounded.user_example_counts()
    statistics = {
        "papers_drawn": settings.papers,
        "author_pool": settings.users,
        "papers_with_2plus_authors": raw.n_examples,
        "max_papers_per_author_before_bounding": raw.max_user_examples,
        "examples_after_bounding": bounded.n_examples,
        "authors_with_examples": int(np.count_nonzero(per_user)),
        "max_examples_per_author": bounded.max_user_examples,
        "mean_authors_per_example": float(np.diff(bounded.indptr).mean()),
        "min_authors_per_example": int(np.diff(bounded.indptr).min()),
        "mean_neighbourhood_size": float(sizes.mean()),
        "max_neighbourhood_size": int(sizes.max()),
    }
    return GraphSummary(bounded, statistics)


__all__ = ["GraphSettings", "GraphSummary", "synthetic_coauthorship"]
