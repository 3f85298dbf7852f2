"""Fused additive (Bahdanau) attention, as keras.layers.AdditiveAttention, and its backward.

Per batch b: s[i, j] = sum_d scale[d] * tanh(q[b, i, d] + k[b, j, d]) (scale None: ones,
Keras's use_scale=False), out[b, i] = softmax_j(s[i, :], masked) @ v[b].
q (B, Tq, D), k (B, Tk, D), v (B, Tk, Dv), out (B, Tq, Dv), lse (B, Tq).

- Masks (Keras's Attention rules): value_mask (B, Tk) float32, a key kept where > 0.5,
  and causal (key j <= query i, top-left aligned): dropped scores become -1e9 (Keras
  subtracts 1e9: the same softmax in float32 for |s| < 32), so a fully masked row
  attends uniformly. query_mask (B, Tq): out rows where it is <= 0.5 are 0 (Keras's
  where), and pass no gradient.
- The (Tq, Tk, D) tanh tensor and the (Tq, Tk) scores never exist: one pass per query
  row with an online softmax keeps the row's lse; the backward recomputes each score
  (a row pass for dq and the per-row dscale partials, a key pass for dk and dv, then
  the partials summed in row order: no atomics, the same bits every run).
- Dropout (training): Keras drops the softmax weights and scales the kept ones by
  1/(1-rate); the keep factor of (b, i, j) is ops.attention's (the counter-based hash of
  the flat (B, 1, Tq, Tk) index under the (seed, step) key), regenerated in the
  backward; attention_keep_mask with H = 1 writes it.
- probs= (return_attention_scores): Keras's returned weights, softmax times the dropout
  factors (B, Tq, Tk); the backward then takes their gradient dprobs too.
CPU twin: numba prange over rows (and keys); CUDA: one thread per row (key), D, Dv any.
Conventions: outputs first; ops never allocate; gradients are overwritten.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.attention import _dropout

__all__ = ["additive_attention_forward", "additive_attention_backward",
           "additive_attention_workspace_shape"]
FAMILY = "additive_attention"


def additive_attention_workspace_shape(q_shape):
    """(B*Tq, D + 1) float32: the backward's per-row dscale partials and row deltas."""
    b, tq, d = (int(s) for s in q_shape)
    return (max(b * tq, 1), d + 1)


def _check_inputs(op, q, k, v, scale, value_mask, query_mask, causal):
    b, tq, d = _check.array(op, "q", q, ndim=3)
    tk = _check.array(op, "k", k, shape=(b, None, d), ndim=3)[1]
    dv = _check.array(op, "v", v, shape=(b, tk, None), ndim=3)[2]
    if scale is not None:
        _check.array(op, "scale", scale, shape=(d,))
    if value_mask is not None:
        _check.array(op, "value_mask", value_mask, shape=(b, tk))
    if query_mask is not None:
        _check.array(op, "query_mask", query_mask, shape=(b, tq))
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"{op}: expected causal to be a bool; received {causal!r}")
    return b, tq, tk, d, dv


def additive_attention_forward(out, lse, q, k, v, scale, value_mask=None, query_mask=None,
                               *, causal=False, probs=None, dropout_rate=0.0, seed=0,
                               step=0):
    """out = softmax(sum_d scale_d tanh(q_i + k_j), masked) (dropped) @ v; lse per row.

    Args:
        out: (B, Tq, Dv) float32, output. lse: (B, Tq) float32, output.
        q: (B, Tq, D), k: (B, Tk, D), v: (B, Tk, Dv) float32.
        scale: (D,) float32 or None (ones).
        value_mask: (B, Tk) float32 or None. query_mask: (B, Tq) float32 or None.
        causal: bool. probs: (B, Tq, Tk) float32 or None, output (Keras's weights).
        dropout_rate, seed, step: as ops.attention_forward's.
    """
    op = "additive_attention_forward"
    b, tq, tk, d, dv = _check_inputs(op, q, k, v, scale, value_mask, query_mask, causal)
    _check.array(op, "out", out, shape=(b, tq, dv))
    _check.array(op, "lse", lse, shape=(b, tq))
    if probs is not None:
        _check.array(op, "probs", probs, shape=(b, tq, tk))
    drop = _dropout(op, dropout_rate, seed, step, q=q)
    fn = impl(op, FAMILY, out=out, lse=lse, q=q, k=k, v=v, scale=scale,
              value_mask=value_mask, query_mask=query_mask, probs=probs)
    fn(out, lse, q, k, v, scale, value_mask, query_mask, bool(causal), probs, drop)


def additive_attention_backward(dq, dk, dv, dscale, dout, q, k, v, scale, value_mask,
                                query_mask, out, lse, workspace, *, causal=False, probs=None,
                                dprobs=None, dropout_rate=0.0, seed=0, step=0):
    """Gradients of sum(out * dout) (+ sum(probs * dprobs)) wrt q, k, v and scale.

    Args:
        dq (B, Tq, D), dk (B, Tk, D), dv (B, Tk, Dv), dscale (D,): float32 or None
            (skipped); overwritten. dscale needs scale.
        dout: (B, Tq, Dv) float32.
        q, k, v, scale, value_mask, query_mask, causal, dropout_*: as for the forward.
        out, lse: from the forward. workspace: additive_attention_workspace_shape(q).
        probs, dprobs: (B, Tq, Tk) float32 or None (both or neither).
    """
    op = "additive_attention_backward"
    b, tq, tk, d, dvs = _check_inputs(op, q, k, v, scale, value_mask, query_mask, causal)
    for name, a, shape in (("dq", dq, q.shape), ("dk", dk, k.shape), ("dv", dv, v.shape),
                           ("dscale", dscale, (d,))):
        if a is not None:
            _check.array(op, name, a, shape=tuple(shape))
    if dscale is not None and scale is None:
        raise ValueError(f"{op}: expected scale with dscale; received scale=None")
    _check.array(op, "dout", dout, shape=(b, tq, dvs))
    _check.array(op, "out", out, shape=(b, tq, dvs))
    _check.array(op, "lse", lse, shape=(b, tq))
    _check.array(op, "workspace", workspace, shape=additive_attention_workspace_shape(q.shape))
    if dprobs is not None:
        if probs is None:
            raise ValueError(f"{op}: expected probs (from the forward) with dprobs; "
                             f"received probs=None")
        _check.array(op, "probs", probs, shape=(b, tq, tk))
        _check.array(op, "dprobs", dprobs, shape=(b, tq, tk))
    drop = _dropout(op, dropout_rate, seed, step, q=q)
    fn = impl(op, FAMILY, dq=dq, dk=dk, dv=dv, dscale=dscale, dout=dout, q=q, k=k, v=v,
              scale=scale, value_mask=value_mask, query_mask=query_mask, out=out, lse=lse,
              workspace=workspace, probs=probs, dprobs=dprobs)
    fn(dq, dk, dv, dscale, dout, q, k, v, scale, value_mask, query_mask, out, lse, workspace,
       bool(causal), probs, dprobs, drop)
