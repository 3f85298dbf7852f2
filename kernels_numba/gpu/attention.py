"""CUDA kernels for kernels_numba.ops.attention (FlashAttention-2 style, fixed order).

Tiles of BQ = 16 query rows by BK = 16 keys, 256 threads: thread (r, c) of the tile
computes one score (a dot over D from shared memory); the online softmax (running max,
sum, rescale) is per row in shared memory, so the (Tq, Tk) score matrix never exists
in global memory. Grid: (query tiles, B*H) for the forward, B*H folded over y and z
when it passes CUDA's 65,535 limit on gridDim.y (_cuda.fold_yz); the backward kernels
(gpu/attention_backward.py) recompute each score tile from q, k and lse. Dropout
(rate > 0): thread (r, c) also computes its score's factor (gpu/attention_tiles
.keep_factor, the CPU twin's hash), applied after the softmax sum, so out sums the
dropped probabilities while lse stays the softmax's. The key comes by value or from the
uint32 steps buffer (gpu/dropout.resolve_key), so a replayed launch draws a new mask
each step. Head sizes up to MAXD = 128 (ops.attention checks).
"""

import math

from numba import float32

from kernels_numba._cuda import cuda, fold_yz, grid_1d, kernel, launch
from kernels_numba.gpu import attention_backward as _bw
from kernels_numba.gpu.attention_tiles import (
    BK,
    BQ,
    MAXD,
    NEG_INF,
    THREADS,
    keep_factor,
    load_keys,
    load_rows_q,
    score_or_masked,
)
from kernels_numba.gpu.dropout import resolve_key, steps_args

_MAX_THREADS = 65536 * 256
F32_4D = _bw.F32_4D
F32_3D = _bw.F32_3D
DROP = _bw.DROP


# kernels

@kernel(f"void({F32_4D}, {F32_3D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_3D}, int32, int32, "
        f"float32, int32, {DROP})")
def _forward_kernel(out, lse, q, k, v, mask, has_mask, causal, scale, zero_masked_rows,
                    rate, keep_scale, key, use_steps, steps):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dv = q.shape[3], v.shape[3]
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
    ks = cuda.shared.array((BK, MAXD), float32)
    vs = cuda.shared.array((BK, MAXD), float32)
    os = cuda.shared.array((BQ, MAXD), float32)
    ss = cuda.shared.array((BQ, BK), float32)
    kept = cuda.shared.array((BQ, BK), float32)
    drops = cuda.shared.array((BQ, BK), float32)
    ms = cuda.shared.array(BQ, float32)
    ls = cuda.shared.array(BQ, float32)
    alphas = cuda.shared.array(BQ, float32)
    seen = cuda.shared.array(BQ, float32)
    load_rows_q(qs, q, bb, h, i0, tid)
    for e in range(tid, BQ * MAXD, THREADS):
        os[e // MAXD, e % MAXD] = float32(0.0)
    if tid < BQ:
        ms[tid] = NEG_INF
        ls[tid] = float32(0.0)
        seen[tid] = float32(0.0)
    j_end = min(tk, i0 + BQ) if (causal != 0 and has_mask == 0) else tk
    for j0 in range(0, j_end, BK):
        cuda.syncthreads()
        load_keys(ks, vs, k, v, bb, h, j0, tid)
        cuda.syncthreads()
        i = i0 + r
        j = j0 + c
        s = NEG_INF  # outside the matrix: weight 0
        flag = float32(0.0)
        f = float32(1.0)
        if i < tq and j < tk:
            acc = float32(0.0)
            for dd in range(d):
                acc += qs[r, dd] * ks[c, dd]
            s, dropped = score_or_masked(acc * scale, mask, has_mask, causal != 0, bb, i, j)
            if not dropped:
                flag = float32(1.0)
            if rate > float32(0.0):
                f = keep_factor(key, bb, h, i, j, nh, tq, tk, rate, keep_scale)
        ss[r, c] = s
        kept[r, c] = flag
        drops[r, c] = f
        cuda.syncthreads()
        if tid < BQ:
            mx = ms[tid]
            for cc in range(BK):
                if ss[tid, cc] > mx:
                    mx = ss[tid, cc]
                if kept[tid, cc] > float32(0.0):
                    seen[tid] = float32(1.0)
            alpha = math.exp(ms[tid] - mx) if mx != NEG_INF else float32(1.0)
            total = float32(0.0)
            for cc in range(BK):
                sv = ss[tid, cc]
                p = math.exp(sv - mx) if sv != NEG_INF else float32(0.0)
                ss[tid, cc] = p * drops[tid, cc]  # the sum below: before dropout
                total += p
            ls[tid] = ls[tid] * alpha + total
            ms[tid] = mx
            alphas[tid] = alpha
        cuda.syncthreads()
        for e in range(tid, BQ * dv, THREADS):
            rr = e // dv
            dd = e - rr * dv
            acc = os[rr, dd] * alphas[rr]
            for cc in range(BK):
                acc += ss[rr, cc] * vs[cc, dd]
            os[rr, dd] = acc
    cuda.syncthreads()
    for e in range(tid, BQ * dv, THREADS):
        rr = e // dv
        dd = e - rr * dv
        i = i0 + rr
        if i < tq:
            zero = zero_masked_rows != 0 and seen[rr] == float32(0.0) and ls[rr] == ls[rr]
            out[bb, i, h, dd] = float32(0.0) if zero else os[rr, dd] / ls[rr]
    if tid < BQ and i0 + tid < tq:
        lv = ls[tid]
        if seen[tid] > float32(0.0) or lv != lv:
            lse[bb, h, i0 + tid] = ms[tid] + math.log(lv)
        elif zero_masked_rows != 0:  # Keras's scores path: P = 0 (exp(s - inf))
            lse[bb, h, i0 + tid] = -NEG_INF
        else:
            lse[bb, h, i0 + tid] = NEG_INF  # fully masked: uniform in the backward


@kernel(f"void({F32_4D}, {F32_3D}, {F32_4D}, {F32_4D}, {F32_3D}, int32, int32, float32)")
def _probs_kernel(probs, lse, q, k, mask, has_mask, causal, scale):
    """Materialised P = exp(s - lse) * keep, one thread per element (grid-stride)."""
    nb, nh, tq, tk = probs.shape[0], probs.shape[1], probs.shape[2], probs.shape[3]
    d = q.shape[3]
    for e in range(cuda.grid(1), nb * nh * tq * tk, cuda.gridsize(1)):
        j = e % tk
        i = (e // tk) % tq
        h = (e // (tk * tq)) % nh
        bb = e // (tk * tq * nh)
        acc = float32(0.0)
        for dd in range(d):
            acc += q[bb, i, h, dd] * k[bb, j, h, dd]
        s, dropped = score_or_masked(acc * scale, mask, has_mask, causal != 0, bb, i, j)
        probs[bb, h, i, j] = float32(0.0) if dropped else math.exp(s - lse[bb, h, i])


@kernel(f"void({F32_4D}, float32, float32, uint64, boolean, uint32[::1])")
def _keep_mask_kernel(out, rate, keep_scale, key, use_steps, steps):
    """The dropout factors the attention kernels apply, one thread per element."""
    nb, nh, tq, tk = out.shape[0], out.shape[1], out.shape[2], out.shape[3]
    key = resolve_key(key, use_steps, steps)
    for e in range(cuda.grid(1), nb * nh * tq * tk, cuda.gridsize(1)):
        j = e % tk
        i = (e // tk) % tq
        h = (e // (tk * tq)) % nh
        bb = e // (tk * tq * nh)
        out[bb, h, i, j] = keep_factor(key, bb, h, i, j, nh, tq, tk, rate, keep_scale)


# launchers

def _mask_arg(mask, like):
    return (mask, 1) if mask is not None else (like, 0)  # like: never indexed


def _drop_args(drop):
    """(rate, keep_scale, key, use_steps, steps) kernel arguments; rate 0: no dropout."""
    if drop is None:
        return (float32(0.0), float32(1.0), *steps_args(0, None))
    rate, keep_scale, key, steps = drop
    return (float32(rate), float32(keep_scale), *steps_args(key, steps))


def attention_keep_mask(out, rate, keep_scale, key, steps):
    if out.size:
        launch(_keep_mask_kernel, grid_1d(min(out.size, _MAX_THREADS))[0], 256, out,
               *_drop_args((rate, keep_scale, key, steps)))


def attention_forward(out, lse, q, k, v, mask, workspace, scale, causal, probs, drop=None):
    nb, tq, nh, _ = q.shape
    if out.size == 0 or lse.size == 0:
        return
    m, has = _mask_arg(mask, lse)
    grid = ((tq + BQ - 1) // BQ, *fold_yz(nb * nh))
    launch(_forward_kernel, grid, THREADS, out, lse, q, k, v, m, has, int(causal), scale,
           int(probs is not None), *_drop_args(drop))
    if probs is not None and probs.size:
        launch(_probs_kernel, grid_1d(min(probs.size, _MAX_THREADS))[0], 256, probs, lse, q,
               k, m, has, int(causal), scale)


def attention_backward(dq, dk, dv, dout, q, k, v, out, lse, mask, workspace, scale, causal,
                       probs, dprobs, drop=None):
    nb, tq, nh, _ = q.shape
    tk = k.shape[1]
    if nb * nh == 0:
        return
    m, has = _mask_arg(mask, lse)
    extra = (probs, dprobs, 1) if dprobs is not None else (q, q, 0)  # q: a never-read 4-D
    dargs = _drop_args(drop)
    if (dk is not None or dv is not None) and tk > 0:
        grid = ((tk + BK - 1) // BK, *fold_yz(nb * nh))
        launch(_bw._dkdv_kernel, grid, THREADS, dk if dk is not None else k,
               dv if dv is not None else v, dout, q, k, v, out, lse, m, has, int(causal),
               int(dk is not None), int(dv is not None), scale, *extra, *dargs)
    if dq is not None and tq > 0:
        grid = ((tq + BQ - 1) // BQ, *fold_yz(nb * nh))
        launch(_bw._dq_kernel, grid, THREADS, dq, dout, q, k, v, out, lse, m, has,
               int(causal), scale, *extra, *dargs)
