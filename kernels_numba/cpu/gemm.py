"""The CPU twins' GEMM: single-threaded sgemm calls on blocks of the product, run in
parallel on numba's threads. The sgemm is our register tiles on AVX-512 CPUs
(cpu/sgemm_tiles.py: 2x OpenBLAS's AVX2 kernels, which this project's machine pins),
NumPy's OpenBLAS cblas_sgemm elsewhere; both take cblas_sgemm's arguments.

Why not let BLAS thread itself: see kernels_numba/_blas.py (OpenBLAS's spinning workers
and numba's loops fought for the cores; under any other load a CNN step took 7-20x
longer). Here the product is cut into one block per thread: rows of C, columns of C
when C is wide, or, when K is long (weight gradients, and a layer's forward on a small
batch: x (64, 784) @ w (784, 256)), slices of K whose partial products are added in a
fixed order. Slicing K gives each thread a contiguous half of a row-major weight, the
half its weight gradient (rows of C) and the optimizer's update (halves of the block,
cpu/optim.py) touch on that thread: it stays in that core's cache. Each block is one
BLAS call on the operands in place (transposed views are BLAS transpose flags, no
copies), issued from numba's
threads by kernels_numba.cpu._parallel.run_parts (the one compiled parallel loop, which
calls `_split_part` by address), so all CPU parallelism uses numba's one pool (~15 us
per parallel region, against ~40 us for a Python thread handoff) and nothing spins
between calls. Every element of C is computed the same way whatever the timing: results
are reproducible.

Without a bound cblas_sgemm (KERNELS_NUMBA_BLAS=native, or not OpenBLAS) every GEMM is
one np.matmul call and the BLAS threads itself.
"""

import ctypes
import os
import threading

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from kernels_numba import _blas
from kernels_numba._blas import NO_TRANS
from kernels_numba.cpu import sgemm_tiles
from kernels_numba.cpu._parallel import (Bound, f32_bits, from_f32_bits, lazy_part, pack,
                                         part_call, run_all)

# Below this many multiply-adds one call on the caller's thread beats a parallel region.
SPLIT_MIN_MACS = 1 << 20
# K slices when K > K_SPLIT_RATIO * max(M, N). At 4 the reference MLP's forward split
# columns of C: each thread read every row of w, half of each row, and the optimizer's
# update then fetched half its w from the other core (fit epoch 0.575 -> 0.462 s at 2,
# alternating; the reference CNN's step unchanged).
K_SPLIT_RATIO = 2
ROWS, COLUMNS, REDUCTION = 0, 1, 2

_local = threading.local()


def _thread_buffer(name, size):
    """A 1-D float32 view of `size` into this thread's reusable buffer `name` (grows only)."""
    buf = getattr(_local, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(max(size, 1), np.float32)
        setattr(_local, name, buf)
    return buf[:size]


def product_scratch(shape):
    """This thread's reusable float32 scratch for a product (for callers of gemm)."""
    return _thread_buffer("product", int(np.prod(shape))).reshape(shape)


@intrinsic
def _sgemm_at(typingctx, address, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, int_marker):
    """Call the cblas_sgemm at `address` (row-major, alpha 1); BLAS ints are as wide as
    `int_marker` (int32: LP64, int64: ILP64). Taking the address as an argument keeps
    the compiled code free of pointers fixed at import, so it is cached on disk."""
    sig = types.void(address, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, int_marker)

    def codegen(context, builder, signature, args):
        i32, ptr, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
        size = ir.IntType(signature.args[-1].bitwidth)
        kinds = [i32, i32, size, size, size, ptr, size, ptr, size, f32, ptr, size]
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, size, size, size, f32, ptr,
                                               size, ptr, size, f32, ptr, size])
        values = []
        for value, ty, kind in zip(args[1:-1], signature.args[1:-1], kinds):
            target = {i32: types.int32, ptr: types.uint64, f32: types.float32}.get(
                kind, signature.args[-1])
            values.append(context.cast(builder, value, ty, target))
        order = ir.Constant(i32, _blas.ROW_MAJOR)
        one = ir.Constant(f32, 1.0)
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        builder.call(fn, [order, values[0], values[1], values[2], values[3], values[4], one,
                          *values[5:]])
        return context.get_dummy_value()

    return sig, codegen


def _make_split_part(int_marker):
    """The part for one product's block p of parts; the BLAS int width is a constant of
    it (one call site, one width: 0.5-0.9 s of compile with both widths and a call per
    case)."""
    def _split_part(args, p, parts):
        v = numba.carray(args, 15)
        address, a, b, c, partials = v[0], v[1], v[2], v[3], v[4]
        ta, tb, lda, ldb, ldc, m, n, k = v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12]
        beta, how = from_f32_bits(v[13]), v[14]
        if how == ROWS:
            r0, r1 = m * p // parts, m * (p + 1) // parts
            a += 4 * (r0 * lda if ta == NO_TRANS else r0)
            c += 4 * r0 * ldc
            m = r1 - r0
        elif how == COLUMNS:
            q0, q1 = n * p // parts, n * (p + 1) // parts
            b += 4 * (q0 if tb == NO_TRANS else q0 * ldb)
            c += 4 * q0
            n = q1 - q0
        else:
            k0, k1 = k * p // parts, k * (p + 1) // parts
            a += 4 * (k0 if ta == NO_TRANS else k0 * lda)
            b += 4 * (k0 * ldb if tb == NO_TRANS else k0)
            k = k1 - k0
            if p > 0:  # block 0 goes to C itself (with beta), the others to partials
                c, ldc, beta = partials + 4 * (p - 1) * m * n, n, np.float32(0.0)
        _sgemm_at(address, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, int_marker)

    return lazy_part(_split_part)


def _add_partials(c, partials):
    # Fixed order p = 1, 2, ... for every element: the sum does not depend on timing.
    # numpy adds (threads - 1 of them, on a small C) rather than a compiled loop.
    for p in range(partials.shape[0]):
        c += partials[p]


_SGEMM = _blas.sgemm_function()  # None: every GEMM is np.matmul (BLAS threads itself)
# Our register tiles (cpu/sgemm_tiles.py) replace the bound cblas_sgemm on AVX-512 CPUs.
TILES = _SGEMM is not None and sgemm_tiles.enabled()
if _SGEMM is not None:
    _OPENBLAS_ADDRESS = ctypes.cast(_SGEMM, ctypes.c_void_p).value
    _WIDE = int(TILES or _blas.sgemm_int_bits() == 64)
    # BLAS int width as a value (cpu/rnn_sequence.py and cpu/attention.py pass it to _sgemm_at)
    _INT_MARKER = np.int64(0) if _WIDE else np.int32(0)
    _split_part = _make_split_part(_INT_MARKER)


def sgemm_address():
    """Address of the single-threaded sgemm the CPU twins call (the tiles compile on first
    use); only where _SGEMM is not None."""
    return sgemm_tiles.sgemm.address if TILES else _OPENBLAS_ADDRESS


def sgemm_callable():
    """That sgemm as a ctypes function (cblas_sgemm's arguments)."""
    return sgemm_tiles.sgemm.function if TILES else _SGEMM


def backend():
    """What runs the CPU GEMMs, in words (the benchmarks print it)."""
    if _SGEMM is None:
        return "np.matmul (BLAS threads itself)"
    if TILES:
        return "kernels_numba's AVX-512 register tiles (cpu/sgemm_tiles.py)"
    return f"OpenBLAS sgemm ({_blas.blas_kernels() or 'its own kernel choice'})"


def _fallback(c, a, b, accumulate):
    if not accumulate:
        np.matmul(a, b, out=c)  # beta = 0: the old c (even NaN) is never read
        return
    prod = _thread_buffer("fallback", c.size).reshape(c.shape)
    np.matmul(a, b, out=prod)
    c += prod


def gemm(c, a, b, *, accumulate=False):
    """c = a @ b, or c += a @ b; a and b may be transposed views (BLAS flags, no copy)."""
    run_all(gemm_calls(c, a, b, accumulate=accumulate))


def gemm_calls(c, a, b, *, accumulate=False):
    """gemm's work on these operands as Bound calls (kernels_numba.cpu._parallel), run in
    order: what a replayed plan repeats without deciding anything again."""
    m, n = c.shape
    k = a.shape[1]
    if c.size == 0:
        return []
    op_a, op_b = _blas.operand(a), _blas.operand(b)
    if (_SGEMM is None or k == 0 or op_a is None or op_b is None or c.strides[1] != 4
            or c.strides[0] < 4 * n):
        return [Bound(_fallback, (c, a, b, accumulate))]
    threads = numba.get_num_threads()
    fixed = _fixed_choice(m, n, k, threads)
    choice = fixed
    if m * n * k >= TUNE_MIN_MACS:
        candidates = _candidates(m, n, k, threads, fixed)
        if len(candidates) > 1:
            choice = _tuned(c, a, b, accumulate, op_a, op_b, threads, fixed, candidates)
    return _calls(choice, c, a, b, accumulate, op_a, op_b, threads)


# The auto-tuner (kernels_numba/autotune.py) times these for a product of at least
# TUNE_MIN_MACS multiply-adds (below, a parallel region's ~15 us is the whole story).
# A choice is "split/sgemm": split = single (one call on the caller's thread), rows,
# columns or reduction (slices of K); sgemm = tiles or openblas (only where both exist
# with one BLAS int width, and KERNELS_NUMBA_GEMM does not pin one).
TUNE_MIN_MACS = 1 << 16


def _own_sgemm():
    return "tiles" if TILES else "openblas"


def _fixed_choice(m, n, k, threads):
    """The choice made before the tuner (and with it off)."""
    if threads < 2 or m * n * k < SPLIT_MIN_MACS:
        split = "single"
    elif k > K_SPLIT_RATIO * max(m, n):
        split = "reduction"
    else:
        split = "rows" if m >= n else "columns"
    return f"{split}/{_own_sgemm()}"


def _candidates(m, n, k, threads, fixed):
    splits = ["single"]
    if threads >= 2:
        splits += [s for s, size in (("rows", m), ("columns", n), ("reduction", k)) if size >= 2]
    names = [f"{s}/{g}" for g in sgemm_names() for s in splits]
    return names if fixed in names else [fixed]


def sgemm_names():
    """The single-threaded sgemms the tuner may choose among: ours first (the fixed one),
    then OpenBLAS where our tiles run, KERNELS_NUMBA_GEMM pins neither and both take
    64-bit ints (one compiled caller for both)."""
    names = [_own_sgemm()]
    if TILES and not os.environ.get(sgemm_tiles.MODE_VAR) and _blas.sgemm_int_bits() == 64:
        names.append("openblas")
    return names


def sgemm_address_of(name):
    """The address of sgemm `name` (one of sgemm_names())."""
    return sgemm_tiles.sgemm.address if name == "tiles" else _OPENBLAS_ADDRESS


def _tuned(c, a, b, accumulate, op_a, op_b, threads, fixed, names):
    """The recorded choice for this product, else the tuner's (timed on a scratch C), else
    `fixed`: a lookup when decided (an eager gemm comes here at every call)."""
    from kernels_numba import autotune

    key = (f"{c.shape[0]}x{c.shape[1]}x{a.shape[1]}|{'NT'[op_a[0] != NO_TRANS]}"
           f"{'NT'[op_b[0] != NO_TRANS]}|{'acc' if accumulate else 'set'}|threads{threads}")
    known = autotune.recorded("cpu.gemm", key)
    if known in names:
        return known
    if not autotune.pending("cpu.gemm", key):
        return fixed
    scratch = np.zeros(c.shape, np.float32)  # candidates never write the caller's c
    candidates = {}
    for name in names:
        calls = _calls(name, scratch, a, b, accumulate, op_a, op_b, threads)
        candidates[name] = lambda calls=calls: run_all(calls)
    return autotune.decide("cpu.gemm", key, candidates, fixed)


def _calls(choice, c, a, b, accumulate, op_a, op_b, threads):
    split, sgemm = choice.split("/")
    (ta, lda), (tb, ldb) = op_a, op_b
    m, n = c.shape
    k = a.shape[1]
    ldc, beta = c.strides[0] // 4, 1.0 if accumulate else 0.0
    a_ptr, b_ptr, c_ptr = a.ctypes.data, b.ctypes.data, c.ctypes.data
    tiles = sgemm == "tiles"
    if split == "single":
        fn = sgemm_tiles.sgemm.function if tiles else _SGEMM
        return [Bound(fn, (_blas.ROW_MAJOR, ta, tb, m, n, k, 1.0, a_ptr, lda,
                           b_ptr, ldb, beta, c_ptr, ldc), (a, b, c))]
    address = sgemm_address_of(sgemm)
    if split == "reduction":
        parts = min(threads, k)
        partials = _thread_buffer("partials", (parts - 1) * m * n).reshape(parts - 1, m, n)
        args = pack(address, a_ptr, b_ptr, c_ptr, partials.ctypes.data, ta, tb, lda, ldb,
                    ldc, m, n, k, f32_bits(beta), REDUCTION)
        return [part_call(_split_part, args, parts, (a, b, c, partials)),
                Bound(_add_partials, (c, partials))]
    how, parts = (ROWS, min(threads, m)) if split == "rows" else (COLUMNS, min(threads, n))
    args = pack(address, a_ptr, b_ptr, c_ptr, 0, ta, tb, lda, ldb, ldc, m, n, k,
                f32_bits(beta), how)
    return [part_call(_split_part, args, parts, (a, b, c))]
