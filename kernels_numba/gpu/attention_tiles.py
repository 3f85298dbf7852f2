"""Device helpers of the attention kernels (gpu/attention.py, gpu/attention_backward.py):
tile loads into shared memory, the masked score, the recomputed probability tile of the
backward, and the dropout factor (the CPU twin's `keep`: ops.dropout's hash of the flat
(B, H, Tq, Tk) index, so both devices drop the same probabilities)."""

import math

import numpy as np
from numba import float32

from kernels_numba._cuda import device_function
from kernels_numba.gpu.dropout import _hash_uniform

BQ = 16
BK = 16
THREADS = BQ * BK
MAXD = 128
NEG_INF = np.float32(-np.inf)  # a float32 constant in the kernels (no .f64)


@device_function
def score_or_masked(s, mask, has_mask, causal, bb, i, j):
    """(value, dropped): Keras's -1e9 where the mask or causality drops a score."""
    if causal and j > i:
        return float32(-1e9), True
    if has_mask and not mask[bb, i, j] > float32(0.5):
        return float32(-1e9), True
    return s, False


@device_function
def keep_factor(key, bb, h, i, j, nh, tq, tk, rate, keep_scale):
    """keep_scale where the hash of (bb, h, i, j)'s flat index is >= rate, else 0."""
    idx = ((bb * nh + h) * tq + i) * tk + j
    return keep_scale if _hash_uniform(key, idx) >= rate else float32(0.0)


@device_function
def load_rows_q(qs, q, bb, h, i0, tid):
    """A query tile (BQ rows of D, zero padded to MAXD) into shared memory."""
    tq, d = q.shape[1], q.shape[3]
    for e in range(tid, BQ * MAXD, THREADS):
        rr = e // MAXD
        dd = e - rr * MAXD
        i = i0 + rr
        qs[rr, dd] = q[bb, i, h, dd] if (i < tq and dd < d) else float32(0.0)


@device_function
def load_keys(ks, vs, k, v, bb, h, j0, tid):
    """A key tile of k and v (BK rows, zero padded) into shared memory."""
    tk, d, dv = k.shape[1], k.shape[3], v.shape[3]
    for e in range(tid, BK * MAXD, THREADS):
        cc = e // MAXD
        dd = e - cc * MAXD
        j = j0 + cc
        ks[cc, dd] = k[bb, j, h, dd] if (j < tk and dd < d) else float32(0.0)
        vs[cc, dd] = v[bb, j, h, dd] if (j < tk and dd < dv) else float32(0.0)


@device_function
def load_rows(qs, dos, lses, deltas, q, dout, out, lse, probs, dprobs, has_dprobs, bb, h,
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
def probs_tile(ps, dss, qs, ks, vs, dos, lses, deltas, mask, has_mask, causal, scale,
               dprobs, has_dprobs, key, rate, keep_scale, bb, h, i0, j0, r, c, nh, tq, tk,
               d, dv):
    """Thread (r, c): P recomputed from lse (times its dropout factor: dv sums the dropped
    P) and dS * scale = P * (dP - delta) * scale, dP = (dout . v) * factor + dprobs."""
    i = i0 + r
    j = j0 + c
    p = float32(0.0)
    ds = float32(0.0)
    if i < tq and j < tk:
        acc = float32(0.0)
        for dd in range(d):
            acc += qs[r, dd] * ks[c, dd]
        s, dropped = score_or_masked(acc * scale, mask, has_mask, causal, bb, i, j)
        if lses[r] == NEG_INF:
            p = float32(1.0) / float32(tk)
        else:
            p = math.exp(s - lses[r])
        f = float32(1.0)
        if rate > float32(0.0):
            f = keep_factor(key, bb, h, i, j, nh, tq, tk, rate, keep_scale)
        if not dropped:
            dp = float32(0.0)
            for dd in range(dv):
                dp += dos[r, dd] * vs[c, dd]
            dp *= f
            if has_dprobs != 0:
                dp += dprobs[bb, h, i, j]
            ds = p * (dp - deltas[r]) * scale
        p *= f
    ps[r, c] = p
    dss[r, c] = ds
