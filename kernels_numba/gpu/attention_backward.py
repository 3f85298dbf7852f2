"""CUDA backward kernels of kernels_numba.ops.attention (launched by gpu/attention.py).

Grid (key tiles, B*H) for dk/dv and (query tiles, B*H) for dq. Each block recomputes
its score tiles from q, k and lse (gpu/attention_tiles.probs_tile, which also
regenerates the dropout factors: nothing of the forward's mask is stored); dk/dv are
summed by the block that owns the key tile, over the query tiles in order, and dq by
the block that owns the query tile: no atomics, the same bits every run. Each thread
keeps its share (<= 8 elements) of the dq or dk/dv tile in local memory.
"""

from numba import float32

from kernels_numba._cuda import cuda, kernel
from kernels_numba.gpu.attention_tiles import (
    BK,
    BQ,
    MAXD,
    THREADS,
    load_keys,
    load_rows,
    probs_tile,
)
from kernels_numba.gpu.dropout import resolve_key

PER_THREAD = BK * MAXD // THREADS  # tile elements of dq/dk/dv per thread
F32_4D = "float32[:, :, :, ::1]"
F32_3D = "float32[:, :, ::1]"
DROP = "float32, float32, uint64, boolean, uint32[::1]"  # rate, keep_scale, key/seed, steps


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, "
        f"{F32_3D}, {F32_3D}, int32, int32, int32, int32, float32, {F32_4D}, {F32_4D}, int32, "
        f"{DROP})")
def _dkdv_kernel(dk, dv, dout, q, k, v, out, lse, mask, has_mask, causal, want_k, want_v,
                 scale, probs, dprobs, has_dprobs, rate, keep_scale, key, use_steps, steps):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dvs = q.shape[3], v.shape[3]
    bh = cuda.blockIdx.y + cuda.blockIdx.z * cuda.gridDim.y  # the (batch, head) pair
    if bh >= q.shape[0] * nh:  # past B*H in a folded grid's last z layer (whole block)
        return
    bb = bh // nh
    h = bh - bb * nh
    j0 = cuda.blockIdx.x * BK
    tid = cuda.threadIdx.x
    r = tid // BK
    c = tid - r * BK
    key = resolve_key(key, use_steps, steps)
    qs = cuda.shared.array((BQ, MAXD), float32)
    dos = cuda.shared.array((BQ, MAXD), float32)
    ks = cuda.shared.array((BK, MAXD), float32)
    vs = cuda.shared.array((BK, MAXD), float32)
    ps = cuda.shared.array((BQ, BK), float32)
    dss = cuda.shared.array((BQ, BK), float32)
    lses = cuda.shared.array(BQ, float32)
    deltas = cuda.shared.array(BQ, float32)
    acc_k = cuda.local.array(PER_THREAD, float32)
    acc_v = cuda.local.array(PER_THREAD, float32)
    for t in range(PER_THREAD):
        acc_k[t] = float32(0.0)
        acc_v[t] = float32(0.0)
    load_keys(ks, vs, k, v, bb, h, j0, tid)
    i_start = (j0 // BQ) * BQ if (causal != 0 and has_mask == 0) else 0
    for i0 in range(i_start, tq, BQ):
        cuda.syncthreads()
        load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs,
                  bb, h, i0, tid)
        cuda.syncthreads()
        probs_tile(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal != 0,
                   scale, dprobs, has_dprobs, key, rate, keep_scale, bb, h, i0, j0, r, c,
                   nh, tq, tk, d, dvs)
        cuda.syncthreads()
        for t in range(PER_THREAD):
            e = tid + t * THREADS
            cc = e // MAXD
            dd = e - cc * MAXD
            sk = float32(0.0)
            sv = float32(0.0)
            for rr in range(BQ):
                sk += dss[rr, cc] * qs[rr, dd]
                sv += ps[rr, cc] * dos[rr, dd]
            acc_k[t] += sk
            acc_v[t] += sv
    for t in range(PER_THREAD):
        e = tid + t * THREADS
        cc = e // MAXD
        dd = e - cc * MAXD
        j = j0 + cc
        if j < tk:
            if want_k != 0 and dd < d:
                dk[bb, j, h, dd] = acc_k[t]
            if want_v != 0 and dd < dvs:
                dv[bb, j, h, dd] = acc_v[t]


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_3D}, "
        f"{F32_3D}, int32, int32, float32, {F32_4D}, {F32_4D}, int32, {DROP})")
def _dq_kernel(dq, dout, q, k, v, out, lse, mask, has_mask, causal, scale, probs, dprobs,
               has_dprobs, rate, keep_scale, key, use_steps, steps):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dvs = q.shape[3], v.shape[3]
    bh = cuda.blockIdx.y + cuda.blockIdx.z * cuda.gridDim.y  # the (batch, head) pair
    if bh >= q.shape[0] * nh:  # past B*H in a folded grid's last z layer (whole block)
        return
    bb = bh // nh
    h = bh - bb * nh
    i0 = cuda.blockIdx.x * BQ
    tid = cuda.threadIdx.x
    r = tid // BK
    c = tid - r * BK
    key = resolve_key(key, use_steps, steps)
    qs = cuda.shared.array((BQ, MAXD), float32)
    dos = cuda.shared.array((BQ, MAXD), float32)
    ks = cuda.shared.array((BK, MAXD), float32)
    vs = cuda.shared.array((BK, MAXD), float32)
    ps = cuda.shared.array((BQ, BK), float32)
    dss = cuda.shared.array((BQ, BK), float32)
    lses = cuda.shared.array(BQ, float32)
    deltas = cuda.shared.array(BQ, float32)
    acc = cuda.local.array(PER_THREAD, float32)
    for t in range(PER_THREAD):
        acc[t] = float32(0.0)
    load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs,
              bb, h, i0, tid)
    j_end = min(tk, i0 + BQ) if (causal != 0 and has_mask == 0) else tk
    for j0 in range(0, j_end, BK):
        cuda.syncthreads()
        load_keys(ks, vs, k, v, bb, h, j0, tid)
        cuda.syncthreads()
        probs_tile(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal != 0,
                   scale, dprobs, has_dprobs, key, rate, keep_scale, bb, h, i0, j0, r, c,
                   nh, tq, tk, d, dvs)
        cuda.syncthreads()
        for t in range(PER_THREAD):
            e = tid + t * THREADS
            rr = e // MAXD
            dd = e - rr * MAXD
            s = float32(0.0)
            for cc in range(BK):
                s += dss[rr, cc] * ks[cc, dd]
            acc[t] += s
    for t in range(PER_THREAD):
        e = tid + t * THREADS
        rr = e // MAXD
        dd = e - rr * MAXD
        if i0 + rr < tq and dd < d:
            dq[bb, i0 + rr, h, dd] = acc[t]
