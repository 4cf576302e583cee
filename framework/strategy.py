"""The strategy contract: the matrix C of ``y = C x + sigma z`` (docs/math.md §4, §8)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from minsep.framework.errors import NotAccountableError

if TYPE_CHECKING:
    from minsep.framework.backend import Backend, RandomSource
    from minsep.framework.parameters import Parameter
    from minsep.framework.workloads import Workload


class Strategy(ABC):
    """A strategy matrix C: lower-triangular, entrywise non-negative, invertible.

    The mechanism releases ``C x + sigma z`` and streams the noise ``sigma C^-1 z`` into
    training. Every strategy gives its dense matrix for small n (:meth:`matrix`), its
    sensitivity under b-min-sep participation, its streaming noise, its error on a workload
    (:meth:`mse`) and the column inner products ``(C^T C)[i, j]`` the loss models use.

    **Banded strategies** (``is_banded``; the default, and every strategy written before the
    general interface) are banded Toeplitz with first column :attr:`coefficients` (``bands``
    entries, ``||c||_2 = 1`` for BandMF): ``C[i, j] = 0`` when ``i - j >= bands``. The b-min-sep
    loss models rely on this. A strategy that is **not banded** (BLT, banded inverse, dense;
    docs/math.md §8) answers ``is_banded = False`` and its :attr:`coefficients` and
    :attr:`bands` raise NotAccountableError (use the App. B r-min-sep accounting or the
    unamplified Gaussian bound), so that no banded analysis can silently run on it.
    """

    registry_name: ClassVar[str]

    @classmethod
    def example(cls) -> Strategy:
        """A small valid instance, used by the contract tests every strategy runs through."""
        raise NotImplementedError(f"{cls.__name__}.example() is not implemented")

    @classmethod
    def invalid_examples(cls) -> list[tuple[dict[str, Any], str]]:
        """``(constructor kwargs, parameter name)`` pairs that must raise ConfigurationError."""
        return []

    @classmethod
    def parameters(cls) -> tuple[Parameter, ...]:
        """The options :meth:`for_steps` takes: by default the attrs fields, with kinds,
        defaults and the docstring's help, as a scheme's (:meth:`SamplingScheme.parameters`).

        They drive the ``--strategy NAME:key=value`` options and flags of the ``minsep``
        commands and ``minsep list``; override when ``for_steps`` takes other options than the
        fields (e.g. ``bands`` of an optimised strategy).
        """
        from minsep.framework.parameters import parameters_of

        return parameters_of(cls)

    @classmethod
    def for_steps(cls, n_steps: int, **options: Any) -> Strategy:
        """Build the strategy for an ``n_steps`` run (e.g. ``bands=8`` optimises BandMF).

        Used by the CLI and ``compare``; unknown options raise ConfigurationError.
        """
        return cls(**options)

    @property
    def strategy_name(self) -> str:
        """The registered name (class name if unregistered)."""
        return str(getattr(type(self), "registry_name", type(self).__name__))

    def not_banded_error(self, what: str) -> NotAccountableError:
        """The error a non-banded strategy raises when asked for ``what`` (e.g. ``bands``)."""
        return NotAccountableError(
            f"strategy {self.strategy_name!r} is not banded Toeplitz, so it has no {what}: "
            "analyses that need C[i, j] = 0 for i - j >= bands (the b-min-sep loss models, "
            "exact PLD events) do not apply; use the App. B r-min-sep accounting or the "
            "unamplified Gaussian bound"
        )

    @property
    def is_banded(self) -> bool:
        """True when C is banded Toeplitz with first column :attr:`coefficients`
        (``C[i, j] = 0`` for ``i - j >= bands``, every n). Default True; non-banded strategies
        override it with False."""
        return True

    @property
    @abstractmethod
    def coefficients(self) -> np.ndarray:
        """The first-column coefficients ``c`` (length ``bands``, unit l2 norm) of a banded
        strategy; a non-banded one raises :meth:`not_banded_error`."""

    @property
    def bands(self) -> int:
        """The number of bands k (1 for the identity); NotAccountableError when not banded."""
        if not self.is_banded:
            raise self.not_banded_error("number of bands")
        return int(self.coefficients.shape[0])

    def public_parameters(self) -> dict[str, Any]:
        """The strategy as plain data (for results and records)."""
        if not self.is_banded:
            return {"strategy": self.strategy_name}
        return {
            "strategy": self.strategy_name,
            "bands": int(self.bands),
            "coefficients": [float(c) for c in self.coefficients],
        }

    @abstractmethod
    def matrix(self, n_steps: int) -> np.ndarray:
        """The dense n x n matrix C (for small n, tests and inspection)."""

    def toeplitz_column(self, n_steps: int) -> np.ndarray | None:
        """The first column of C (length n) when C is lower-triangular Toeplitz, else None.

        Default: read off :meth:`matrix` (exact comparison); structured strategies override it.
        """
        C = self.matrix(n_steps)
        column = C[:, 0]
        n = C.shape[0]
        lag = np.subtract.outer(np.arange(n), np.arange(n))
        toeplitz = np.where(lag >= 0, column[np.clip(lag, 0, None)], 0.0)
        return np.array(column) if np.array_equal(C, toeplitz) else None

    def column_gram(self, n_steps: int) -> np.ndarray:
        """``C^T C`` (n x n): entry (i, j) is the inner product of columns i and j.

        Default from :meth:`matrix`; Toeplitz strategies override it with an O(n^2) recursion.
        """
        C = self.matrix(n_steps)
        return np.asarray(C.T @ C, dtype=np.float64)

    def column_inner_products(self, n_steps: int, i: Any, j: Any) -> np.ndarray:
        """``(C^T C)[i, j]`` for broadcastable index arrays ``i``, ``j`` (0-based columns).

        Default: entries of :meth:`column_gram`; structured strategies override it with
        O(bands) or O(buffers^2) per entry, without any n x n array.
        """
        return np.asarray(self.column_gram(n_steps)[np.asarray(i), np.asarray(j)])

    def mse(self, n_steps: int, workload: Workload | None = None) -> float:
        """``(1/n) ||A C^-1||_F^2`` for the workload A (prefix sums when None) and C as given
        (docs/math.md §8): the error per unit sigma^2 when sigma is the noise multiplier an
        accountant calibrates for this C. Multiply by ``sensitivity(...)**2`` of a rescaled
        C for the scale-free objective (:meth:`normalized_mse`).

        Default: dense (O(n^3), small n); structured strategies override it.
        """
        from minsep.framework.workloads import PrefixSums

        A = (workload or PrefixSums()).matrix(n_steps)
        C = self.matrix(n_steps)
        X = np.linalg.solve(C.T, A.T).T  # A C^-1
        return float(np.sum(X * X) / n_steps)

    def normalized_mse(
        self,
        n_steps: int,
        workload: Workload | None = None,
        min_sep: int | None = None,
        max_participations: int = 1,
    ) -> float:
        """``mse(n, A) * sensitivity(n, b, K)^2``: scale free (the objective optimisers
        minimise); ``b = n`` and ``K = 1`` (single participation) by default."""
        sens = self.sensitivity(
            n_steps, n_steps if min_sep is None else min_sep, max_participations
        )
        return self.mse(n_steps, workload) * sens * sens

    def prefix_mse(self, n_steps: int) -> float:
        """``(1/n) ||A C^-1||_F^2`` for the prefix-sum workload A (§8): :meth:`mse` with prefix
        sums (at unit sensitivity for unit-norm BandMF coefficients)."""
        return self.mse(n_steps)

    @abstractmethod
    def sensitivity(self, n_steps: int, min_sep: int, max_participations: int) -> float:
        """``max ||sum_{j in pi} C[:, j]||_2`` over participation patterns pi with gaps
        ``>= min_sep`` and at most ``max_participations`` entries (docs/math.md §4): exact, or
        an upper bound (never below the maximum; :meth:`sensitivity_is_exact` says which)."""

    def sensitivity_is_exact(
        self,
        min_sep: int,
        n_steps: int | None = None,
        max_participations: int | None = None,
    ) -> bool:
        """True when :meth:`sensitivity` is the exact maximum for these arguments, False when
        it may be an upper bound (the default answer)."""
        return False

    @abstractmethod
    def noise(
        self,
        shape: Sequence[int],
        n_steps: int,
        rng: RandomSource,
        backend: Backend,
    ) -> Iterator[Any]:
        """Stream ``(C^-1 Z)[i]`` for i = 1..n, Z with i.i.d. N(0,1) rows of ``shape``.

        Holds O(bands * prod(shape)) memory (O(buffers * prod(shape)) for BLT); multiply by
        sigma for the training noise.
        """
