"""CPU twins of kernels_numba.ops.dense (validated arguments only), and the CPU GEMM.

`gemm` is the one matrix product of the CPU twins (dense and conv2d use it). With
more than one numba thread it splits C into row (or column) blocks and runs them on
numba's thread pool, each block one single-threaded call of NumPy's own OpenBLAS
cblas_sgemm (found with ctypes; OpenBLAS is held at 1 thread for the call and then
restored). One thread pool for everything: OpenBLAS's own workers spin ~0.1 s after
each threaded call and took a core from the numba loops that follow (the reference
CNN step ran ~25% slower), and BLAS's beta gives dw += x.T @ dy without a scratch
product. Without that OpenBLAS (other NumPy builds), or with one numba thread, the
product is np.matmul (BLAS threads as configured) plus a reused scratch for beta.
Bias + activation run as one njit pass after the product.
"""

import ctypes
import glob
import os
import threading

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from kernels_numba.cpu.activation import bias_activation
from kernels_numba.ops.activation import KIND_CODES

# Products below this many multiply-adds run as one call on the calling thread.
PARALLEL_MIN_MACS = 1 << 20
# Reductions this many times longer than C's longer side split K instead of C.
SPLIT_K_RATIO = 8
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# -- NumPy's OpenBLAS, called from njit code ------------------------------------------

_SYMBOLS = (  # (sgemm, set threads, get threads, 64-bit integers)
    ("scipy_cblas_sgemm64_", "scipy_openblas_set_num_threads64_",
     "scipy_openblas_get_num_threads64_", True),
    ("cblas_sgemm64_", "openblas_set_num_threads64_", "openblas_get_num_threads64_", True),
    ("cblas_sgemm", "openblas_set_num_threads", "openblas_get_num_threads", False),
)


def _candidate_libraries():
    root = os.path.dirname(np.__file__)
    paths = []
    for pattern in ("../numpy.libs/*openblas*", ".dylibs/*openblas*", "../numpy.libs/*blas*.dll"):
        paths += sorted(glob.glob(os.path.join(root, pattern)))
    try:  # Linux: whatever OpenBLAS numpy has loaded (conda, system builds)
        with open("/proc/self/maps") as f:
            paths += sorted({line.split()[-1] for line in f if "openblas" in line.lower()})
    except OSError:
        pass
    return paths


def _find_blas():
    """(sgemm address, set_threads, get_threads, ilp64) for NumPy's OpenBLAS, or None."""
    if os.environ.get("KERNELS_NUMBA_CPU_GEMM", "auto") == "numpy":
        return None
    for path in _candidate_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for gemm_name, set_name, get_name, ilp64 in _SYMBOLS:
            try:
                fns = [getattr(lib, name) for name in (gemm_name, set_name, get_name)]
            except AttributeError:
                continue
            fns[2].restype = ctypes.c_int
            return ctypes.cast(fns[0], ctypes.c_void_p).value, fns[1], fns[2], ilp64
    return None


@intrinsic
def _sgemm(typingctx, addr, ilp64, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """cblas_sgemm(RowMajor, ...) through its address; pointers are int64 addresses."""
    i64 = types.int64
    sig = types.void(i64, types.boolean, i64, i64, i64, i64, i64, types.float32, i64, i64, i64,
                     i64, types.float32, i64, i64)

    def codegen(context, builder, signature, args):
        addr_v, ilp64_v, ta_v, tb_v, m_v, n_v, k_v, al, a_v, lda_v, b_v, ldb_v, be, c_v, ldc_v = args
        i32, f32, fp = ir.IntType(32), ir.FloatType(), ir.FloatType().as_pointer()
        enums = [ir.Constant(i32, _ROW_MAJOR), builder.trunc(ta_v, i32), builder.trunc(tb_v, i32)]
        ptrs = [builder.inttoptr(p, fp) for p in (a_v, b_v, c_v)]
        with builder.if_else(ilp64_v) as (wide, narrow):
            for dim_t, block in ((ir.IntType(64), wide), (i32, narrow)):
                with block:
                    fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, dim_t, dim_t, dim_t, f32,
                                                           fp, dim_t, fp, dim_t, f32, fp, dim_t])
                    fn = builder.inttoptr(addr_v, fnty.as_pointer())
                    dim = (lambda v: v) if dim_t.width == 64 else (lambda v: builder.trunc(v, i32))
                    builder.call(fn, enums + [dim(m_v), dim(n_v), dim(k_v), al, ptrs[0], dim(lda_v),
                                              ptrs[1], dim(ldb_v), be, ptrs[2], dim(ldc_v)])
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True)
def _block(addr, ilp64, out, a, b, trans_a, trans_b, alpha, beta, r0, r1, c0, c1, k0, k1):
    # out[r0:r1, c0:c1] = alpha * op(A)[r0:r1, k0:k1] @ op(B)[k0:k1, c0:c1] + beta * out[...]
    n = out.shape[1]
    lda, ldb = a.shape[1], b.shape[1]
    a_off = (k0 * lda + r0) if trans_a else (r0 * lda + k0)
    b_off = (c0 * ldb + k0) if trans_b else (k0 * ldb + c0)
    _sgemm(addr, ilp64, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS,
           r1 - r0, c1 - c0, k1 - k0, alpha, np.int64(a.ctypes.data) + 4 * a_off, lda,
           np.int64(b.ctypes.data) + 4 * b_off, ldb, beta,
           np.int64(out.ctypes.data) + 4 * (r0 * n + c0), n)


@numba.njit(cache=True)
def _gemm_serial(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta):
    k = a.shape[0] if trans_a else a.shape[1]
    _block(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, 0, c.shape[0], 0, c.shape[1],
           0, k)


@numba.njit(parallel=True, cache=True)
def _gemm_parallel(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, blocks):
    # Blocks of C's longer side: each block reads its rows (columns) of op(A) (op(B)).
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    by_rows = m >= n
    step = ((m if by_rows else n) + blocks - 1) // blocks
    for i in numba.prange(blocks):
        lo = i * step
        if by_rows and lo < m:
            _block(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, lo, min(m, lo + step),
                   0, n, 0, k)
        elif not by_rows and lo < n:
            _block(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, 0, m, lo,
                   min(n, lo + step), 0, k)


@numba.njit(parallel=True, cache=True)
def _gemm_split_k(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, part):
    # Small C, long reduction (dw = col.T @ dy): each block reduces a slice of K into
    # its own (m, n) partial, then the partials are added into C.
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    blocks = part.shape[0] + 1
    step = (k + blocks - 1) // blocks
    for i in numba.prange(blocks):
        k0, k1 = min(k, i * step), min(k, (i + 1) * step)
        if i == 0:
            _block(addr, ilp64, c, a, b, trans_a, trans_b, alpha, beta, 0, m, 0, n, k0, k1)
        else:
            out = part[i - 1]
            if k1 > k0:
                _block(addr, ilp64, out, a, b, trans_a, trans_b, alpha, np.float32(0.0),
                       0, m, 0, n, k0, k1)
            else:
                out[:] = 0.0
    for i in range(blocks - 1):
        for r in range(m):
            for j in range(n):
                c[r, j] += part[i, r, j]


_BLAS = _find_blas()
_lock = threading.Lock()  # the OpenBLAS thread setting is process-wide


def _numpy_gemm(c, a, b, trans_a, trans_b, alpha, beta):
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


def gemm(c, a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0):
    """c = alpha * op(a) @ op(b) + beta * c on C-contiguous float32 2-D arrays."""
    if c.size == 0:
        return
    k = a.shape[0] if trans_a else a.shape[1]
    threads = numba.get_num_threads()
    if _BLAS is None or threads == 1 or k == 0:
        _numpy_gemm(c, a, b, trans_a, trans_b, alpha, beta)
        return
    addr, set_threads, get_threads, ilp64 = _BLAS
    args = (addr, ilp64, c, a, b, trans_a, trans_b, np.float32(alpha), np.float32(beta))
    with _lock:
        previous = get_threads()
        if previous != 1:
            set_threads(1)
        try:
            if c.size * k < PARALLEL_MIN_MACS:
                _gemm_serial(*args)
            elif k >= SPLIT_K_RATIO * max(c.shape):
                _gemm_split_k(*args, _scratch((threads - 1, *c.shape)))
            else:
                _gemm_parallel(*args, threads)
        finally:
            if previous != 1:
                set_threads(previous)


# -- dense ----------------------------------------------------------------------------

_local = threading.local()


def _scratch(shape):
    """A float32 view of `shape` into this thread's reusable scratch (grows, never shrinks)."""
    size = int(np.prod(shape))
    buf = getattr(_local, "buf", None)
    if buf is None or buf.size < size:
        buf = _local.buf = np.empty(max(size, 1), np.float32)
    return buf[:size].reshape(shape)


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
    gemm(c, a, b, trans_a, trans_b, alpha, beta)


def dense_forward(y, x, w, b=None, *, activation="linear"):
    gemm(y, x, w)
    bias_activation(y, b, KIND_CODES[activation])


def dense_backward(dx, dw, db, dy, x, w):
    if dx is not None:
        gemm(dx, dy, w, trans_b=True)
    gemm(dw, x, dy, trans_a=True, beta=1.0)
    if db is not None and dy.size:
        _add_column_sums(db, dy)
