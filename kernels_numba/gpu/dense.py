"""CUDA kernels for kernels_numba.ops.dense: a register-blocked shared-memory SGEMM.

One template, `_make_gemm_kernel(trans_a, trans_b, tile)`, generates a kernel per
transpose combination and tile size (the flags and sizes are closure constants, so
each kernel compiles only its own branches and fully unrolls its register loops). A block of
256 threads computes a BM x BN tile of c, stepping K by BK through shared memory;
each thread keeps a TM x TN micro-tile of accumulators in registers
(cuda.local.array with constant sizes). A thread's rows and columns are strided by
the thread grid (row ty + i*BM/TM, column tx + j*BN/TN), so shared-memory reads of B
are conflict-free and stores of c are coalesced. Edge tiles load zeros and guard
their stores, so M, N, K need not be multiples of the tile.

Global loads are software-pipelined: each k-step issues the next tile's loads into
registers before computing on the current shared tile.

The epilogue is c = act(alpha * acc + beta * c + bias), which serves matmul (act
linear, no bias), dense_forward and conv2d_forward (alpha 1, beta 0). With beta == 0,
c is never read. Small outputs with a long K (weight gradients) split K over
gridDim.z = S: the kernel's `c` is then an (S*M, N) workspace where block z stores
its partial product in rows [z*M, (z+1)*M), and `_split_k_reduce_kernel` adds the S
partials in split order into the real c (deterministic: no float atomics).
"""

import math

from numba import float32, int32

from kernels_numba._cuda import ceil_div, cuda, kernel, launch
from kernels_numba.gpu.reduction import cached_scratch, column_sums_into
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.dense import TILES, pick_splits, pick_tile

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
GEMM_SIG = f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, float32, float32, int32, int32)"

SMEM_PAD = 4  # pads shared rows so the transposing tile stores avoid bank conflicts
LINEAR = KIND_CODES["linear"]
RELU = KIND_CODES["relu"]
SIGMOID = KIND_CODES["sigmoid"]
TANH = KIND_CODES["tanh"]
REDUCE_BLOCK = 256


# kernels

def _make_gemm_kernel(trans_a, trans_b, tile):
    bm, bn, bk, tm, tn = TILES[tile]
    ntx = bn // tn  # threads along N
    nty = bm // tm  # threads along M
    nthreads = ntx * nty
    la = bm * bk // nthreads  # elements of the a tile each thread stages per k-step
    lb = bn * bk // nthreads
    if la * nthreads != bm * bk or lb * nthreads != bn * bk:
        raise ValueError(f"gemm tile {tile}: {nthreads} threads must evenly stage the tiles")
    log2 = {v: v.bit_length() - 1 for v in (ntx, bm, bn, bk)}
    ntx_log2, bm_log2, bn_log2, bk_log2 = log2[ntx], log2[bm], log2[bn], log2[bk]
    lda_s = bm + SMEM_PAD
    ldb_s = bn + SMEM_PAD

    def body(c, a, b, bias, alpha, beta, has_bias, act):
        # Split-K (gridDim.z > 1): c is the (gridDim.z * M, N) partial workspace.
        m = c.shape[0] // cuda.gridDim.z
        n = c.shape[1]
        k_total = a.shape[0] if trans_a else a.shape[1]
        # Split-K: blockIdx.z takes a bk-aligned slice [k_lo, k_hi) of K (the whole
        # of K when gridDim.z == 1) and stores its partial product in its row band.
        k_chunk = ((k_total + bk - 1) // bk + cuda.gridDim.z - 1) // cuda.gridDim.z * bk
        k_lo = cuda.blockIdx.z * k_chunk
        k_hi = min(k_total, k_lo + k_chunk)
        # Masks and shifts (all sizes are powers of two) give indices the compiler
        # knows are non-negative, so it drops Python's negative-index fixups.
        tid = cuda.threadIdx.x & (nthreads - 1)
        tx = tid & (ntx - 1)
        ty = tid >> ntx_log2
        row0 = (cuda.blockIdx.x & 0x7FFFFFFF) * bm
        col0 = (cuda.blockIdx.y & 0x7FFFFFFF) * bn
        a_s = cuda.shared.array((bk, lda_s), float32)
        b_s = cuda.shared.array((bk, ldb_s), float32)
        acc = cuda.local.array((tm, tn), float32)
        ra = cuda.local.array(tm, float32)
        rb = cuda.local.array(tn, float32)
        pa = cuda.local.array(la, float32)
        pb = cuda.local.array(lb, float32)
        for i in range(tm):
            for j in range(tn):
                acc[i, j] = float32(0.0)

        # Software pipeline: iteration s publishes tile s-1 (fetched into registers
        # last iteration) to shared memory, issues the global loads of tile s, then
        # computes on tile s-1 while those loads are in flight.
        n_steps = (max(k_hi - k_lo, 0) + bk - 1) // bk
        for step in range(n_steps + 1):
            if step > 0:
                for p in range(la):
                    e = tid + p * nthreads
                    if trans_a:
                        a_s[e >> bm_log2, e & (bm - 1)] = pa[p]
                    else:
                        a_s[e & (bk - 1), e >> bk_log2] = pa[p]
                for p in range(lb):
                    e = tid + p * nthreads
                    if trans_b:
                        b_s[e & (bk - 1), e >> bk_log2] = pb[p]
                    else:
                        b_s[e >> bn_log2, e & (bn - 1)] = pb[p]
                cuda.syncthreads()
            # Consecutive threads read consecutive addresses of whichever axis the
            # operand stores contiguously; out-of-range elements (edge tiles, and the
            # whole last iteration) stage zeros.
            k0 = k_lo + step * bk
            for p in range(la):
                e = tid + p * nthreads
                if trans_a:  # a is (K, M)
                    kk = e >> bm_log2
                    mm = e & (bm - 1)
                else:  # a is (M, K)
                    mm = e >> bk_log2
                    kk = e & (bk - 1)
                r = row0 + mm
                kg = k0 + kk
                v = float32(0.0)
                if r < m and kg < k_hi:
                    v = a[kg, r] if trans_a else a[r, kg]
                pa[p] = v
            for p in range(lb):
                e = tid + p * nthreads
                if trans_b:  # b is (N, K)
                    nn = e >> bk_log2
                    kk = e & (bk - 1)
                else:  # b is (K, N)
                    kk = e >> bn_log2
                    nn = e & (bn - 1)
                col = col0 + nn
                kg = k0 + kk
                v = float32(0.0)
                if col < n and kg < k_hi:
                    v = b[col, kg] if trans_b else b[kg, col]
                pb[p] = v
            if step > 0:
                for kk in range(bk):
                    kq = kk & (bk - 1)  # == kk, provably in [0, bk)
                    for i in range(tm):
                        ra[i] = a_s[kq, ty + i * nty]
                    for j in range(tn):
                        rb[j] = b_s[kq, tx + j * ntx]
                    for i in range(tm):
                        for j in range(tn):
                            acc[i, j] += ra[i] * rb[j]
                cuda.syncthreads()

        for i in range(tm):
            r = row0 + ty + i * nty
            if r < m:
                for j in range(tn):
                    col = col0 + tx + j * ntx
                    if col < n and cuda.gridDim.z > 1:
                        # Split-K partial (linear, no bias): the reduce kernel adds beta*c.
                        c[cuda.blockIdx.z * m + r, col] = alpha * acc[i, j]
                    elif col < n:
                        v = alpha * acc[i, j]
                        if beta != float32(0.0):
                            v += beta * c[r, col]
                        if has_bias:
                            v += bias[col]
                        # Fused activation, written inline (no device-function call).
                        if act == RELU:
                            v = float32(0.0) if v <= float32(0.0) else v  # NaN passes
                        elif act == SIGMOID:  # split on the sign: no inf/inf
                            ex = math.exp(-abs(v))
                            v = float32(1.0) / (float32(1.0) + ex) if v >= float32(0.0) \
                                else ex / (float32(1.0) + ex)
                        elif act == TANH:
                            v = math.tanh(v)
                        c[r, col] = v

    flags = ("t" if trans_a else "n") + ("t" if trans_b else "n")
    body.__name__ = body.__qualname__ = f"_gemm_{flags}_{tile}_kernel"
    return kernel(GEMM_SIG)(body)


_GEMM_KERNELS = {
    (ta, tb, tile): _make_gemm_kernel(ta, tb, tile)
    for ta in (False, True) for tb in (False, True) for tile in TILES
}


@kernel(f"void({F32_2D}, {F32_2D}, float32)")
def _split_k_reduce_kernel(c, part, beta):
    # c = beta * c + part[0] + part[1] + ... (split order); c not read when beta == 0.
    m = c.shape[0]
    n = c.shape[1]
    splits = part.shape[0] // max(m, 1)
    for idx in range(cuda.grid(1), m * n, cuda.gridsize(1)):
        r = idx // n
        col = idx - r * n
        s = float32(0.0)
        for z in range(splits):
            s += part[z * m + r, col]
        if beta != float32(0.0):
            s += beta * c[r, col]
        c[r, col] = s


# launchers

def gemm(c, a, b, bias=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0,
         act=LINEAR, tile=None, splits=None, workspace=None):
    """c = act(alpha * op(a) @ op(b) + beta * c + bias) on validated device arrays.

    `tile` ("t64"/"t128") and `splits` (split-K factor, linear without bias only)
    override the heuristics. A split GEMM needs splits * M * N floats of workspace
    (the cached scratch when None; a smaller workspace splits less).
    """
    m, n = c.shape
    if m == 0 or n == 0:
        return
    k_total = a.shape[0] if trans_a else a.shape[1]
    tile = tile or pick_tile(m, n)
    bm, bn, _, tm, tn = TILES[tile]
    gm, gn = ceil_div(m, bm), ceil_div(n, bn)
    if gn > 65535:
        raise ValueError(f"matmul: expected at most {65535 * bn} columns in c; received {n}")
    if bias is not None or act != LINEAR:
        splits = 1
    elif splits is None:
        splits = pick_splits(gm * gn, k_total)
    out = c
    if splits > 1:
        ws = cached_scratch(splits * m * n) if workspace is None else workspace
        splits = min(splits, ws.size // (m * n))
        if splits > 1:
            out = ws[: splits * m * n].reshape(splits * m, n)
        else:
            splits = 1
    k = _GEMM_KERNELS[(bool(trans_a), bool(trans_b), tile)]
    launch(k, (gm, gn, splits), (bm // tm) * (bn // tn), out, a, b,
           c[0] if bias is None else bias,
           float32(alpha), float32(beta), int32(bias is not None), int32(act))
    if splits > 1:
        grid = max(1, min(ceil_div(m * n, REDUCE_BLOCK), 4096))
        launch(_split_k_reduce_kernel, grid, REDUCE_BLOCK, c, out, float32(beta))


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, workspace=None):
    gemm(c, a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
         workspace=workspace)


def dense_forward(y, x, w, b=None, *, activation="linear"):
    gemm(y, x, w, b, act=KIND_CODES[activation])


def dense_backward(dx, dw, db, dy, x, w, workspace=None):
    if dx is not None:
        gemm(dx, dy, w, trans_b=True)
    # dw's split-K partials, then db's row-block partials, share the workspace in turn.
    gemm(dw, x, dy, trans_a=True, beta=1.0, workspace=workspace)
    if db is not None:
        column_sums_into(db, dy, workspace)
