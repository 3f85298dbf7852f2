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


class CustomActivation(str):
    """A user function given as activation=: compares as the kind "custom" (no kernel
    takes it, so a layer that can't trace it fails loudly) and carries the function;
    layers/custom_activation.py runs it through kerasish.ops after the layer's kernels."""

    def __new__(cls, fn):
        self = super().__new__(cls, "custom")
        self.fn = fn
        return self

    def __reduce__(self):
        return CustomActivation, (self.fn,)

    def __deepcopy__(self, memo):
        return self

    def config(self, layer_name):
        """Keras 3's form: {"module": "builtins", "class_name": "function", ...}."""
        from kerasish.saving import serialization

        name = getattr(self.fn, "__name__", "")
        if name == "<lambda>" or not name.isidentifier():
            raise ValueError(
                f"Layer '{layer_name}': its activation {self.fn!r} is a lambda, which "
                "cannot be saved in a config; use a named function (registered with "
                "keras.saving.register_keras_serializable to load without custom_objects),"
                " or save the weights only (save_weights)")
        return {"module": "builtins", "class_name": "function",
                "config": serialization.get_registered_name(self.fn),
                "registered_name": "function"}


def _custom_function(name):
    from kerasish.saving import serialization

    fn = serialization.get_registered_object(name)
    if fn is None or not callable(fn):
        raise ValueError(
            f"Unknown activation function '{name}': pass it in custom_objects, or register "
            f"it with keras.saving.register_keras_serializable. Built-in activations: "
            f"{sorted(ALL + tuple(ALIASES))}")
    return get(fn)


def get(identifier):
    """Canonical activation name from None, a name, or a function with a Keras name; any
    other callable becomes a CustomActivation (run through kerasish.ops)."""
    if identifier is None:
        return "linear"
    if isinstance(identifier, CustomActivation):
        return identifier
    if isinstance(identifier, dict):  # a serialized function: {"class_name": "function", ...}
        identifier = identifier.get("config", identifier.get("class_name"))
        if isinstance(identifier, str) and ALIASES.get(identifier.lower(),
                                                       identifier.lower()) not in ALL:
            return _custom_function(identifier)
    if callable(identifier):
        name = getattr(identifier, "__name__", None)
        name = ALIASES.get(name, name)
        if name in ALL and _is_builtin(identifier):
            return name
        return CustomActivation(identifier)
    if isinstance(identifier, str):
        name = identifier.lower()
        name = ALIASES.get(name, name)
        if name in ALL:
            return name
        from kerasish.saving import serialization

        if serialization.get_registered_object(identifier) is not None:
            return _custom_function(identifier)
    raise ValueError(f"Unknown activation: {identifier!r}. Valid activations: "
                     f"{sorted(ALL + tuple(ALIASES))}")


def _is_builtin(fn):
    """kerasish's (or Keras-named ops') own activation functions, not a user function
    that happens to be called relu."""
    module = getattr(fn, "__module__", "") or ""
    return module.startswith(("kerasish", "keras", "numpy")) or fn is globals().get(
        getattr(fn, "__name__", ""))


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
