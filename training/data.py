"""Datasets for the minimal trainer: scikit-learn's bundled digits and synthetic clusters.

Both return a :class:`Dataset` with a seeded train/test split. Nothing is downloaded: digits
ships inside scikit-learn (the optional ``data`` extra).

Preprocessing and privacy: scaling features with statistics of the training set is itself a
(non-private) release. ``load_digits`` therefore scales by the *public* pixel range [0, 16] by
default; ``scaling="standard"`` standardises with training-set statistics and is flagged as not
covered by the DP guarantee.
"""

from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import check_range

Scaling = Literal["range", "standard"]


def _as_float_matrix(value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(value, dtype=np.float64)


def _as_labels(value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(value, dtype=np.int64)


@attrs.frozen(eq=False)
class Dataset:
    """A classification dataset split into train and test parts (host numpy arrays).

    Attributes:
        name: a short label recorded with results (``"digits"``, ``"synthetic"``).
        x_train, x_test: float64 feature matrices, one example per row.
        y_train, y_test: int64 labels in ``[0, n_classes)``.
        n_classes: the number of classes.
        private_preprocessing: True when preprocessing used statistics of the training data
            (not covered by the DP guarantee of a run).
    """

    name: str
    x_train: np.ndarray = attrs.field(converter=_as_float_matrix, repr=False)
    y_train: np.ndarray = attrs.field(converter=_as_labels, repr=False)
    x_test: np.ndarray = attrs.field(converter=_as_float_matrix, repr=False)
    y_test: np.ndarray = attrs.field(converter=_as_labels, repr=False)
    n_classes: int
    private_preprocessing: bool = False

    def __attrs_post_init__(self) -> None:
        check_range("Dataset", "n_classes", self.n_classes, low=2, integer=True)
        for part in ("train", "test"):
            x = getattr(self, f"x_{part}")
            y = getattr(self, f"y_{part}")
            if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
                raise ConfigurationError(
                    f"Dataset.x_{part} / y_{part} have shapes {x.shape} / {y.shape}: must be "
                    "(m, d) features and (m,) labels with the same m"
                )
            if y.size and (y.min() < 0 or y.max() >= self.n_classes):
                raise ConfigurationError(
                    f"Dataset.y_{part} has labels in [{y.min()}, {y.max()}]: must lie in "
                    f"[0, {self.n_classes - 1}]"
                )
        if self.x_train.shape[0] < 1:
            raise ConfigurationError("Dataset.x_train has no rows: must hold >= 1 example")
        if self.x_train.shape[1] != self.x_test.shape[1]:
            raise ConfigurationError(
                f"Dataset.x_test has {self.x_test.shape[1]} features: must match x_train's "
                f"{self.x_train.shape[1]}"
            )

    @property
    def n_features(self) -> int:
        """Number of input features d."""
        return int(self.x_train.shape[1])

    @property
    def train_size(self) -> int:
        """|D|, the number of training examples (the population the sampler draws from)."""
        return int(self.x_train.shape[0])

    def summary(self) -> dict[str, object]:
        """Plain-data description for run records."""
        return {
            "name": self.name,
            "train_size": self.train_size,
            "test_size": int(self.x_test.shape[0]),
            "n_features": self.n_features,
            "n_classes": self.n_classes,
            "private_preprocessing": self.private_preprocessing,
        }


def _split(
    x: np.ndarray, y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A seeded uniformly random train/test split."""
    check_range(
        "split", "test_fraction", test_fraction, low=0.0, high=1.0, low_open=True, high_open=True
    )
    check_range("split", "seed", seed, low=0, integer=True)
    order = np.random.default_rng(seed).permutation(x.shape[0])
    n_test = max(1, round(test_fraction * x.shape[0]))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def load_digits(
    *, test_fraction: float = 0.2, seed: int = 0, scaling: Scaling = "range"
) -> Dataset:
    """scikit-learn's bundled 8x8 digits (1797 examples, 64 features, 10 classes).

    Args:
        test_fraction: share of examples held out for testing.
        seed: seed of the train/test split.
        scaling: ``"range"`` maps the public pixel range [0, 16] to [-1, 1] (data independent);
            ``"standard"`` centres and scales each feature with training-set statistics
            (constant features are left centred), which the DP guarantee does not cover.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ConfigurationError(
            "dataset 'digits' needs scikit-learn: pip install 'minsep[data]'"
        ) from exc
    if scaling not in ("range", "standard"):
        raise ConfigurationError(
            f"load_digits.scaling = {scaling!r} is invalid: must be one of ['range', 'standard']"
        )
    bunch = sklearn_digits()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    x_train, y_train, x_test, y_test = _split(x, y, test_fraction, seed)
    if scaling == "range":
        x_train, x_test = x_train / 8.0 - 1.0, x_test / 8.0 - 1.0
    else:
        x_train, x_test = standardise(x_train, x_test)
    return Dataset(
        "digits", x_train, y_train, x_test, y_test, 10, private_preprocessing=scaling == "standard"
    )


def standardise(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale both parts with the training mean and standard deviation.

    Features with zero training variance are only centred.
    """
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (x_train - mean) / std, (x_test - mean) / std


def synthetic(
    *,
    n_examples: int = 600,
    n_features: int = 8,
    n_classes: int = 3,
    separation: float = 3.0,
    test_fraction: float = 0.25,
    seed: int = 0,
) -> Dataset:
    """Gaussian clusters: class c has mean ``separation * u_c`` (u_c random unit vectors) and
    identity covariance; labels are balanced. Fast, dependency-free data for tests.
    """
    check_range("synthetic", "n_examples", n_examples, low=4, integer=True)
    check_range("synthetic", "n_features", n_features, low=1, integer=True)
    check_range("synthetic", "n_classes", n_classes, low=2, integer=True)
    check_range("synthetic", "separation", separation, low=0.0)
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((n_classes, n_features))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    y = np.arange(n_examples, dtype=np.int64) % n_classes
    x = separation * directions[y] + rng.standard_normal((n_examples, n_features))
    x_train, y_train, x_test, y_test = _split(x, y, test_fraction, seed)
    return Dataset("synthetic", x_train, y_train, x_test, y_test, n_classes)
