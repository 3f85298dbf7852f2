"""CPU twins of kernels_numba.ops.dense (validated arguments only).

GEMMs go through kernels_numba.cpu.gemm (NumPy's BLAS on output blocks, in
parallel; transposed operands are views, which BLAS takes as transpose flags), except
small ones (below gemm.SPLIT_MIN_MACS, which gemm runs as one BLAS call on the calling
thread anyway): np.matmul makes that same sgemm call with ~12 us less Python around it
(gemm's ctypes pointers, thread count and 14-argument ctypes call; the MLP's step has
five such products). Bias gradients are a GEMM with a row of ones (nothing to
compile), or NumPy's column sum when dy is small. Bias + activation
run as one njit pass after the product (split over rows across
threads by kernels_numba.cpu._parallel for large outputs; the same serial function
either way, compiled once per kind used, relu and linear sharing one; that part also
computes the ReLU mask dy * relu'(y) of the backward ops, masked_grad, and with a
bias gradient that mask's column sums in the same pass). The CUDA
split-K/bias workspace is accepted and ignored (the CPU GEMM's K-split partial products
are added in a fixed order already). Each helper has a `_calls` form returning its work as
Bound calls (kernels_numba.cpu._parallel), which dense_forward/backward chain: a replayed
CPU launch plan repeats the chain with nothing decided again (the reference MLP's step
0.76 -> 0.61 ms).
"""

import numba
import numpy as np

from kernels_numba.cpu._parallel import (
    Bound,
    bound_op,
    chain,
    f32_1d,
    f32_2d,
    f32_run,
    lazy_part,
    pack,
    part_call,
    run_all,
)
from kernels_numba.cpu.activation import (
    PARALLEL_MIN_SIZE,
    _forward_inline,
    _relu,
    _relu_grad,
    activation_backward,
)
from kernels_numba.cpu.gemm import SPLIT_MIN_MACS, _thread_buffer, gemm_calls, product_scratch
from kernels_numba.ops.activation import KIND_CODES

_NO_BIAS = np.zeros(1, np.float32)
_ZERO = np.float32(0.0)
RELU = KIND_CODES["relu"]
LINEAR = KIND_CODES["linear"]


def _bias_activation_part_for(code):
    """The bias + activation part for the kind `code`, a constant of its code: relu and
    linear (every dense/conv2d layer of the reference CNN) share one part holding only
    their own selects; any other kind gets its own part with that kind's branch of the
    activation switch inlined (a run-time code compiled the whole 16-kind switch,
    0.4-0.6 s, into every model)."""
    if code == RELU or code == LINEAR:
        def part(args, p, parts):
            # (y (2-D), b (1-D), has_bias << 8 | code) or, for the ReLU mask of a
            # gradient, (out (2-D), any 1-D, MASK, dy (2-D), y (2-D)): entries 6-11 are
            # read only then
            a = numba.carray(args, 12)
            y = f32_2d(a, 0)
            rows = y.shape[0]
            r0, r1 = rows * p // parts, rows * (p + 1) // parts
            if a[5] >> 16 != 0:  # out = dy * relu'(y) (masked_grad)
                dy, s = f32_2d(a, 6), f32_2d(a, 9)
                if a[5] >> 17 != 0:  # and its column sums, into this part's row of a[3]
                    # (a view from 0: indexed as sums[p * f + j], the run-time offset kept
                    # a negative-index check in the loop, which then did not vectorize:
                    # 64 x 256 floats 11.6 -> 4.2 us)
                    f = y.shape[1]
                    sums = f32_run(a, 3, p * f, f)
                    for j in range(f):
                        sums[j] = _ZERO
                    for r in range(r0, r1):
                        row, g, v = y[r], dy[r], s[r]
                        for j in range(f):
                            gj = _relu_grad(g[j], v[j])
                            row[j] = gj
                            sums[j] += gj
                    return
                for r in range(r0, r1):
                    row, g, v = y[r], dy[r], s[r]
                    for j in range(row.size):
                        row[j] = _relu_grad(g[j], v[j])
                return
            b = f32_1d(a, 3)
            has_bias, relu = a[5] >> 8 != 0, a[5] & 255 == RELU
            for r in range(r0, r1):
                row = y[r]
                if relu and has_bias:  # the common case: a loop LLVM vectorizes
                    for j in range(row.size):
                        row[j] = _relu(row[j] + b[j])  # NaN passes through
                elif relu:
                    for j in range(row.size):
                        row[j] = _relu(row[j])
                else:  # linear with a bias (linear without one never gets here)
                    for j in range(row.size):
                        row[j] += b[j]
        name = "_bias_relu_linear_part"
    else:
        def part(args, p, parts):
            a = numba.carray(args, 6)
            y, b = f32_2d(a, 0), f32_1d(a, 3)
            has_bias = a[5] >> 8 != 0
            rows = y.shape[0]
            for r in range(rows * p // parts, rows * (p + 1) // parts):
                row = y[r]
                for j in range(row.size):
                    v = row[j]
                    if has_bias:
                        v += b[j]
                    row[j] = _forward_inline(v, code, _ZERO)
        name = "_bias_{}_part".format({v: k for k, v in KIND_CODES.items()}[code])
    part.__name__ = part.__qualname__ = name  # one cache file per part (numba names by qualname)
    return lazy_part(part)


_PARTS = {}


def _bias_activation_part(code):
    key = LINEAR if code == RELU else code  # relu and linear share one part
    if key not in _PARTS:
        _PARTS[key] = _bias_activation_part_for(code)
    return _PARTS[key]


_ONES = [np.ones(0, np.float32)]
# Below this many elements NumPy's column sum beats the ones-row GEMM's call overhead.
SMALL_SIZE = 1 << 15


def product(c, a, b, accumulate=False):
    """c = a @ b, or c += a @ b (a, b may be transposed views): gemm, or for a small
    product np.matmul (the same single-threaded sgemm, fewer microseconds around it)."""
    run_all(product_calls(c, a, b, accumulate))


def product_calls(c, a, b, accumulate=False):
    """product's work as Bound calls (the forms below: see kernels_numba.cpu._parallel)."""
    if c.size * a.shape[1] >= SPLIT_MIN_MACS or not _blasable(c, a, b):
        return gemm_calls(c, a, b, accumulate=accumulate)
    if not accumulate:
        return [Bound(_matmul, (a, b, c))]  # the old c (even NaN) is never read
    # not product_scratch: a or b may be masked_grad's result in it
    prod = _thread_buffer("small_product", c.size).reshape(c.shape)
    return [Bound(_matmul, (a, b, prod)), Bound(np.add, (c, prod, c))]


def _matmul(a, b, out):
    np.matmul(a, b, out=out)


def _blasable(c, a, b):
    # np.matmul hands BLAS only unit-stride operands (else it loops in C: gemm's case)
    return (c.flags.c_contiguous and (a.flags.c_contiguous or a.flags.f_contiguous)
            and (b.flags.c_contiguous or b.flags.f_contiguous))


def add_column_sums(db, dy):
    """db += the column sums of dy (M, F): one (1, M) @ (M, F) GEMM with a row of ones,
    so no njit loop to compile (the GEMM's K-split partials add in a fixed order)."""
    run_all(column_sums_calls(db, dy))


def column_sums_calls(db, dy):
    m = dy.shape[0]
    if m == 0:
        return []
    if dy.size < SMALL_SIZE:  # rows added in order: deterministic
        return [Bound(_add_row_sum, (db, dy))]
    ones = _ONES[0]
    if ones.size < m:  # grows only; read-only, so threads may share it
        ones = _ONES[0] = np.ones(max(m, 2 * ones.size), np.float32)
    return gemm_calls(db.reshape(1, db.size), ones[:m].reshape(1, m), dy, accumulate=True)


def _add_row_sum(db, dy):
    db += np.add.reduce(dy, axis=0)


def bias_activation(y, b, code):
    """y = act(y + b) in place on a 2-D y (the GEMM epilogue of dense and conv2d)."""
    run_all(bias_activation_calls(y, b, code))


def bias_activation_calls(y, b, code):
    if code == LINEAR and b is not None and y.size < SMALL_SIZE:
        return [Bound(np.add, (y, b, y))]  # the part's row[j] += b[j], without its ~8 us of call
    if (b is not None or code != LINEAR) and y.size:
        bias = _NO_BIAS if b is None else b
        args = pack(y, bias, (int(b is not None) << 8) | code)
        parts = numba.get_num_threads() if y.size >= PARALLEL_MIN_SIZE and y.shape[0] > 8 else 1
        return [part_call(_bias_activation_part(code), args, parts, (y, bias))]
    return []


def masked_grad(dy, y, activation):
    """dy * f'(y) in this thread's product scratch (dy itself is left unchanged)."""
    out, calls = masked_grad_calls(dy, y, activation)
    run_all(calls)
    return out


def masked_grad_calls(dy, y, activation):
    """(the buffer masked_grad returns, the Bound calls that fill it)"""
    if activation == "linear" or dy.size == 0:
        return dy, []
    out = product_scratch(dy.shape)
    if activation == "relu":  # in the bias/ReLU part every dense/conv model compiles:
        return out, _relu_mask_calls(out, dy, y)  # +0.15 s there, against 0.3 s for its own
    return out, [Bound(_activation_grad, (out, dy, y, activation))]


def _activation_grad(out, dy, y, activation):
    activation_backward(out, dy, None, y, kind=activation)


_MASK, _SUMS = 1 << 16, 1 << 17


def relu_mask_and_sums_calls(dy, y, db):
    """(out, calls): out = dy * relu'(y) as masked_grad gives, and db += out's column sums,
    in one pass over dy's (M, F) rows (each part sums its rows; the parts add in order).
    The separate column sum read the masked dy again: 0.2 of 0.3 ms for the reference
    CNN's 7744 x 64 conv gradient (0.4-0.5 ms inside a step)."""
    f = dy.shape[-1]
    dy2, y2 = dy.reshape(-1, f), y.reshape(-1, f)
    out, rows = product_scratch(dy2.shape), dy2.shape[0]
    parts = min(numba.get_num_threads(), rows) if dy2.size >= PARALLEL_MIN_SIZE else 1
    partials = _thread_buffer("mask_sums", parts * f)  # 1-D: packed where the bias is
    args = pack(out, partials, _MASK | _SUMS, dy2, y2)
    return out, [part_call(_bias_activation_part(RELU), args, parts, (out, partials, dy2, y2)),
                 Bound(_add_part_sums, (db, partials.reshape(parts, f)))]


def _add_part_sums(db, partials):
    db += partials[0] if partials.shape[0] == 1 else np.add.reduce(partials, axis=0)


def _relu_mask_calls(out, dy, y):
    """out = dy * relu'(y) (_relu_grad: dy where y > 0, else y - y) on flat views cut
    into rows of up to 4096 (elementwise: any rows will do; long ones vectorize best)."""
    n, cols = dy.size, dy.shape[-1]
    while cols * 2 <= 4096 and n % (cols * 2) == 0:
        cols *= 2
    shape = (n // cols, cols)
    args = pack(out.reshape(shape), _NO_BIAS, _MASK, dy.reshape(shape), y.reshape(shape))
    parts = min(numba.get_num_threads(), shape[0]) if n >= PARALLEL_MIN_SIZE and shape[0] > 1 \
        else 1
    return [part_call(_bias_activation_part(RELU), args, parts, (out, dy, y))]


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, workspace=None):
    if c.size == 0:
        return
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    if beta == 0:
        product(c, op_a, op_b)  # the old c (even NaN) is never read
        if alpha != 1:
            c *= alpha
        return
    if alpha == 1 and beta == 1:
        product(c, op_a, op_b, accumulate=True)
        return
    prod = product_scratch(c.shape)
    product(prod, op_a, op_b)
    prod *= alpha
    c *= beta
    c += prod


@bound_op
def dense_forward(y, x, w, b=None, *, activation="linear"):
    return chain(product_calls(y, x, w) + bias_activation_calls(y, b, KIND_CODES[activation]))


@bound_op
def dense_backward(dx, dw, db, dy, x, w, workspace=None, *, activation="linear", y=None):
    if activation == "relu" and db is not None and dy.size:  # db in the mask's pass
        dy, calls = relu_mask_and_sums_calls(dy, y, db)
        db = None
    else:
        dy, calls = masked_grad_calls(dy, y, activation)
    if dx is not None:
        calls += product_calls(dx, dy, w.T)
    calls += product_calls(dw, x.T, dy, accumulate=True)
    if db is not None and dy.size:
        calls += column_sums_calls(db, dy)
    return chain(calls)
