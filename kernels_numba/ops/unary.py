"""Unary elementwise math ops (kerasish.ops' sqrt, exp, log, ...): y = f(x), dx = dy * f'(x).

x, y, dx, dy: float32, one shape (any), C-contiguous; y may be x, dx may be dy.
Activations with a layer (relu, sigmoid, tanh, elu, gelu, ...) live in ops.activation;
this family holds the rest. `alpha`, `beta` are the kind's scalars: clip's bounds.
NaN propagates as IEEE says (f(NaN) is NaN, f'(NaN) is NaN, sign(NaN) is NaN); the
integer casts (trunc, nonzero) and sign have zero gradients.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["unary_forward", "unary_backward", "UNARY_KINDS"]
FAMILY = "unary"

UNARY_CODES = {
    "negative": 0, "square": 1, "sqrt": 2, "exp": 3, "log": 4, "log1p": 5, "abs": 6,
    "sign": 7, "clip": 8, "silu": 9, "gelu_tanh": 10, "trunc": 11, "nonzero": 12,
    "reciprocal": 13, "expm1": 14,
}
UNARY_KINDS = tuple(UNARY_CODES)


def _code(op, kind):
    code = UNARY_CODES.get(kind)
    if code is None:
        raise ValueError(f"{op}: expected kind in {list(UNARY_KINDS)}; received {kind!r}")
    return code


def unary_forward(y, x, *, kind, alpha=0.0, beta=0.0):
    """y = f(x) for `kind` (clip: alpha = min, beta = max).

    Args:
        y: float32, x's shape (may be x).
        x: float32, any shape.
    """
    op = "unary_forward"
    code = _code(op, kind)
    shape = _check.array(op, "x", x)
    _check.array(op, "y", y, shape=shape)
    impl(op, FAMILY, y=y, x=x)(y, x, code, np.float32(alpha), np.float32(beta))


def unary_backward(dx, dy, x, *, kind, alpha=0.0, beta=0.0):
    """dx = dy * f'(x), overwritten.

    Args:
        dx: float32, dy's shape (may be dy).
        dy: float32, gradient wrt y.
        x: float32, the forward input.
    """
    op = "unary_backward"
    code = _code(op, kind)
    shape = _check.array(op, "dy", dy)
    _check.array(op, "x", x, shape=shape)
    _check.array(op, "dx", dx, shape=shape)
    impl(op, FAMILY, dx=dx, dy=dy, x=x)(dx, dy, x, code, np.float32(alpha), np.float32(beta))
