"""Activation names -> kernels_numba activation kinds.

Layers store the Keras name; the forward/backward work is kernels_numba's
`activation_forward`/`activation_backward` (or a fused GEMM/conv epilogue).
`kerasish.activations.relu` etc. are functions too, as in Keras, so
`Dense(10, activation=keras.activations.softmax)` works and `relu(x)` computes on a
NumPy array.
"""

import numpy as np

from kernels_numba import ops

ALL = ("linear", "relu", "sigmoid", "tanh", "softmax", "leaky_relu", "elu", "gelu", "softplus")
# Activations dense/conv kernels can fuse into their epilogue.
FUSABLE = ("linear", "relu", "sigmoid", "tanh")
# Default alpha per kind (Keras: leaky_relu negative_slope=0.2, elu alpha=1.0).
ALPHA = {"leaky_relu": 0.2, "elu": 1.0}


def get(identifier):
    """Canonical activation name from None, a name, or a function with a Keras name."""
    if identifier is None:
        return "linear"
    if callable(identifier) and hasattr(identifier, "__name__"):
        identifier = identifier.__name__
    if isinstance(identifier, str):
        name = identifier.lower()
        if name in ALL:
            return name
    raise ValueError(f"Unknown activation: {identifier!r}. Valid activations: {list(ALL)}")


def serialize(name):
    return name


def alpha(name):
    return ALPHA.get(name, 0.0)


def _function(name):
    def apply(x):
        try:
            y = np.array(x, dtype=np.float32, order="C")  # a copy, computed in place
        except (TypeError, ValueError) as exc:
            raise TypeError(f"activations.{name}: expected numeric array-like input; "
                            f"received {type(x).__name__} ({exc})") from None
        ops.activation_forward(y, y, kind=name, alpha=alpha(name))
        return y

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Keras's {name} activation of a NumPy array, in float32 (softmax: last axis)."
    return apply


linear = _function("linear")
relu = _function("relu")
sigmoid = _function("sigmoid")
tanh = _function("tanh")
softmax = _function("softmax")
leaky_relu = _function("leaky_relu")
elu = _function("elu")
gelu = _function("gelu")
softplus = _function("softplus")
