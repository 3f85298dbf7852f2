"""Activation names -> kernels_numba activation kinds.

Layers store the Keras name; the forward/backward work is kernels_numba's
`activation_forward`/`activation_backward` (or a fused GEMM/conv epilogue).
"""

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
