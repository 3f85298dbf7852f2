"""CPU twins of kernels_numba.ops.dense (validated arguments only).

GEMMs go to NumPy's BLAS (np.matmul with out=, transposed operands as views, which
BLAS takes as transpose flags). NumPy has no accumulating GEMM, so beta != 0
computes the product into a per-thread scratch buffer that is kept and reused:
no allocation once it has grown to the largest product (a second BLAS library,
e.g. SciPy's, would fight NumPy's for the cores). Bias + activation run as one
njit pass after the product (parallel over rows for large outputs).
"""

import threading

import numba
import numpy as np

from kernels_numba.cpu.activation import PARALLEL_MIN_SIZE, act_forward_scalar
from kernels_numba.ops.activation import KIND_CODES

_local = threading.local()
_NO_BIAS = np.zeros(1, np.float32)


def _scratch(shape):
    """A float32 view of `shape` into this thread's reusable scratch (grows, never shrinks)."""
    size = int(np.prod(shape))
    buf = getattr(_local, "buf", None)
    if buf is None or buf.size < size:
        buf = _local.buf = np.empty(max(size, 1), np.float32)
    return buf[:size].reshape(shape)


@numba.njit(cache=True)
def _bias_activation_rows(y, b, has_bias, code, r0, r1):
    for r in range(r0, r1):
        for j in range(y.shape[1]):
            v = y[r, j]
            if has_bias:
                v += b[j]
            y[r, j] = act_forward_scalar(v, code, np.float32(0.0))


@numba.njit(cache=True)
def _bias_activation_serial(y, b, has_bias, code):
    _bias_activation_rows(y, b, has_bias, code, 0, y.shape[0])


@numba.njit(parallel=True, cache=True)
def _bias_activation_parallel(y, b, has_bias, code):
    rows = y.shape[0]
    chunk = 8
    for c in numba.prange((rows + chunk - 1) // chunk):
        _bias_activation_rows(y, b, has_bias, code, c * chunk, min(rows, (c + 1) * chunk))


@numba.njit(cache=True)
def _add_column_sums(db, dy):
    # Rows streamed in order (contiguous reads); float32 partial sums per column.
    acc = np.zeros(dy.shape[1], np.float32)
    for r in range(dy.shape[0]):
        for j in range(dy.shape[1]):
            acc[j] += dy[r, j]
    for j in range(dy.shape[1]):
        db[j] += acc[j]


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    if c.size == 0:
        return
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    if beta == 0:
        np.matmul(op_a, op_b, out=c)  # BLAS with beta=0: old c (even NaN) is never read
        if alpha != 1:
            c *= alpha
        return
    prod = _scratch(c.shape)
    np.matmul(op_a, op_b, out=prod)
    if alpha != 1:
        prod *= alpha
    if beta != 1:
        c *= beta
    c += prod


def dense_forward(y, x, w, b=None, *, activation="linear"):
    np.matmul(x, w, out=y)
    code = KIND_CODES[activation]
    if (b is not None or code != KIND_CODES["linear"]) and y.size:
        bias = _NO_BIAS if b is None else b
        big = y.size >= PARALLEL_MIN_SIZE and y.shape[0] > 8
        (_bias_activation_parallel if big else _bias_activation_serial)(
            y, bias, b is not None, code)


def dense_backward(dx, dw, db, dy, x, w):
    if dx is not None:
        np.matmul(dy, w.T, out=dx)
    matmul(dw, x, dy, trans_a=True, beta=1.0)
    if db is not None and dy.size:
        _add_column_sums(db, dy)
