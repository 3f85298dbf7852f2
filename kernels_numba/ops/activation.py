"""Activation ops: elementwise activations and the row-wise softmax, forward and backward.

x, y, dx, dy: float32, any shape, all the same shape, C-contiguous. Elementwise kinds
treat the buffer as flat; softmax and log_softmax work on rows of the last axis.
The formulas are Keras 3's (torch backend): silu x*sigmoid(x), selu with torch's
alpha/scale, relu6 min(max(x,0),6), hard_sigmoid relu6(x+3)/6, hard_silu
x*hard_sigmoid(x), mish x*tanh(softplus(x)), exponential exp(x), softsign x/(|x|+1). Forward may run in
place (y is x), backward too (dx is dy). Activation gradients overwrite (=).

`alpha` is the kind's hyperparameter: the negative slope of leaky_relu and the scale
of elu (callers pass Keras's defaults, 0.2 and 1.0); the other kinds ignore it.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["activation_forward", "activation_backward"]
FAMILY = "activation"

# kind -> integer code shared by the CPU twin and the CUDA kernels.
KIND_CODES = {
    "linear": 0, "relu": 1, "sigmoid": 2, "tanh": 3, "leaky_relu": 4,
    "elu": 5, "gelu": 6, "softplus": 7, "softmax": 8,
    "silu": 9, "selu": 10, "relu6": 11, "hard_sigmoid": 12, "hard_silu": 13, "mish": 14,
    "exponential": 15, "softsign": 16, "log_softmax": 17,
}
# Kinds computed over rows of the last axis (the others are elementwise).
ROW_KINDS = ("softmax", "log_softmax")
ACTIVATION_KINDS = tuple(KIND_CODES)
# Backward reads y for these kinds (x may be None), x for the others (y may be None).
USES_Y = ("relu", "sigmoid", "tanh", "softmax", "log_softmax")
USES_X = ("leaky_relu", "elu", "gelu", "softplus", "silu", "selu", "relu6", "hard_sigmoid",
          "hard_silu", "mish", "exponential", "softsign")


def _softmax_needs_rows(op, name, kind, shape):
    if kind in ROW_KINDS and len(shape) == 0:
        raise ValueError(f"{op}: expected {name} with at least 1 dimension for {kind}; "
                         "received shape ()")


def activation_forward(y, x, *, kind, alpha=0.0):
    """y = f(x) for activation `kind`.

    Args:
        y: float32, same shape as x, output (may be x).
        x: float32, any shape (softmax, log_softmax: at least 1-D, rows over the last axis).
        kind: one of ACTIVATION_KINDS.
        alpha: leaky_relu negative slope / elu scale.
    """
    op = "activation_forward"
    _check.choice(op, "kind", kind, ACTIVATION_KINDS)
    shape = _check.array(op, "x", x)
    _check.array(op, "y", y, shape=shape)
    _softmax_needs_rows(op, "x", kind, shape)
    impl(op, FAMILY, y=y, x=x)(y, x, kind=kind, alpha=np.float32(alpha))


def activation_backward(dx, dy, x, y, *, kind, alpha=0.0):
    """dx = dy * f'(x) (softmax: dy through the row Jacobian).

    Args:
        dx: float32, same shape as dy, output (may be dy).
        dy: float32, any shape, gradient wrt the activation's output.
        x: float32 forward input; needed by the kinds in USES_X, else may be None.
        y: float32 forward output; needed by the kinds in USES_Y, else may be None.
        kind: one of ACTIVATION_KINDS.
        alpha: leaky_relu negative slope / elu scale.
    """
    op = "activation_backward"
    _check.choice(op, "kind", kind, ACTIVATION_KINDS)
    shape = _check.array(op, "dy", dy)
    _check.array(op, "dx", dx, shape=shape)
    _softmax_needs_rows(op, "dy", kind, shape)
    for name, a, needed in (("x", x, USES_X), ("y", y, USES_Y)):
        if a is not None:
            _check.array(op, name, a, shape=shape)
        elif kind in needed:
            raise ValueError(f"{op}: kind {kind!r} needs argument {name}; received None")
    impl(op, FAMILY, dx=dx, dy=dy, x=x, y=y)(dx, dy, x, y, kind=kind, alpha=np.float32(alpha))
