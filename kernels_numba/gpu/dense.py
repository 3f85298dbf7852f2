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
c is never read.

Backward fusions (one launch per product, no separate passes):
- `db` (bias gradient): the GEMM computes an extra output row M whose A-operand row is
  all ones, i.e. the column sums of op(b), stored to db with the same alpha/beta.
- `g`/`gact`/`gop`: the A (gop 1) or B (gop 2) operand is a gradient dy wrt a layer's
  output y = f(z); each element is multiplied by f'(y) (y = g, same layout) as it is
  loaded, so dy w.r.t. z is never materialised (relu, sigmoid, tanh).
Small outputs with a long K (weight gradients) split K over gridDim.z = S: block z
stores its partial product in rows [z*M', (z+1)*M') of a (S*M', N) workspace (M' = M,
+1 with db), then bumps its tile's int32 counter; the block that finishes a tile last
adds the S partials in split order (deterministic: no float atomics, integer atomics
only decide WHO adds, never the order) into c/db and resets the counter to 0, so the
counters need no clearing launch.
"""

import math

from numba import float32, int32

from kernels_numba._cuda import MAX_GRID_YZ, ceil_div, cuda, device_function, kernel, launch
import numpy as np

from kernels_numba.gpu.reduction import cached_scratch
from kernels_numba.ops.activation import KIND_CODES
from kernels_numba.ops.dense import TILES, pick_splits, pick_tile

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
GEMM_SIG = (f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, float32, float32, int32, int32, "
            f"{F32_2D}, {F32_1D}, {F32_2D}, int32[::1], int32)")

SMEM_PAD = 4  # pads shared rows so the transposing tile stores avoid bank conflicts
LINEAR = KIND_CODES["linear"]
RELU = KIND_CODES["relu"]
SIGMOID = KIND_CODES["sigmoid"]
TANH = KIND_CODES["tanh"]


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

    def body(c, a, b, bias, alpha, beta, has_bias, act, part, db, g, ctr, flags):
        # flags: bit 0 db row; bits 8-15 gact (kind code of f for f'(y)); bits 16-17 gop.
        m = c.shape[0]
        n = c.shape[1]
        has_db = (flags & 1) != 0
        gact = (flags >> 8) & 255
        gop = (flags >> 16) & 3
        me = m + 1 if has_db else m  # rows computed (the db row is row m)
        splits = cuda.gridDim.z
        k_total = a.shape[0] if trans_a else a.shape[1]
        # Split-K: blockIdx.z takes a bk-aligned slice [k_lo, k_hi) of K (the whole
        # of K when gridDim.z == 1).
        k_chunk = ((k_total + bk - 1) // bk + splits - 1) // splits * bk
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
        last = cuda.shared.array(1, int32)
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
                    if gop == 1:
                        v = _dact(v, g[kg, r] if trans_a else g[r, kg], gact)
                elif r == m and has_db and kg < k_hi:
                    v = float32(1.0)  # the db row: column sums of op(b)
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
                    if gop == 2:
                        v = _dact(v, g[col, kg] if trans_b else g[kg, col], gact)
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

        if splits > 1:
            # Store this split's partial, then let the tile's last block reduce.
            for i in range(tm):
                r = row0 + ty + i * nty
                for j in range(tn):
                    col = col0 + tx + j * ntx
                    if r < me and col < n:
                        part[cuda.blockIdx.z * me + r, col] = alpha * acc[i, j]
            cuda.threadfence()  # partials visible device-wide before the counter moves
            cuda.syncthreads()
            tile_id = cuda.blockIdx.x * cuda.gridDim.y + cuda.blockIdx.y
            if tid == 0:
                last[0] = int32(0)
                if tile_id < ctr.size:
                    old = cuda.atomic.add(ctr, tile_id, int32(1))
                    if old == splits - 1:
                        last[0] = int32(1)
                        ctr[tile_id] = int32(0)  # ready for the next GEMM: no memset launch
            cuda.syncthreads()
            if last[0] == 0:
                return
            cuda.threadfence()
            for i in range(tm):
                r = row0 + ty + i * nty
                for j in range(tn):
                    col = col0 + tx + j * ntx
                    if r < me and col < n:
                        acc[i, j] = float32(0.0)
                        for z in range(splits):  # split order: same bits every run
                            acc[i, j] += part[z * me + r, col]
            alpha_out = float32(1.0)
        else:
            alpha_out = alpha

        for i in range(tm):
            r = row0 + ty + i * nty
            if r < m:
                for j in range(tn):
                    col = col0 + tx + j * ntx
                    if col < n:
                        v = alpha_out * acc[i, j]
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
            elif r == m and has_db:
                for j in range(tn):
                    col = col0 + tx + j * ntx
                    if col < n and col < db.size:
                        v = alpha_out * acc[i, j]
                        if beta != float32(0.0):
                            v += beta * db[col]
                        db[col] = v

    flags = ("t" if trans_a else "n") + ("t" if trans_b else "n")
    body.__name__ = body.__qualname__ = f"_gemm_{flags}_{tile}_kernel"
    return kernel(GEMM_SIG)(body)


@device_function(inline="always")
def _dact(v, y, code):
    # v * f'(y) as ops.activation_backward computes it from the output y.
    if code == RELU:
        return v if y > float32(0.0) else y - y  # 0, or NaN where y is NaN
    if code == SIGMOID:
        return v * y * (float32(1.0) - y)
    if code == TANH:
        return v * (float32(1.0) - y * y)
    return v


_GEMM_KERNELS = {
    (ta, tb, tile): _make_gemm_kernel(ta, tb, tile)
    for ta in (False, True) for tb in (False, True) for tile in TILES
}


# launchers

_COUNTERS = {}  # "ctr" -> int32 tile counters (all zero between launches)
_DUMMY = {}


def _tile_counters(size):
    ctr = _COUNTERS.get("ctr")
    if ctr is None or ctr.size < size:
        # A host-to-device copy (no kernel launch); every split GEMM leaves them zero.
        ctr = _COUNTERS["ctr"] = cuda.to_device(np.zeros(max(size, 1024), np.int32))
    return ctr


def _dummies():
    """(2-D, 1-D) one-element stand-ins for unused array arguments (made once: a device
    array view per launch would cost host time)."""
    d = _DUMMY.get("d")
    if d is None:
        two = cuda.to_device(np.zeros((1, 1), np.float32))
        d = _DUMMY["d"] = (two, cuda.to_device(np.zeros(1, np.float32)))
    return d


def gemm(c, a, b, bias=None, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0,
         act=LINEAR, tile=None, splits=None, workspace=None, db=None, g=None, gact=LINEAR,
         gop=0):
    """c = act(alpha * op(a) @ op(b) + beta * c + bias) on validated device arrays.

    `tile` ("t64"/"t128") and `splits` (split-K factor, linear without bias only)
    override the heuristics. A split GEMM needs splits * M' * N floats of workspace
    (M' = M, + 1 with db; the cached scratch when None; a smaller one splits less).
    db: (N,) also gets alpha * column sums of op(b) + beta * db. g, gact, gop: the A
    (gop 1) or B (gop 2) operand is multiplied by f'(g) (f = gact) as it is loaded.
    """
    m, n = c.shape
    if n == 0:
        return
    has_db = db is not None
    me = m + int(has_db)
    if me == 0:
        return
    k_total = a.shape[0] if trans_a else a.shape[1]
    tile = tile or pick_tile(me, n)
    bm, bn, _, tm, tn = TILES[tile]
    gm, gn = ceil_div(me, bm), ceil_div(n, bn)
    if gn > MAX_GRID_YZ:  # column tiles go on gridDim.y
        raise ValueError(f"matmul: expected at most {MAX_GRID_YZ * bn} columns in c; "
                         f"received {n}")
    if bias is not None or act != LINEAR:
        splits = 1
    elif splits is None:
        splits = pick_splits(gm * gn, k_total)
    dummy, dummy_1d = _dummies()
    part = dummy
    if splits > 1:
        ws = cached_scratch(splits * me * n) if workspace is None else workspace
        splits = min(splits, ws.size // (me * n))
        if splits > 1:
            part = ws[: splits * me * n].reshape(splits * me, n)
        else:
            splits = 1
    ctr = _tile_counters(gm * gn if splits > 1 else 1)
    k = _GEMM_KERNELS[(bool(trans_a), bool(trans_b), tile)]
    flags = int(has_db) | (int(gact) << 8) | (int(gop) << 16)
    launch(k, (gm, gn, splits), (bm // tm) * (bn // tn), c, a, b,
           dummy_1d if bias is None else bias,
           float32(alpha), float32(beta), int32(bias is not None), int32(act),
           part, dummy_1d if db is None else db, dummy if g is None else g, ctr, int32(flags))


def matmul(c, a, b, *, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, workspace=None):
    gemm(c, a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta,
         workspace=workspace)


def dense_forward(y, x, w, b=None, *, activation="linear"):
    gemm(y, x, w, b, act=KIND_CODES[activation])


def dense_backward(dx, dw, db, dy, x, w, workspace=None, *, activation="linear", y=None):
    gact = KIND_CODES[activation]
    g = y if gact != LINEAR else None
    if dx is not None:  # dx = (dy * f'(y)) @ w.T: dy masked as the A operand
        gemm(dx, dy, w, trans_b=True, g=g, gact=gact, gop=1 if g is not None else 0)
    # dw += x.T @ (dy * f'(y)), db += its column sums (the extra row): one launch.
    gemm(dw, x, dy, trans_a=True, beta=1.0, workspace=workspace, db=db, g=g, gact=gact,
         gop=2 if g is not None else 0)
