"""Our own single-threaded sgemm, shaped like cblas_sgemm: register tiles of 6 x 64 floats.

Why: OpenBLAS's kernel set is chosen by the CPU or by OPENBLAS_CORETYPE, and this
project's machine pins its AVX2 set on an AVX-512 CPU (AMD Zen 5), where it runs at
~95 GFLOP/s per core against a 230 GFLOP/s FMA peak. These tiles are AVX-512 code for
the CPU at hand (LLVM compiles the <16 x float> FMAs for the host): 220-224 GFLOP/s on
one core for the reference CNN's conv2 products (7744/2 x 64, K 288; 144 x 64, K 7744).
kernels_numba.cpu.gemm uses this function wherever it would call OpenBLAS (its blocks
on numba's threads, conv2d's grouped passes, the recurrent and attention ops), by
address, on CPUs whose compile target has AVX-512F (`enabled`).

The scheme (BLIS's, without packing A): C is cut into panels of 64 columns and, inside
a K block of at most 384, into tiles of 6 rows. A tile keeps its 6 x 4 vectors of 16
floats in registers while k runs (`_tile`, written in LLVM IR: numba's loops cannot
hold 24 accumulators), broadcasting A[i, k] from A in place (either layout) and loading
B[k, 64 columns] in one row. B is packed (zero-padded, on this call's stack) only when
transposed or when the panel's width is not a multiple of 16; A only for a last partial
tile's rows; a partial tile goes through a stack tile of its own.

Every element is computed the same way wherever its tile falls: the sum runs k = 0, 1,
... in one FMA chain per K block, and each store is alpha * acc, then beta * C + that
(two roundings, the same in full and partial tiles), so a result does not depend on
how gemm splits the product across threads. beta = 0 never reads C (BLAS semantics:
a NaN there is overwritten).
"""

import ctypes
import os

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from kernels_numba._blas import NO_TRANS
from kernels_numba.cpu._parallel import lazy_part

MODE_VAR = "KERNELS_NUMBA_GEMM"  # "tiles", "openblas", or unset: tiles where AVX-512
ROWS, WIDTH, VECTORS = 6, 16, 4  # a tile: ROWS x (VECTORS x WIDTH) accumulators
PANEL = WIDTH * VECTORS
K_BLOCK = 384

# cblas_sgemm's arguments with 64-bit sizes and pointers as integers (as gemm passes them).
_i32, _i64, _f32 = types.int32, types.int64, types.float32
SGEMM_SIG = types.void(_i32, _i32, _i32, _i64, _i64, _i64, _f32, _i64, _i64, _i64, _i64, _f32,
                       _i64, _i64)
SGEMM_CTYPE = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                               ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_size_t,
                               ctypes.c_int64, ctypes.c_size_t, ctypes.c_int64, ctypes.c_float,
                               ctypes.c_size_t, ctypes.c_int64)


def has_avx512():
    """Whether numba compiles for a CPU with AVX-512F (NUMBA_CPU_FEATURES when set)."""
    features = numba.config.CPU_FEATURES
    if not features:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features().flatten()
    return "+avx512f" in features.split(",")


def enabled():
    """Whether gemm uses these tiles: KERNELS_NUMBA_GEMM=tiles|openblas, default by ISA."""
    mode = os.environ.get(MODE_VAR, "")
    if mode not in ("", "tiles", "openblas"):
        raise ValueError(f"{MODE_VAR}: expected 'tiles' or 'openblas'; received {mode!r}")
    return mode == "tiles" or (mode == "" and has_avx512())


def _splat(builder, value, vec):
    undef = ir.Constant(vec, ir.Undefined)
    one = builder.insert_element(undef, value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, undef, ir.Constant(ir.VectorType(ir.IntType(32), WIDTH),
                                                          [0] * WIDTH))


def _make_tile(vectors):
    """_tile(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c): C[0:6, 0:16 vectors] =
    alpha * A[0:6, 0:kc] @ B[0:kc, ...] (then beta * C + that where load_c); A[i, k] at
    a + 4 (i ra + k ka), B[k, j] at b + 4 (k ldb + j), C[i, j] at c + 4 (i ldc + j)."""

    @intrinsic
    def tile(typingctx, kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c):
        sig = types.void(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c)

        def codegen(context, builder, signature, args):
            i64, f32 = ir.IntType(64), ir.FloatType()
            vec = ir.VectorType(f32, WIDTH)
            fma = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vec, [vec, vec, vec]), "llvm.fma.v16f32")
            kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c = args
            a_p, b_p, c_p = (builder.inttoptr(x, f32.as_pointer()) for x in (a, b, c))
            count = ROWS * vectors
            zero = ir.Constant(vec, None)
            entry = builder.block
            loop = builder.append_basic_block("tile.k")
            done = builder.append_basic_block("tile.store")
            builder.cbranch(builder.icmp_signed(">", kc, ir.Constant(i64, 0)), loop, done)

            builder.position_at_end(loop)  # one k: B's row, 6 broadcasts, 6 x vectors FMAs
            k = builder.phi(i64)
            acc = [builder.phi(vec) for _ in range(count)]
            b_row = builder.gep(b_p, [builder.mul(k, ldb)])
            b_vec = [builder.load(builder.bitcast(builder.gep(b_row, [ir.Constant(i64, WIDTH * v)]),
                                                  vec.as_pointer()), align=4)
                     for v in range(vectors)]
            a_col = builder.gep(a_p, [builder.mul(k, ka)])
            summed = []
            for r in range(ROWS):
                a_rk = builder.load(builder.gep(a_col, [builder.mul(ir.Constant(i64, r), ra)]),
                                    align=4)
                splat = _splat(builder, a_rk, vec)
                summed += [builder.call(fma, [splat, b_vec[v], acc[r * vectors + v]])
                           for v in range(vectors)]
            k_next = builder.add(k, ir.Constant(i64, 1))
            k.add_incoming(ir.Constant(i64, 0), entry)
            k.add_incoming(k_next, loop)
            for phi, value in zip(acc, summed):
                phi.add_incoming(zero, entry)
                phi.add_incoming(value, loop)
            builder.cbranch(builder.icmp_signed("<", k_next, kc), loop, done)

            builder.position_at_end(done)  # kc = 0 leaves the accumulators at 0
            finals = []
            for value in summed:  # (phis first in their block)
                finals.append(builder.phi(vec))
                finals[-1].add_incoming(zero, entry)
                finals[-1].add_incoming(value, loop)
            alpha_v, beta_v = _splat(builder, alpha, vec), _splat(builder, beta, vec)
            read_c = builder.icmp_signed("!=", load_c, ir.Constant(i64, 0))
            for r in range(ROWS):
                c_row = builder.gep(c_p, [builder.mul(ir.Constant(i64, r), ldc)])
                for v in range(vectors):
                    final = finals[r * vectors + v]
                    where = builder.bitcast(builder.gep(c_row, [ir.Constant(i64, WIDTH * v)]),
                                            vec.as_pointer())
                    value = builder.fmul(final, alpha_v)
                    with builder.if_else(read_c) as (then, otherwise):
                        with then:  # beta * C + alpha * acc: two roundings, no FMA
                            old = builder.fmul(builder.load(where, align=4), beta_v)
                            builder.store(builder.fadd(old, value), where, align=4)
                        with otherwise:
                            builder.store(value, where, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return tile


_tile_1, _tile_2, _tile_3, _tile_4 = (_make_tile(v) for v in range(1, VECTORS + 1))


def _stack_floats(n):
    """An intrinsic giving the address of n float32 on the calling function's stack."""
    @intrinsic
    def stack(typingctx):
        def codegen(context, builder, signature, args):
            ptr = cgutils.alloca_once(builder, ir.FloatType(), size=ir.Constant(ir.IntType(64), n))
            return builder.ptrtoint(ptr, ir.IntType(64))

        return types.int64(), codegen

    return stack


_b_scratch = _stack_floats(K_BLOCK * PANEL)
_a_scratch = _stack_floats(ROWS * K_BLOCK)
_c_scratch = _stack_floats(ROWS * PANEL)


@intrinsic
def _f32_at(typingctx, address, n):
    """n float32 at `address` as a 1-d array (no owner)."""
    array_type = types.Array(types.float32, 1, "C")

    def codegen(context, builder, signature, args):
        from kernels_numba.cpu._parallel import _c_array

        data = builder.inttoptr(args[0], ir.FloatType().as_pointer())
        count = context.cast(builder, args[1], signature.args[1], types.int64)
        return _c_array(context, builder, array_type, data, [count])

    return array_type(address, n), codegen


@numba.njit(inline="always")
def _run_tile(vectors, kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c):
    if vectors == 4:
        _tile_4(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c)
    elif vectors == 3:
        _tile_3(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c)
    elif vectors == 2:
        _tile_2(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c)
    else:
        _tile_1(kc, a, ra, ka, b, ldb, c, ldc, alpha, beta, load_c)


def _sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    # Row-major only (the order argument is cblas's; gemm always passes row-major).
    if m <= 0 or n <= 0:
        return
    ra, ka = (lda, 1) if ta == NO_TRANS else (1, lda)  # A[i, k] at a + 4 (i ra + k ka)
    b_pack, a_pack, c_tile = _b_scratch(), _a_scratch(), _c_scratch()
    packed_b = _f32_at(b_pack, K_BLOCK * PANEL)
    packed_a = _f32_at(a_pack, ROWS * K_BLOCK)
    tile_c = _f32_at(c_tile, ROWS * PANEL)
    blocks = max(1, (k + K_BLOCK - 1) // K_BLOCK)
    for kb in range(blocks):
        k0 = k * kb // blocks
        kc = k * (kb + 1) // blocks - k0
        load_c = 0 if (kb == 0 and beta == 0) else 1
        scale = beta if kb == 0 else np.float32(1.0)
        for j0 in range(0, n, PANEL):
            width = min(PANEL, n - j0)
            vectors = (width + WIDTH - 1) // WIDTH
            lanes = vectors * WIDTH
            if tb == NO_TRANS and width == lanes:  # B's rows in place
                b_src, b_ld = b + 4 * (k0 * ldb + j0), ldb
            else:  # transposed or ragged: pack kc x lanes, zero-padded
                for kk in range(kc):
                    row = kk * lanes
                    for j in range(width, lanes):
                        packed_b[row + j] = 0.0
                    if tb == NO_TRANS:  # a row of B: contiguous both sides
                        src = _f32_at(b + 4 * ((k0 + kk) * ldb + j0), width)
                        for j in range(width):
                            packed_b[row + j] = src[j]
                if tb != NO_TRANS:  # B^T's rows are B's columns: read along them
                    for j in range(width):
                        src = _f32_at(b + 4 * ((j0 + j) * ldb + k0), kc)
                        for kk in range(kc):
                            packed_b[kk * lanes + j] = src[kk]
                b_src, b_ld = b_pack, lanes
            for i0 in range(0, m, ROWS):
                rows = min(ROWS, m - i0)
                if rows == ROWS:
                    a_src, a_r, a_k = a + 4 * (i0 * ra + k0 * ka), ra, ka
                else:  # the last rows, zero-padded to a tile
                    for r in range(ROWS):
                        for kk in range(kc):
                            packed_a[r * kc + kk] = 0.0 if r >= rows else _f32_at(
                                a + 4 * ((i0 + r) * ra + (k0 + kk) * ka), 1)[0]
                    a_src, a_r, a_k = a_pack, kc, 1
                if rows == ROWS and width == lanes:
                    _run_tile(vectors, kc, a_src, a_r, a_k, b_src, b_ld, c + 4 * (i0 * ldc + j0),
                              ldc, alpha, scale, load_c)
                    continue
                _run_tile(vectors, kc, a_src, a_r, a_k, b_src, b_ld, c_tile, lanes, alpha, scale, 0)
                for r in range(rows):
                    out = _f32_at(c + 4 * ((i0 + r) * ldc + j0), width)
                    for j in range(width):
                        if load_c:
                            out[j] = out[j] * scale + tile_c[r * lanes + j]
                        else:
                            out[j] = tile_c[r * lanes + j]


sgemm = lazy_part(_sgemm, SGEMM_SIG, SGEMM_CTYPE)
