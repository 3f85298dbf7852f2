"""CPU twin of kernels_numba.ops.attention: FlashAttention-2 on 64 x 64 tiles.

One parallel task per (batch, head) owns its rows of out/lse and of dq, dk, dv, so no
two threads write the same element (deterministic). Inside a task the tile products
are single-threaded cblas_sgemm calls on the operands in place (row stride H*D: the
(B, T, H, D) layout needs no copies), or plain loops without a bound BLAS. Scratch per
task: the score tile S, the probability-gradient tile, the output tile and row
statistics, all from the workspace row of the task (memory independent of T).

Dropout on the probabilities (training): `keep(key, ...)` is the keep factor of score
(b, h, i, j), a pure function of the (seed, step) key and that flat index (ops.dropout's
hash), recomputed in the backward instead of stored; the CUDA kernels call the same
function, so the masks agree bit for bit.
"""

import numba
import numpy as np

from kernels_numba._blas import NO_TRANS, TRANS
from kernels_numba.cpu import dropout as _rng
from kernels_numba.cpu import gemm as _gemm

T = 64  # tile size (rows and keys); must match ops.attention.TILE_CPU
MASKED = np.float32(-1e9)  # Keras's large negative for dropped scores
_NEG_INF = np.float32(-np.inf)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)

_DUMMY4 = np.zeros((1, 1, 1, 1), np.float32)  # stands in for an absent probs/dprobs
_BLAS = _gemm._SGEMM is not None
_MARKER = _gemm._INT_MARKER if _BLAS else np.int32(0)


def _address():
    return _gemm.sgemm_address() if _BLAS else 0


@numba.njit(nogil=True, inline="always")
def _mm(use_blas, address, marker, ta, tb, m, n, k, a, ao, lda, b, bo, ldb, beta, c, co,
        ldc):
    """c[co:] (m x n, ld ldc) = op(a) @ op(b) + beta * c on flat float32 arrays."""
    if m == 0 or n == 0:
        return
    if use_blas:
        _gemm._sgemm_at(address, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n,
                        k, a.ctypes.data + 4 * ao, lda, b.ctypes.data + 4 * bo, ldb, beta,
                        c.ctypes.data + 4 * co, ldc, marker)
        return
    for i in range(m):
        for j in range(n):
            s = _ZERO
            for p in range(k):
                av = a[ao + p * lda + i] if ta else a[ao + i * lda + p]
                bv = b[bo + j * ldb + p] if tb else b[bo + p * ldb + j]
                s += av * bv
            if beta != 0:
                s += beta * c[co + i * ldc + j]
            c[co + i * ldc + j] = s


def keep(key, bb, h, i, j, nh, tq, tk, rate, keep_scale):
    """Dropout factor of score (bb, h, i, j): keep_scale (1/(1-rate)) where the hash of
    the flat (B, H, Tq, Tk) index under key is >= rate, else 0. Shared with the CUDA
    kernels. (No parameter named `inv`: _forward's prange body assigns that name.)"""
    idx = ((bb * nh + h) * tq + i) * tk + j
    return keep_scale if _hash_uniform(key, idx) >= rate else _ZERO


_hash_uniform = numba.njit(inline="always")(_rng.hash_uniform)
_keep = numba.njit(inline="always")(keep)


@numba.njit(parallel=True, cache=True)
def _keep_mask(out, key, rate, keep_scale):
    nb, nh, tq, tk = out.shape
    for t in numba.prange(nb * nh):
        bb, h = t // nh, t % nh
        for i in range(tq):
            for j in range(tk):
                out[bb, h, i, j] = _keep(key, bb, h, i, j, nh, tq, tk, rate, keep_scale)


@numba.njit(nogil=True, inline="always")
def _score(s, mask, has_mask, causal, bb, i, j, tq, tk, scale):
    """The scaled score, or MASKED where the mask or causality drops it."""
    if causal and j > i:
        return MASKED, True
    if has_mask and not mask[(bb * tq + i) * tk + j] > _HALF:
        return MASKED, True
    return s * scale, False


@numba.njit(parallel=True, nogil=True, cache=True)
def _forward(use_blas, address, marker, out, lse, q, k, v, mask, has_mask, ws, nb, tq, tk,
             nh, d, dv, scale, causal, probs, want_probs, has_drop, key, rate, keep_scale):
    ld_q, ld_v = nh * d, nh * dv
    for task in numba.prange(nb * nh):
        bb, h = task // nh, task % nh
        wo = task * ws.shape[1]
        w = ws.reshape(-1)
        s_off, o_off = wo, wo + 2 * T * T
        m_off, l_off, u_off = o_off + T * dv, o_off + T * dv + T, o_off + T * dv + 2 * T
        for i0 in range(0, tq, T):
            mq = min(T, tq - i0)
            for r in range(mq):
                w[m_off + r] = _NEG_INF
                w[l_off + r] = _ZERO
                w[u_off + r] = _ZERO  # 1 once the row has an unmasked key
                for e in range(dv):
                    w[o_off + r * dv + e] = _ZERO
            # causal alone never drops a whole row: skip the tiles above the diagonal
            j_end = min(tk, i0 + mq) if causal and not has_mask else tk
            for j0 in range(0, j_end, T):
                mk = min(T, j_end - j0)
                qo = ((bb * tq + i0) * nh + h) * d
                ko = ((bb * tk + j0) * nh + h) * d
                _mm(use_blas, address, marker, False, True, mq, mk, d, q, qo, ld_q, k, ko,
                    ld_q, _ZERO, w, s_off, T)
                for r in range(mq):
                    mx = w[m_off + r]
                    for c in range(mk):
                        sc, dropped = _score(w[s_off + r * T + c], mask, has_mask, causal,
                                             bb, i0 + r, j0 + c, tq, tk, scale)
                        w[s_off + r * T + c] = sc
                        if not dropped:
                            w[u_off + r] = _ONE
                        if sc > mx:
                            mx = sc
                    alpha = np.exp(w[m_off + r] - mx) if mx != _NEG_INF else _ONE
                    total = _ZERO
                    for c in range(mk):
                        p = np.exp(w[s_off + r * T + c] - mx)
                        w[s_off + r * T + c] = p
                        total += p
                    w[l_off + r] = w[l_off + r] * alpha + total  # l: before dropout
                    w[m_off + r] = mx
                    if has_drop:  # out sums the dropped, rescaled probabilities
                        for c in range(mk):
                            w[s_off + r * T + c] *= _keep(key, bb, h, i0 + r, j0 + c, nh,
                                                          tq, tk, rate, keep_scale)
                    for e in range(dv):
                        w[o_off + r * dv + e] *= alpha
                vo = ((bb * tk + j0) * nh + h) * dv
                _mm(use_blas, address, marker, False, False, mq, dv, mk, w, s_off, T, v, vo,
                    ld_v, _ONE, w, o_off, dv)
            for r in range(mq):
                i = i0 + r
                inv = _ONE / w[l_off + r]
                for e in range(dv):
                    out[bb, i, h, e] = w[o_off + r * dv + e] * inv
                if w[u_off + r] > _ZERO or w[l_off + r] != w[l_off + r]:
                    lse[bb, h, i] = w[m_off + r] + np.log(w[l_off + r])
                elif want_probs:  # Keras's scores path: zeros (+inf: P = 0 everywhere)
                    lse[bb, h, i] = -_NEG_INF
                    for e in range(dv):
                        out[bb, i, h, e] = _ZERO
                else:
                    lse[bb, h, i] = _NEG_INF  # fully masked: uniform in the backward
            if want_probs:  # materialise P = exp(s - lse) * keep for this row block
                for j0 in range(0, tk, T):
                    mk = min(T, tk - j0)
                    _mm(use_blas, address, marker, False, True, mq, mk, d, q,
                        ((bb * tq + i0) * nh + h) * d, ld_q, k, ((bb * tk + j0) * nh + h) * d,
                        ld_q, _ZERO, w, s_off, T)
                    for r in range(mq):
                        for c in range(mk):
                            sc, dropped = _score(w[s_off + r * T + c], mask, has_mask, causal,
                                                 bb, i0 + r, j0 + c, tq, tk, scale)
                            probs[bb, h, i0 + r, j0 + c] = _ZERO if dropped else \
                                np.exp(sc - lse[bb, h, i0 + r])


@numba.njit(parallel=True, nogil=True, cache=True)
def _backward(use_blas, address, marker, dq, dk, dv, want_q, want_k, want_v, dout, q, k, v,
              out, lse, mask, has_mask, ws, nb, tq, tk, nh, d, dvs, scale, causal, probs,
              dprobs, has_dprobs, has_drop, key, rate, keep_scale):
    ld_q, ld_v = nh * d, nh * dvs
    for task in numba.prange(nb * nh):
        bb, h = task // nh, task % nh
        w = ws.reshape(-1)
        dout_f = dout.reshape(-1)
        p_off = task * ws.shape[1]
        g_off = p_off + T * T  # dP, then dS * scale
        dl_off = p_off + 2 * T * T + T * dvs  # delta_r = sum(dout * out) per row
        if want_q:
            for i in range(tq):
                for e in range(d):
                    dq[bb, i, h, e] = _ZERO
        for j in range(tk):
            for e in range(d):
                if want_k:
                    dk[bb, j, h, e] = _ZERO
            for e in range(dvs):
                if want_v:
                    dv[bb, j, h, e] = _ZERO
        for j0 in range(0, tk, T):
            mk = min(T, tk - j0)
            ko = ((bb * tk + j0) * nh + h) * d
            vo = ((bb * tk + j0) * nh + h) * dvs
            i_start = (j0 // T) * T if causal and not has_mask else 0
            for i0 in range(i_start, tq, T):
                mq = min(T, tq - i0)
                qo = ((bb * tq + i0) * nh + h) * d
                oo = ((bb * tq + i0) * nh + h) * dvs
                for r in range(mq):
                    s = _ZERO
                    for e in range(dvs):
                        s += dout[bb, i0 + r, h, e] * out[bb, i0 + r, h, e]
                    if has_dprobs:  # d(probs) joins dP: delta gains sum_j P dprobs
                        for j in range(tk):
                            s += probs[bb, h, i0 + r, j] * dprobs[bb, h, i0 + r, j]
                    w[dl_off + r] = s
                _mm(use_blas, address, marker, False, True, mq, mk, d, q, qo, ld_q, k, ko,
                    ld_q, _ZERO, w, p_off, T)
                _mm(use_blas, address, marker, False, True, mq, mk, dvs, dout_f, oo, ld_v, v,
                    vo, ld_v, _ZERO, w, g_off, T)
                for r in range(mq):
                    row_lse = lse[bb, h, i0 + r]
                    for c in range(mk):
                        sc, dropped = _score(w[p_off + r * T + c], mask, has_mask, causal,
                                             bb, i0 + r, j0 + c, tq, tk, scale)
                        if row_lse == _NEG_INF:
                            p = _ONE / np.float32(tk)
                        else:
                            p = np.exp(sc - row_lse)
                        gi = g_off + r * T + c
                        if has_drop:  # dP = d(dropped P) * factor; dv takes dropped P
                            f = _keep(key, bb, h, i0 + r, j0 + c, nh, tq, tk, rate, keep_scale)
                            w[gi] *= f
                            w[p_off + r * T + c] = p * f
                        else:
                            w[p_off + r * T + c] = p
                        if has_dprobs:
                            w[gi] += dprobs[bb, h, i0 + r, j0 + c]
                        w[gi] = _ZERO if dropped else p * (w[gi] - w[dl_off + r]) * scale
                if want_v:  # dv_j += P^T dout_i
                    _mm(use_blas, address, marker, True, False, mk, dvs, mq, w, p_off, T,
                        dout_f, oo, ld_v, _ONE, dv.reshape(-1), vo, ld_v)
                if want_k:  # dk_j += dS^T q_i
                    _mm(use_blas, address, marker, True, False, mk, d, mq, w, g_off, T, q,
                        qo, ld_q, _ONE, dk.reshape(-1), ko, ld_q)
                if want_q:  # dq_i += dS k_j
                    _mm(use_blas, address, marker, False, False, mq, d, mk, w, g_off, T, k,
                        ko, ld_q, _ONE, dq.reshape(-1), qo, ld_q)


# launchers

def _drop_key(drop):
    """(has_drop, key, rate, inv) from the op's (rate, inv, key, steps) or None; a steps
    buffer is read here (a host array on the CPU: nothing is recorded for replay)."""
    if drop is None:
        return False, np.uint64(0), _ZERO, _ONE
    rate, inv, key, steps = drop
    if steps is not None:
        key = np.uint64(_rng.dropout_key(int(key), int(steps[0]) | (int(steps[1]) << 32)))
    return True, np.uint64(key), np.float32(rate), np.float32(inv)


def attention_keep_mask(out, rate, inv, key, steps):
    _keep_mask(out, _drop_key((rate, inv, key, steps))[1], np.float32(rate), np.float32(inv))


def attention_forward(out, lse, q, k, v, mask, workspace, scale, causal, probs, drop=None):
    nb, tq, nh, d = q.shape
    tk, dv = k.shape[1], v.shape[3]
    if out.size == 0:
        return
    if tk == 0:  # no keys: softmax over nothing
        out.fill(np.nan)
        lse.fill(-np.inf)
        return
    m = mask.reshape(-1) if mask is not None else np.zeros(1, np.float32)
    _forward(_BLAS, _address(), _MARKER, out, lse, q.reshape(-1), k.reshape(-1),
             v.reshape(-1), m, mask is not None, workspace, nb, tq, tk, nh, d, dv, scale,
             causal, probs if probs is not None else _DUMMY4, probs is not None,
             *_drop_key(drop))


def attention_backward(dq, dk, dv, dout, q, k, v, out, lse, mask, workspace, scale, causal,
                       probs, dprobs, drop=None):
    nb, tq, nh, d = q.shape
    tk, dvs = k.shape[1], v.shape[3]
    dummy = np.zeros((1, 1, 1, 1), np.float32)
    if q.size == 0 and k.size == 0:
        return
    m = mask.reshape(-1) if mask is not None else np.zeros(1, np.float32)
    _backward(_BLAS, _address(), _MARKER, dq if dq is not None else dummy,
              dk if dk is not None else dummy, dv if dv is not None else dummy,
              dq is not None, dk is not None, dv is not None, dout,
              q.reshape(-1), k.reshape(-1), v.reshape(-1), out, lse, m, mask is not None,
              workspace, nb, tq, tk, nh, d, dvs, scale, causal,
              probs if dprobs is not None else _DUMMY4,
              dprobs if dprobs is not None else _DUMMY4, dprobs is not None,
              *_drop_key(drop))
