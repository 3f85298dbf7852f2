"""Activation names -> kernels_numba activation kinds.

Layers store the Keras name; the forward/backward work is kernels_numba's
`activation_forward`/`activation_backward` (or a fused GEMM/conv epilogue).
`kerasish.activations.relu` etc. are functions too, as in Keras, so
`Dense(10, activation=keras.activations.softmax)` works and `relu(x)` computes on a
NumPy array.
"""

import numpy as np

from kernels_numba import ops

ALL = ("linear", "relu", "sigmoid", "tanh", "softmax", "leaky_relu", "elu", "gelu", "softplus",
       "silu", "selu", "relu6", "hard_sigmoid", "hard_silu", "mish", "exponential", "softsign",
       "log_softmax")
# Keras 3's aliases: get("swish") is silu, get("hard_swish") is hard_silu (and they
# serialize under the canonical name, as in Keras).
ALIASES = {"swish": "silu", "hard_swish": "hard_silu"}
# Activations dense/conv kernels can fuse into their epilogue.
FUSABLE = ("linear", "relu", "sigmoid", "tanh")
# Default alpha per kind (Keras: leaky_relu negative_slope=0.2, elu alpha=1.0).
ALPHA = {"leaky_relu": 0.2, "elu": 1.0}


def get(identifier):
    """Canonical activation name from None, a name, or a function with a Keras name."""
    if identifier is None:
        return "linear"
    if isinstance(identifier, dict):  # a serialized function: {"class_name": "function", ...}
        identifier = identifier.get("config", identifier.get("class_name"))
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
        name = ALIASES.get(name, name)
        if name not in ALL:
            raise ValueError(
                f"Unsupported activation: {identifier!r} is not one of Keras's named "
                f"activations ({sorted(ALL + tuple(ALIASES))}); arbitrary callables as "
                "activation= are not supported yet (they will run through kerasish.ops)")
        return name
    if isinstance(identifier, str):
        name = identifier.lower()
        name = ALIASES.get(name, name)
        if name in ALL:
            return name
    raise ValueError(f"Unknown activation: {identifier!r}. Valid activations: "
                     f"{sorted(ALL + tuple(ALIASES))}")


def serialize(name):
    return name


def alpha(name):
    return ALPHA.get(name, 0.0)


def _function(name):
    def apply(x):
        if getattr(x, "_keras_history", None) is not None:  # symbolic, inside call()
            from kerasish.ops.activations_graph import activation

            return activation(x, name, alpha(name))
        try:
            y = np.array(x, dtype=np.float32, order="C")  # a copy, computed in place
        except (TypeError, ValueError) as exc:
            raise TypeError(f"activations.{name}: expected numeric array-like input; "
                            f"received {type(x).__name__} ({exc})") from None
        ops.activation_forward(y, y, kind=name, alpha=alpha(name))
        return y

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = (f"Keras's {name} activation of a NumPy array, in float32 "
                     "(softmax, log_softmax: last axis).")
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
silu = _function("silu")
swish = silu
selu = _function("selu")
relu6 = _function("relu6")
hard_sigmoid = _function("hard_sigmoid")
hard_silu = _function("hard_silu")
hard_swish = hard_silu
mish = _function("mish")
exponential = _function("exponential")
softsign = _function("softsign")
log_softmax = _function("log_softmax")
