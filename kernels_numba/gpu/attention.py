"""CUDA kernels for kernels_numba.ops.attention (FlashAttention-2 style, fixed order).

Tiles of BQ = 16 query rows by BK = 16 keys, 256 threads: thread (r, c) of the tile
computes one score (a dot over D from shared memory); the online softmax (running max,
sum, rescale) is per row in shared memory, so the (Tq, Tk) score matrix never exists
in global memory. Grid: (query tiles, B*H) for the forward and dq, (key tiles, B*H)
for dk/dv. The backward recomputes each score tile from q, k and lse; dk/dv are summed
by the block that owns the key tile, over the query tiles in order, and dq by the
block that owns the query tile: no atomics, the same bits every run. Each thread keeps
its share (<= 8 elements) of the dq or dk/dv tile in local memory. Head sizes up to
MAXD = 128 (ops.attention checks).
"""

import math

import numpy as np
from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch

BQ = 16
BK = 16
THREADS = BQ * BK
MAXD = 128
_MAX_THREADS = 65536 * 256
PER_THREAD = BK * MAXD // THREADS  # tile elements of dq/dk/dv per thread
F32_4D = "float32[:, :, :, ::1]"
F32_3D = "float32[:, :, ::1]"
NEG_INF = np.float32(-np.inf)  # a float32 constant in the kernels (no .f64)


@device_function
def _score_or_masked(s, mask, has_mask, causal, bb, i, j):
    """(value, dropped): Keras's -1e9 where the mask or causality drops a score."""
    if causal and j > i:
        return float32(-1e9), True
    if has_mask and not mask[bb, i, j] > float32(0.5):
        return float32(-1e9), True
    return s, False


# kernels

@kernel(f"void({F32_4D}, {F32_3D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_3D}, int32, int32, "
        "float32, int32)")
def _forward_kernel(out, lse, q, k, v, mask, has_mask, causal, scale, zero_masked_rows):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dv = q.shape[3], v.shape[3]
    bb = cuda.blockIdx.y // nh
    h = cuda.blockIdx.y - bb * nh
    i0 = cuda.blockIdx.x * BQ
    tid = cuda.threadIdx.x
    r = tid // BK
    c = tid - r * BK
    qs = cuda.shared.array((BQ, MAXD), float32)
    ks = cuda.shared.array((BK, MAXD), float32)
    vs = cuda.shared.array((BK, MAXD), float32)
    os = cuda.shared.array((BQ, MAXD), float32)
    ss = cuda.shared.array((BQ, BK), float32)
    kept = cuda.shared.array((BQ, BK), float32)
    ms = cuda.shared.array(BQ, float32)
    ls = cuda.shared.array(BQ, float32)
    alphas = cuda.shared.array(BQ, float32)
    seen = cuda.shared.array(BQ, float32)
    for e in range(tid, BQ * MAXD, THREADS):
        rr = e // MAXD
        dd = e - rr * MAXD
        i = i0 + rr
        qs[rr, dd] = q[bb, i, h, dd] if (i < tq and dd < d) else float32(0.0)
        os[rr, dd] = float32(0.0)
    if tid < BQ:
        ms[tid] = NEG_INF
        ls[tid] = float32(0.0)
        seen[tid] = float32(0.0)
    j_end = min(tk, i0 + BQ) if (causal != 0 and has_mask == 0) else tk
    for j0 in range(0, j_end, BK):
        cuda.syncthreads()
        for e in range(tid, BK * MAXD, THREADS):
            cc = e // MAXD
            dd = e - cc * MAXD
            j = j0 + cc
            ks[cc, dd] = k[bb, j, h, dd] if (j < tk and dd < d) else float32(0.0)
            vs[cc, dd] = v[bb, j, h, dd] if (j < tk and dd < dv) else float32(0.0)
        cuda.syncthreads()
        i = i0 + r
        j = j0 + c
        s = NEG_INF  # outside the matrix: weight 0
        flag = float32(0.0)
        if i < tq and j < tk:
            acc = float32(0.0)
            for dd in range(d):
                acc += qs[r, dd] * ks[c, dd]
            s, dropped = _score_or_masked(acc * scale, mask, has_mask, causal != 0, bb, i, j)
            if not dropped:
                flag = float32(1.0)
        ss[r, c] = s
        kept[r, c] = flag
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
                ss[tid, cc] = p
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


@device_function
def _load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs, bb, h,
               i0, tid):
    """A query tile of q and dout into shared memory, with lse and delta = sum(dout*out)."""
    tq, d, dv = q.shape[1], q.shape[3], dout.shape[3]
    for e in range(tid, BQ * MAXD, THREADS):
        rr = e // MAXD
        dd = e - rr * MAXD
        i = i0 + rr
        qs[rr, dd] = q[bb, i, h, dd] if (i < tq and dd < d) else float32(0.0)
        dos[rr, dd] = dout[bb, i, h, dd] if (i < tq and dd < dv) else float32(0.0)
    if tid < BQ:
        i = i0 + tid
        acc = float32(0.0)
        if i < tq:
            for dd in range(dv):
                acc += dout[bb, i, h, dd] * out[bb, i, h, dd]
            if has_dprobs != 0:  # d(probs) joins dP: delta gains sum_j P dprobs
                for j in range(probs.shape[3]):
                    acc += probs[bb, h, i, j] * dprobs[bb, h, i, j]
            lses[tid] = lse[bb, h, i]
        deltas[tid] = acc


@device_function
def _load_keys(ks, vs, k, v, bb, h, j0, tid):
    tk, d, dv = k.shape[1], k.shape[3], v.shape[3]
    for e in range(tid, BK * MAXD, THREADS):
        cc = e // MAXD
        dd = e - cc * MAXD
        j = j0 + cc
        ks[cc, dd] = k[bb, j, h, dd] if (j < tk and dd < d) else float32(0.0)
        vs[cc, dd] = v[bb, j, h, dd] if (j < tk and dd < dv) else float32(0.0)


@device_function
def _probs(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal, scale, dprobs,
           has_dprobs, bb, h, i0, j0, r, c, tq, tk, d, dv):
    """Thread (r, c): P (recomputed from lse) and dS * scale of one score."""
    i = i0 + r
    j = j0 + c
    p = float32(0.0)
    ds = float32(0.0)
    if i < tq and j < tk:
        acc = float32(0.0)
        for dd in range(d):
            acc += qs[r, dd] * ks[c, dd]
        s, dropped = _score_or_masked(acc * scale, mask, has_mask, causal, bb, i, j)
        if lses[r] == NEG_INF:
            p = float32(1.0) / float32(tk)
        else:
            p = math.exp(s - lses[r])
        if not dropped:
            dp = float32(0.0)
            for dd in range(dv):
                dp += dos[r, dd] * vs[c, dd]
            if has_dprobs != 0:
                dp += dprobs[bb, h, i, j]
            ds = p * (dp - deltas[r]) * scale
    ps[r, c] = p
    dss[r, c] = ds


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, {F32_4D}, "
        f"{F32_3D}, {F32_3D}, int32, int32, int32, int32, float32, {F32_4D}, {F32_4D}, int32)")
def _dkdv_kernel(dk, dv, dout, q, k, v, out, lse, mask, has_mask, causal, want_k, want_v,
                 scale, probs, dprobs, has_dprobs):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dvs = q.shape[3], v.shape[3]
    bb = cuda.blockIdx.y // nh
    h = cuda.blockIdx.y - bb * nh
    j0 = cuda.blockIdx.x * BK
    tid = cuda.threadIdx.x
    r = tid // BK
    c = tid - r * BK
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
    _load_keys(ks, vs, k, v, bb, h, j0, tid)
    i_start = (j0 // BQ) * BQ if (causal != 0 and has_mask == 0) else 0
    for i0 in range(i_start, tq, BQ):
        cuda.syncthreads()
        _load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs,
                   bb, h, i0, tid)
        cuda.syncthreads()
        _probs(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal != 0, scale,
               dprobs, has_dprobs, bb, h, i0, j0, r, c, tq, tk, d, dvs)
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
        f"{F32_3D}, int32, int32, float32, {F32_4D}, {F32_4D}, int32)")
def _dq_kernel(dq, dout, q, k, v, out, lse, mask, has_mask, causal, scale, probs, dprobs,
               has_dprobs):
    nh, tq, tk = q.shape[2], q.shape[1], k.shape[1]
    d, dvs = q.shape[3], v.shape[3]
    bb = cuda.blockIdx.y // nh
    h = cuda.blockIdx.y - bb * nh
    i0 = cuda.blockIdx.x * BQ
    tid = cuda.threadIdx.x
    r = tid // BK
    c = tid - r * BK
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
    _load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs,
                   bb, h, i0, tid)
    j_end = min(tk, i0 + BQ) if (causal != 0 and has_mask == 0) else tk
    for j0 in range(0, j_end, BK):
        cuda.syncthreads()
        _load_keys(ks, vs, k, v, bb, h, j0, tid)
        cuda.syncthreads()
        _probs(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal != 0, scale,
               dprobs, has_dprobs, bb, h, i0, j0, r, c, tq, tk, d, dvs)
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
        s, dropped = _score_or_masked(acc * scale, mask, has_mask, causal != 0, bb, i, j)
        probs[bb, h, i, j] = float32(0.0) if dropped else math.exp(s - lse[bb, h, i])


# launchers

def _mask_arg(mask, like):
    return (mask, 1) if mask is not None else (like, 0)


def _dummy_mask(lse):
    return lse  # (B, H, Tq) float32 3-D: never indexed when has_mask == 0


def attention_forward(out, lse, q, k, v, mask, workspace, scale, causal, probs):
    nb, tq, nh, _ = q.shape
    if out.size == 0 or lse.size == 0:
        return
    m, has = _mask_arg(mask, _dummy_mask(lse))
    grid = ((tq + BQ - 1) // BQ, nb * nh)
    launch(_forward_kernel, grid, THREADS, out, lse, q, k, v, m, has, int(causal), scale,
           int(probs is not None))
    if probs is not None and probs.size:
        launch(_probs_kernel, grid_1d(min(probs.size, _MAX_THREADS))[0], 256, probs, lse, q,
               k, m, has, int(causal), scale)


def attention_backward(dq, dk, dv, dout, q, k, v, out, lse, mask, workspace, scale, causal,
                       probs, dprobs):
    nb, tq, nh, _ = q.shape
    tk = k.shape[1]
    if nb * nh == 0:
        return
    m, has = _mask_arg(mask, _dummy_mask(lse))
    extra = (probs, dprobs, 1) if dprobs is not None else (q, q, 0)  # q: a never-read 4-D
    if (dk is not None or dv is not None) and tk > 0:
        grid = ((tk + BK - 1) // BK, nb * nh)
        launch(_dkdv_kernel, grid, THREADS, dk if dk is not None else k,
               dv if dv is not None else v, dout, q, k, v, out, lse, m, has, int(causal),
               int(dk is not None), int(dv is not None), scale, *extra)
    if dq is not None and tq > 0:
        grid = ((tq + BQ - 1) // BQ, nb * nh)
        launch(_dq_kernel, grid, THREADS, dq, dout, q, k, v, out, lse, m, has, int(causal),
               scale, *extra)
