"""Dense (fully connected) ops: a general matmul, and the Dense layer's forward/backward.

Shapes: N = batch, F_in = input features, F_out = output features. `matmul` is the
GEMM every other op builds on (conv2d's im2col products): a tiled shared-memory
kernel on CUDA, BLAS on the CPU. Parameter gradients (dw, db) accumulate (+=); the
input gradient dx is overwritten.

Deterministic on CUDA: a GEMM with a small output and a long K (weight gradients)
splits K over blocks that store partial products in a workspace; the last block of
each output tile adds them in split order (no second launch, no float atomics). The
bias gradient is an extra output row of the weight-gradient GEMM. The
optional `workspace` (1-D float32, sized by `matmul_workspace_shape` /
`dense_backward_workspace_shape`) holds them; when omitted the CUDA path uses a
process-wide scratch buffer allocated on first use. The CPU twins ignore it.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl


__all__ = ["matmul", "matmul_workspace_shape", "dense_forward", "dense_backward",
           "dense_backward_workspace_shape", "weight_grad_workspace_shape"]
FAMILY = "dense"

# Activations the dense epilogue can fuse (a subset of ops.activation's kinds).
DENSE_ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")

# CUDA GEMM tiles: name -> (BM, BN, BK, TM, TN); both use 256 threads per block.
TILES = {"t64": (64, 64, 16, 4, 4), "t128": (128, 128, 8, 8, 8)}
# Split-K heuristic: aim for TARGET_BLOCKS blocks (2 per SM on a 132-SM H100/H200).
TARGET_BLOCKS = 256
SPLIT_MIN_K = 512
MAX_SPLITS = 64


def _ceil_div(a, b):
    return (a + b - 1) // b


def pick_tile(m, n):
    """128x128 tiles once they still fill a large GPU (>= ~one block per SM), else 64x64."""
    return "t128" if _ceil_div(m, 128) * _ceil_div(n, 128) >= 128 else "t64"


def pick_splits(blocks, k):
    """Split-K factor: enough blocks to fill a large GPU, each split walking >= SPLIT_MIN_K.

    Pays off for small outputs with a long K, e.g. conv weight gradients
    (KH*KW*C x F outputs, K = batch * output pixels).
    """
    if blocks >= TARGET_BLOCKS:
        return 1
    return max(1, min(_ceil_div(TARGET_BLOCKS, blocks), k // SPLIT_MIN_K, MAX_SPLITS))


def split_k(m, n, k, tile=None):
    """How many K slices the CUDA GEMM of an (m, n) output over k uses (1: no split)."""
    bm, bn = TILES[tile or pick_tile(m, n)][:2]
    return pick_splits(_ceil_div(m, bm) * _ceil_div(n, bn), k)


def matmul_workspace_shape(m, n, k):
    """(S,) float32 for matmul of an (m, n) output over k: the split-K partials
    (splits * m * n, or 1 when K is not split)."""
    s = split_k(m, n, k)
    return (s * m * n if s > 1 else 1,)


def weight_grad_workspace_shape(m, n, k):
    """(S,) float32 for a weight-gradient GEMM of an (m, n) dw over k that also
    computes db (one extra output row): its split-K partials, or (1,) unsplit."""
    s = split_k(m + 1, n, k)
    return (s * (m + 1) * n if s > 1 else 1,)


def dense_backward_workspace_shape(x_shape, w_shape):
    """(S,) float32 for dense_backward: the split-K partials of dw with db's row."""
    n, f_in = x_shape
    f_out = w_shape[1]
    return weight_grad_workspace_shape(f_in, f_out, n)


def _workspace(op, workspace):
    if workspace is not None:
        _check.array(op, "workspace", workspace, ndim=1)
    return workspace


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, workspace=None):
    """c = alpha * op(a) @ op(b) + beta * c, with op(t) = t.T when trans_t.

    With beta == 0 the old contents of c are never read (NaN in c does not leak).
    c must not overlap a or b.

    Args:
        c: (M, N) float32, output (read too when beta != 0).
        a: (M, K) float32, or (K, M) when trans_a.
        b: (K, N) float32, or (N, K) when trans_b.
        trans_a, trans_b: use the transpose of a / b.
        alpha, beta: scalars (cast to float32).
        workspace: optional (S,) float32 split-K scratch, S from matmul_workspace_shape
            (a smaller one just splits K less).
    """
    op = "matmul"
    rows, cols = _check.array(op, "a", a, ndim=2)
    m, k = (cols, rows) if trans_a else (rows, cols)
    b_shape = _check.array(op, "b", b, shape=(None, k) if trans_b else (k, None))
    n = b_shape[0] if trans_b else b_shape[1]
    _check.array(op, "c", c, shape=(m, n))
    ws = _workspace(op, workspace)
    impl(op, FAMILY, c=c, a=a, b=b, workspace=ws)(
        c, a, b, trans_a=bool(trans_a), trans_b=bool(trans_b),
        alpha=np.float32(alpha), beta=np.float32(beta), workspace=ws,
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


def dense_backward(dx, dw, db, dy, x, w, workspace=None, *, activation="linear", y=None):
    """Gradients of y = activation(x @ w + b) given dy.

    With activation "linear", dy is the gradient wrt x @ w + b. With "relu", "sigmoid"
    or "tanh", dy is the gradient wrt the OUTPUT y (pass y, the forward output): the
    activation's derivative f'(y) is applied as dy is read (fused into the CUDA GEMMs;
    the CPU twin masks into a scratch copy). dy is never modified.

    Args:
        dx: (N, F_in) float32, overwritten with dy @ w.T; None to skip.
        dw: (F_in, F_out) float32, accumulates x.T @ dy.
        db: (F_out,) float32, accumulates the column sums of dy; None to skip.
        dy: (N, F_out) float32.
        x: (N, F_in) float32, the forward input.
        w: (F_in, F_out) float32, the kernel.
        workspace: optional (S,) float32 scratch, S from dense_backward_workspace_shape.
        activation: "linear", "relu", "sigmoid" or "tanh": the forward's activation.
        y: (N, F_out) float32, the forward output; required unless activation is linear.
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
    _check.choice(op, "activation", activation, DENSE_ACTIVATIONS)
    if activation != "linear":
        if y is None:
            raise ValueError(f"{op}: expected y (the forward output, shape {(n, f_out)}) "
                             f"with activation={activation!r}; received y=None")
        _check.array(op, "y", y, shape=(n, f_out))
    else:
        y = None
    ws = _workspace(op, workspace)
    impl(op, FAMILY, dx=dx, dw=dw, db=db, dy=dy, x=x, w=w, workspace=ws, y=y)(
        dx, dw, db, dy, x, w, ws, activation=activation, y=y)
