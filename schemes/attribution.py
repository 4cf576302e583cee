"""The public attribution graph of the multi-attribution setting (docs/math.md §5, paper §6).

Each example is attributed to a non-empty set of users. Under fixed-graph adjacency the graph
is public; the privacy unit is a user, and after contribution bounding every user has at most
k_u examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range


def _int_array(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=np.int64)


@attrs.frozen(eq=False)
class AttributionGraph:
    """Examples -> users, stored as CSR arrays (row e lists the users of example e).

    Build it with :meth:`from_lists` or :meth:`from_csr`. Every example has at least one user;
    user ids are ``0..n_users-1``. ``len(graph)`` is the number of examples.

    Attributes:
        indptr: int64, length ``n_examples + 1``; the users of e are
            ``indices[indptr[e]:indptr[e+1]]``.
        indices: int64 user ids, sorted and distinct within each example.
        n_users: number of users (ids ``< n_users``).
    """

    indptr: np.ndarray = attrs.field(converter=_int_array)
    indices: np.ndarray = attrs.field(converter=_int_array)
    n_users: int

    def __attrs_post_init__(self) -> None:
        owner = type(self).__name__
        check_range(owner, "n_users", self.n_users, low=0, integer=True)
        ptr, idx = self.indptr, self.indices
        if ptr.ndim != 1 or ptr.size < 2 or ptr[0] != 0 or ptr[-1] != idx.size:
            raise ConfigurationError(
                f"{owner}.indptr is invalid: must be a 1-d array of length n_examples + 1 >= 2 "
                f"starting at 0 and ending at len(indices) = {idx.size}"
            )
        counts = np.diff(ptr)
        if np.any(counts < 1):
            bad = int(np.flatnonzero(counts < 1)[0])
            raise ConfigurationError(
                f"{owner}.indptr is invalid: example {bad} has no user; every example must be "
                "attributed to at least one user"
            )
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_users):
            raise ConfigurationError(
                f"{owner}.indices is invalid: user ids must lie in [0, n_users = {self.n_users})"
            )
        rows = np.repeat(np.arange(counts.size), counts)
        if idx.size > 1 and np.any((np.diff(idx) <= 0) & (rows[1:] == rows[:-1])):
            raise ConfigurationError(
                f"{owner}.indices is invalid: each example's user ids must be sorted and distinct"
            )

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_lists(
        cls, user_lists: Iterable[Iterable[int]], n_users: int | None = None
    ) -> AttributionGraph:
        """From one list of user ids (ints >= 0) per example; duplicates are merged."""
        rows = [np.unique(np.asarray(list(users), dtype=np.int64)) for users in user_lists]
        counts = np.array([r.size for r in rows], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        indices = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
        if n_users is None:
            n_users = int(indices.max()) + 1 if indices.size else 0
        return cls(indptr=indptr, indices=indices, n_users=n_users)

    @classmethod
    def from_csr(cls, matrix: Any) -> AttributionGraph:
        """From a scipy sparse matrix (examples x users); its non-zero pattern is the graph."""
        import scipy.sparse as sp

        if not sp.issparse(matrix):
            raise ConfigurationError(
                f"AttributionGraph.matrix = {type(matrix).__name__} is invalid: must be a scipy "
                "sparse matrix (examples x users)"
            )
        csr = sp.csr_array(matrix, dtype=np.float64)
        csr.eliminate_zeros()
        csr.sum_duplicates()
        csr.sort_indices()
        return cls(indptr=csr.indptr, indices=csr.indices, n_users=int(csr.shape[1]))

    # -- queries --------------------------------------------------------------------------

    @property
    def n_examples(self) -> int:
        """Number of examples N."""
        return int(self.indptr.size - 1)

    def __len__(self) -> int:
        return self.n_examples

    def users_of(self, example: int) -> np.ndarray:
        """The user ids of one example."""
        return self.indices[self.indptr[example] : self.indptr[example + 1]]

    def user_example_counts(self) -> np.ndarray:
        """How many examples each user has (length ``n_users``)."""
        return np.bincount(self.indices, minlength=self.n_users)

    @property
    def max_user_examples(self) -> int:
        """k_u of this graph: the most examples any one user has."""
        counts = self.user_example_counts()
        return int(counts.max()) if counts.size else 0

    def gather_users(self, examples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The users of ``examples`` concatenated, and how many each example has."""
        starts = self.indptr[examples]
        counts = self.indptr[examples + 1] - starts
        total = int(counts.sum())
        offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return self.indices[offsets + np.arange(total, dtype=np.int64)], counts

    def to_csr(self) -> Any:
        """The graph as a scipy CSR array of ones (examples x users)."""
        import scipy.sparse as sp

        data = np.ones(self.indices.size)
        return sp.csr_array(
            (data, self.indices, self.indptr), shape=(self.n_examples, self.n_users)
        )

    def neighbourhood_sizes(self) -> np.ndarray:
        """m_e: how many examples share at least one user with e (e itself included)."""
        a = self.to_csr()
        shared = (a @ a.T).tocsr()
        return np.asarray(np.diff(shared.indptr), dtype=np.int64)

    # -- contribution bounding ------------------------------------------------------------

    def bound_contributions(
        self, max_user_examples: int, rng: np.random.Generator
    ) -> tuple[AttributionGraph, np.ndarray]:
        """Drop examples until every user has at most ``max_user_examples`` (k_u) of them.

        Greedy in a uniformly random order: an example is kept when none of its users has
        reached k_u yet. Returns the bounded graph (examples renumbered in increasing original
        order) and the kept original indices. The order is data-independent, but the kept set
        depends on the graph, which is public under fixed-graph adjacency.
        """
        check_range("AttributionGraph", "max_user_examples", max_user_examples, low=1, integer=True)
        ptr = self.indptr.tolist()
        idx = self.indices.tolist()
        used = [0] * self.n_users
        keep = np.zeros(self.n_examples, dtype=bool)
        for e in rng.permutation(self.n_examples).tolist():
            users = idx[ptr[e] : ptr[e + 1]]
            if all(used[u] < max_user_examples for u in users):
                for u in users:
                    used[u] += 1
                keep[e] = True
        kept = np.flatnonzero(keep).astype(np.int64)
        return self.subset(kept), kept

    def subset(self, examples: Sequence[int] | np.ndarray) -> AttributionGraph:
        """The graph restricted to ``examples`` (renumbered 0.. in the given order)."""
        rows = _int_array(examples)
        users, counts = self.gather_users(rows)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        return AttributionGraph(indptr=indptr, indices=users, n_users=self.n_users)
