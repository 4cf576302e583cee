"""Softmax regression and a one-hidden-layer MLP with vectorised per-example gradients.

Parameters are one flat float64 vector θ (so the correlated noise of a step is one vector of the
same length). Every function takes the array namespace ``xp`` (numpy or cupy) and works on a
whole batch at once; per-example gradients are computed in closed form (no loop over examples):

- cross-entropy ℓ(θ; x, y) = logsumexp(z) − z_y with logits z, and ∂ℓ/∂z = softmax(z) − e_y;
- softmax regression z = xW + b: ∂ℓ/∂W = x ⊗ (softmax(z) − e_y), ∂ℓ/∂b = softmax(z) − e_y;
- MLP z = relu(xW₁ + b₁)W₂ + b₂: back-propagation with outer products per example.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import attrs
import numpy as np

from minsep.framework.errors import ConfigurationError
from minsep.framework.validation import integer, positive_int

Array = Any


def _softmax_and_loss(logits: Array, y: Array, xp: Any) -> tuple[Array, Array]:
    """Row-wise softmax probabilities and cross-entropy losses (numerically stable)."""
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    exp = xp.exp(shifted)
    total = xp.sum(exp, axis=1, keepdims=True)
    probs = exp / total
    picked = xp.take_along_axis(shifted, y[:, None], axis=1)[:, 0]
    losses = xp.log(total[:, 0]) - picked
    return probs, losses


def _one_hot(y: Array, n_classes: int, xp: Any, dtype: Any) -> Array:
    return (y[:, None] == xp.arange(n_classes)[None, :]).astype(dtype)


class Model(ABC):
    """A differentiable classifier over a flat parameter vector."""

    name: ClassVar[str]

    @property
    @abstractmethod
    def n_parameters(self) -> int:
        """Length P of the flat parameter vector."""

    @property
    @abstractmethod
    def n_classes(self) -> int:
        """Number of output classes K."""

    @abstractmethod
    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Initial parameters (host float64 vector of length P)."""

    @abstractmethod
    def logits(self, params: Array, x: Array, xp: Any = np) -> Array:
        """Logits (m, K) for the rows of ``x``."""

    @abstractmethod
    def per_example_gradients(
        self, params: Array, x: Array, y: Array, xp: Any = np
    ) -> tuple[Array, Array]:
        """``(G, losses)``: G[j] = ∇_θ ℓ(θ; x_j, y_j), shape (m, P); losses shape (m,)."""

    def example_losses(self, params: Array, x: Array, y: Array, xp: Any = np) -> Array:
        """Cross-entropy loss of each row, shape (m,)."""
        return _softmax_and_loss(self.logits(params, x, xp), y, xp)[1]

    def predict(self, params: Array, x: Array, xp: Any = np) -> Array:
        """Predicted class of each row."""
        return xp.argmax(self.logits(params, x, xp), axis=1)

    def describe(self) -> dict[str, Any]:
        """Plain-data description for run records."""
        fields = attrs.asdict(self)  # type: ignore[arg-type]  # every concrete model is attrs
        return {"model": self.name, **fields, "n_parameters": self.n_parameters}


@attrs.frozen
class SoftmaxRegression(Model):
    """Multinomial logistic regression: z = xW + b, θ = (vec W, b), P = (d + 1)K."""

    name: ClassVar[str] = "softmax"

    n_features: int = attrs.field(validator=positive_int())
    classes: int = attrs.field(validator=integer(low=2))

    @property
    def n_parameters(self) -> int:
        return (self.n_features + 1) * self.classes

    @property
    def n_classes(self) -> int:
        return self.classes

    def _unpack(self, params: Array) -> tuple[Array, Array]:
        d, k = self.n_features, self.classes
        return params[: d * k].reshape(d, k), params[d * k :]

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.n_parameters)

    def logits(self, params: Array, x: Array, xp: Any = np) -> Array:
        w, b = self._unpack(params)
        return x @ w + b

    def per_example_gradients(
        self, params: Array, x: Array, y: Array, xp: Any = np
    ) -> tuple[Array, Array]:
        probs, losses = _softmax_and_loss(self.logits(params, x, xp), y, xp)
        dz = probs - _one_hot(y, self.classes, xp, probs.dtype)  # (m, K)
        m = x.shape[0]
        dw = (x[:, :, None] * dz[:, None, :]).reshape(m, self.n_features * self.classes)  # like W
        return xp.concatenate([dw, dz], axis=1), losses


@attrs.frozen
class MLP(Model):
    """One hidden ReLU layer: z = relu(xW₁ + b₁)W₂ + b₂, θ = (vec W₁, b₁, vec W₂, b₂).

    He-initialised W₁, small W₂ (scale 1/√h), zero biases.
    """

    name: ClassVar[str] = "mlp"

    n_features: int = attrs.field(validator=positive_int())
    classes: int = attrs.field(validator=integer(low=2))
    hidden: int = attrs.field(default=32, validator=positive_int())

    @property
    def n_parameters(self) -> int:
        d, h, k = self.n_features, self.hidden, self.classes
        return d * h + h + h * k + k

    @property
    def n_classes(self) -> int:
        return self.classes

    def _unpack(self, params: Array) -> tuple[Array, Array, Array, Array]:
        d, h, k = self.n_features, self.hidden, self.classes
        i1 = d * h
        i2 = i1 + h
        i3 = i2 + h * k
        return (
            params[:i1].reshape(d, h),
            params[i1:i2],
            params[i2:i3].reshape(h, k),
            params[i3:],
        )

    def init(self, rng: np.random.Generator) -> np.ndarray:
        d, h, k = self.n_features, self.hidden, self.classes
        w1 = rng.standard_normal((d, h)) * math.sqrt(2.0 / d)
        w2 = rng.standard_normal((h, k)) / math.sqrt(h)
        return np.concatenate([w1.ravel(), np.zeros(h), w2.ravel(), np.zeros(k)])

    def _forward(self, params: Array, x: Array, xp: Any) -> tuple[Array, Array, Array]:
        w1, b1, w2, b2 = self._unpack(params)
        pre = x @ w1 + b1
        hidden = xp.maximum(pre, 0.0)
        return pre, hidden, hidden @ w2 + b2

    def logits(self, params: Array, x: Array, xp: Any = np) -> Array:
        return self._forward(params, x, xp)[2]

    def per_example_gradients(
        self, params: Array, x: Array, y: Array, xp: Any = np
    ) -> tuple[Array, Array]:
        _, _, w2, _ = self._unpack(params)
        pre, hidden, logits = self._forward(params, x, xp)
        probs, losses = _softmax_and_loss(logits, y, xp)
        dz = probs - _one_hot(y, self.classes, xp, probs.dtype)  # (m, K)
        dpre = (dz @ w2.T) * (pre > 0)  # (m, h)
        m = x.shape[0]
        dw1 = (x[:, :, None] * dpre[:, None, :]).reshape(m, self.n_features * self.hidden)
        dw2 = (hidden[:, :, None] * dz[:, None, :]).reshape(m, self.hidden * self.classes)
        return xp.concatenate([dw1, dpre, dw2, dz], axis=1), losses


MODEL_NAMES = ("softmax", "mlp")


def build_model(name: str, n_features: int, n_classes: int, *, hidden: int = 32) -> Model:
    """The model called ``name`` (``"softmax"`` or ``"mlp"``) for the data's shape."""
    if name == "softmax":
        return SoftmaxRegression(n_features, n_classes)
    if name == "mlp":
        return MLP(n_features, n_classes, hidden)
    raise ConfigurationError(f"model = {name!r} is invalid: must be one of {list(MODEL_NAMES)}")
