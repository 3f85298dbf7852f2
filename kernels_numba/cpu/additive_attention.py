"""CPU twin of kernels_numba.ops.additive_attention, and the per-row code CUDA shares.

`forward_row`, `backward_row` and `backward_key` are plain Python over one query row
(one key): the CPU compiles them with numba.njit inside prange loops, and
gpu/additive_attention.py compiles the very same code as device functions (one thread
per row), each with its own compiled helpers bound by `rebind` (device code cannot call
a CPU function), so both devices compute the same arithmetic in the same order. Rows
own their outputs (out, lse, dq, a dscale partial row); keys own dk, dv; the dscale
partials are summed in row order: deterministic, no atomics.
"""

import math
import types

import numba
import numpy as np

from kernels_numba.cpu import attention as _attention

MASKED = np.float32(-1e9)  # Keras's large negative for dropped scores
NEG_INF = np.float32(-np.inf)
ZERO = np.float32(0.0)
ONE = np.float32(1.0)
HALF = np.float32(0.5)


def rebind(f, **names):
    """f with some global names bound to other objects (the device's compiled helpers)."""
    return types.FunctionType(f.__code__, {**f.__globals__, **names}, f.__name__,
                              f.__defaults__)


def score(q, k, scale, use_scale, vmask, has_vm, causal, b, i, j):
    """(s, dropped): sum_d scale_d tanh(q_i + k_j), or Keras's -1e9 where masked."""
    if causal and j > i:
        return MASKED, True
    if has_vm and not vmask[b, j] > HALF:
        return MASKED, True
    s = ZERO
    for dd in range(q.shape[2]):
        t = math.tanh(q[b, i, dd] + k[b, j, dd])
        s += scale[dd] * t if use_scale else t
    return s, False


def factor(has_drop, key, rate, keep_scale, b, i, j, tq, tk):
    """The dropout factor of (b, i, j): ops.attention's keep with one head."""
    if not has_drop:
        return ONE
    return keep_fn(key, b, 0, i, j, 1, tq, tk, rate, keep_scale)  # noqa: F821 (rebind)


def prob(s, row_lse, tk):
    """P from the forward's lse; -inf marks a fully masked row: uniform."""
    if row_lse == NEG_INF:
        return ONE / np.float32(tk)
    return math.exp(s - row_lse)


def forward_row(out, lse, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal,
                probs, want_probs, has_drop, key, rate, keep_scale, b, i):
    tq, tk, dv = q.shape[1], k.shape[1], v.shape[2]
    m = NEG_INF
    total = ZERO
    seen = False
    for e in range(dv):
        out[b, i, e] = ZERO
    j_end = min(tk, i + 1) if causal and not has_vm else tk  # the rest is masked anyway
    for j in range(j_end):
        s, dropped = score_fn(q, k, scale, use_scale, vmask, has_vm, causal, b, i, j)  # noqa: F821
        seen = seen or not dropped
        if s > m:  # online softmax: rescale what was summed under the old max
            alpha = math.exp(m - s)
            total *= alpha
            for e in range(dv):
                out[b, i, e] *= alpha
            m = s
        p = math.exp(s - m)
        total += p
        pf = p * factor_fn(has_drop, key, rate, keep_scale, b, i, j, tq, tk)  # noqa: F821
        for e in range(dv):
            out[b, i, e] += pf * v[b, j, e]
    zero_row = has_qm and not qmask[b, i] > HALF  # Keras: where(query_mask, out, 0)
    for e in range(dv):
        out[b, i, e] = ZERO if zero_row else out[b, i, e] / total
    row_lse = m + math.log(total) if (seen or total != total) else NEG_INF
    lse[b, i] = row_lse
    if want_probs:
        for j in range(tk):
            s, _ = score_fn(q, k, scale, use_scale, vmask, has_vm, causal, b, i, j)  # noqa: F821
            probs[b, i, j] = prob_fn(s, row_lse, tk) * factor_fn(  # noqa: F821
                has_drop, key, rate, keep_scale, b, i, j, tq, tk)


def _ds(dout, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal, out, lse,
        probs, dprobs, has_dprobs, has_drop, key, rate, keep_scale, delta, b, i, j):
    """(P * factor, dS) of score (b, i, j): dS = P (dP - delta), 0 where masked."""
    tq, tk, dv = q.shape[1], k.shape[1], v.shape[2]
    s, dropped = score_fn(q, k, scale, use_scale, vmask, has_vm, causal, b, i, j)  # noqa: F821
    p = prob_fn(s, lse[b, i], tk)  # noqa: F821
    f = factor_fn(has_drop, key, rate, keep_scale, b, i, j, tq, tk)  # noqa: F821
    dp = ZERO
    if not (has_qm and not qmask[b, i] > HALF):
        for e in range(dv):
            dp += dout[b, i, e] * v[b, j, e]
    dp *= f
    if has_dprobs:
        dp += dprobs[b, i, j] * f
    return p * f, ZERO if dropped else p * (dp - delta)


def row_delta(dout, out, probs, dprobs, has_dprobs, b, i):
    """delta_i = sum_j P dP = sum(dout * out) (+ sum(probs * dprobs))."""
    acc = ZERO
    for e in range(out.shape[2]):
        acc += dout[b, i, e] * out[b, i, e]
    if has_dprobs:
        for j in range(probs.shape[2]):
            acc += probs[b, i, j] * dprobs[b, i, j]
    return acc


def backward_row(dq, want_q, ws, want_s, dout, q, k, v, scale, use_scale, vmask, has_vm,
                 qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs, has_drop, key,
                 rate, keep_scale, b, i):
    """dq of row i and its dscale partial ws[b * Tq + i, :D] (both owned by the row;
    ws[row, D] holds the row's delta)."""
    tq, d = q.shape[1], q.shape[2]
    row = b * tq + i
    for dd in range(d):
        if want_q:
            dq[b, i, dd] = ZERO
        if want_s:
            ws[row, dd] = ZERO
    delta = ws[row, d]
    for j in range(k.shape[1]):
        _, ds = ds_fn(dout, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm,  # noqa: F821
                      causal, out, lse, probs, dprobs, has_dprobs, has_drop, key, rate,
                      keep_scale, delta, b, i, j)
        if ds == ZERO:
            continue
        for dd in range(d):
            t = math.tanh(q[b, i, dd] + k[b, j, dd])
            g = ds * (ONE - t * t)
            if want_q:
                dq[b, i, dd] += g * scale[dd] if use_scale else g
            if want_s:
                ws[row, dd] += ds * t


def backward_key(dk, want_k, dv, want_v, ws, dout, q, k, v, scale, use_scale, vmask, has_vm,
                 qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs, has_drop, key,
                 rate, keep_scale, b, j):
    """dk and dv of key j (owned by the key), over the query rows in order."""
    tq, d, dvs = q.shape[1], k.shape[2], v.shape[2]
    for dd in range(d):
        if want_k:
            dk[b, j, dd] = ZERO
    for e in range(dvs):
        if want_v:
            dv[b, j, e] = ZERO
    for i in range(q.shape[1]):
        delta = ws[b * tq + i, d]
        pf, ds = ds_fn(dout, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm,  # noqa: F821
                       causal, out, lse, probs, dprobs, has_dprobs, has_drop, key, rate,
                       keep_scale, delta, b, i, j)
        if want_v and not (has_qm and not qmask[b, i] > HALF):
            for e in range(dvs):
                dv[b, j, e] += pf * dout[b, i, e]
        if want_k and ds != ZERO:
            for dd in range(d):
                t = math.tanh(q[b, i, dd] + k[b, j, dd])
                g = ds * (ONE - t * t)
                dk[b, j, dd] += g * scale[dd] if use_scale else g


def compile_family(jit, keep_fn):
    """The row functions compiled by `jit` with their helpers bound: (row_delta,
    forward_row, backward_row, backward_key)."""
    score_fn = jit(score)
    prob_fn = jit(prob)
    factor_fn = jit(rebind(factor, keep_fn=keep_fn))
    row_delta_fn = jit(row_delta)
    helpers = dict(score_fn=score_fn, prob_fn=prob_fn, factor_fn=factor_fn,
                   row_delta_fn=row_delta_fn)
    ds_fn = jit(rebind(_ds, **helpers))
    helpers["ds_fn"] = ds_fn
    return (row_delta_fn, *(jit(rebind(f, **helpers))
                            for f in (forward_row, backward_row, backward_key)))


_inline = numba.njit(inline="always")
_row_delta, _fwd_row, _bwd_row, _bwd_key = compile_family(_inline, _attention._keep)
_DUMMY1 = np.ones(1, np.float32)
_DUMMY2 = np.zeros((1, 1), np.float32)
_DUMMY3 = np.zeros((1, 1, 1), np.float32)


@numba.njit(parallel=True)
def _forward(out, lse, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal,
             probs, want_probs, has_drop, key, rate, keep_scale):
    nb, tq = q.shape[0], q.shape[1]
    for t in numba.prange(nb * tq):
        _fwd_row(out, lse, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal,
                 probs, want_probs, has_drop, key, rate, keep_scale, t // tq, t % tq)


@numba.njit(parallel=True)
def _backward(dq, want_q, dk, want_k, dv, want_v, ws, want_s, dout, q, k, v, scale, use_scale,
              vmask, has_vm, qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs,
              has_drop, key, rate, keep_scale):
    nb, tq, tk, d = q.shape[0], q.shape[1], k.shape[1], q.shape[2]
    for t in numba.prange(nb * tq):
        ws[t, d] = _row_delta(dout, out, probs, dprobs, has_dprobs, t // tq, t % tq)
    if want_q or want_s:
        for t in numba.prange(nb * tq):
            _bwd_row(dq, want_q, ws, want_s, dout, q, k, v, scale, use_scale, vmask, has_vm,
                     qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs, has_drop,
                     key, rate, keep_scale, t // tq, t % tq)
    if want_k or want_v:
        for t in numba.prange(nb * tk):
            _bwd_key(dk, want_k, dv, want_v, ws, dout, q, k, v, scale, use_scale, vmask, has_vm,
                     qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs, has_drop,
                     key, rate, keep_scale, t // tk, t % tk)


# launchers

def _opt(a, dummy):
    return (a, True) if a is not None else (dummy, False)


def additive_attention_forward(out, lse, q, k, v, scale, value_mask, query_mask, causal,
                               probs, drop):
    if out.size == 0 and lse.size == 0:
        return
    _forward(out, lse, q, k, v, *_opt(scale, _DUMMY1), *_opt(value_mask, _DUMMY2),
             *_opt(query_mask, _DUMMY2), causal, *_opt(probs, _DUMMY3),
             *_attention._drop_key(drop))


def additive_attention_backward(dq, dk, dv, dscale, dout, q, k, v, scale, value_mask,
                                query_mask, out, lse, workspace, causal, probs, dprobs, drop):
    has_dprobs = dprobs is not None
    _backward(*_opt(dq, _DUMMY3), *_opt(dk, _DUMMY3), *_opt(dv, _DUMMY3), workspace,
              dscale is not None, dout, q, k, v, *_opt(scale, _DUMMY1),
              *_opt(value_mask, _DUMMY2), *_opt(query_mask, _DUMMY2), causal, out, lse,
              probs if has_dprobs else _DUMMY3, dprobs if has_dprobs else _DUMMY3,
              has_dprobs, *_attention._drop_key(drop))
    if dscale is not None:
        _sum_rows(dscale, workspace, q.shape[0] * q.shape[1])


@numba.njit
def _sum_rows(dscale, ws, rows):
    """dscale = the rows' partials summed in row order (the CUDA kernel's order)."""
    for dd in range(dscale.size):
        acc = ZERO
        for r in range(rows):
            acc += ws[r, dd]
        dscale[dd] = acc
