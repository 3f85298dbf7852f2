"""Dense (fully connected) ops: a general matmul, and the Dense layer's forward/backward.

Shapes: N = batch, F_in = input features, F_out = output features. `matmul` is the
GEMM every other op builds on (conv2d's im2col products): a tiled shared-memory
kernel on CUDA, BLAS on the CPU. Parameter gradients (dw, db) accumulate (+=); the
input gradient dx is overwritten.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["matmul", "dense_forward", "dense_backward"]
FAMILY = "dense"

# Activations the dense epilogue can fuse (a subset of ops.activation's kinds).
DENSE_ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """c = alpha * op(a) @ op(b) + beta * c, with op(t) = t.T when trans_t.

    With beta == 0 the old contents of c are never read (NaN in c does not leak).
    c must not overlap a or b.

    Args:
        c: (M, N) float32, output (read too when beta != 0).
        a: (M, K) float32, or (K, M) when trans_a.
        b: (K, N) float32, or (N, K) when trans_b.
        trans_a, trans_b: use the transpose of a / b.
        alpha, beta: scalars (cast to float32).
    """
    op = "matmul"
    rows, cols = _check.array(op, "a", a, ndim=2)
    m, k = (cols, rows) if trans_a else (rows, cols)
    b_shape = _check.array(op, "b", b, shape=(None, k) if trans_b else (k, None))
    n = b_shape[0] if trans_b else b_shape[1]
    _check.array(op, "c", c, shape=(m, n))
    impl(op, FAMILY, c=c, a=a, b=b)(
        c, a, b, trans_a=bool(trans_a), trans_b=bool(trans_b),
        alpha=np.float32(alpha), beta=np.float32(beta),
    )


def dense_forward(y, x, w, b=None, *, activation="linear"):
    """y = activation(x @ w + b), bias and activation fused into the GEMM epilogue.

    Args:
        y: (N, F_out) float32, output (may not overlap x or w).
        x: (N, F_in) float32.
        w: (F_in, F_out) float32, the kernel.
        b: (F_out,) float32 bias, or None.
        activation: one of "linear", "relu", "sigmoid", "tanh".
    """
    op = "dense_forward"
    n, f_in = _check.array(op, "x", x, ndim=2)
    f_out = _check.array(op, "w", w, shape=(f_in, None))[1]
    _check.array(op, "y", y, shape=(n, f_out))
    if b is not None:
        _check.array(op, "b", b, shape=(f_out,))
    _check.choice(op, "activation", activation, DENSE_ACTIVATIONS)
    impl(op, FAMILY, y=y, x=x, w=w, b=b)(y, x, w, b, activation=activation)


def dense_backward(dx, dw, db, dy, x, w):
    """Gradients of y = x @ w + b given dy, the gradient wrt the pre-activation.

    Args:
        dx: (N, F_in) float32, overwritten with dy @ w.T; None to skip.
        dw: (F_in, F_out) float32, accumulates x.T @ dy.
        db: (F_out,) float32, accumulates the column sums of dy; None to skip.
        dy: (N, F_out) float32.
        x: (N, F_in) float32, the forward input.
        w: (F_in, F_out) float32, the kernel.
    """
    op = "dense_backward"
    n, f_in = _check.array(op, "x", x, ndim=2)
    f_out = _check.array(op, "w", w, shape=(f_in, None))[1]
    _check.array(op, "dy", dy, shape=(n, f_out))
    _check.array(op, "dw", dw, shape=(f_in, f_out))
    if dx is not None:
        _check.array(op, "dx", dx, shape=(n, f_in))
    if db is not None:
        _check.array(op, "db", db, shape=(f_out,))
    impl(op, FAMILY, dx=dx, dw=dw, db=db, dy=dy, x=x, w=w)(dx, dw, db, dy, x, w)
