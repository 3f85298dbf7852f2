"""Fused scaled-dot-product attention (the FlashAttention idea) and its backward.

Layout: Keras's projected multi-head tensors, so no transposes are needed around it:
q (B, Tq, H, D), k (B, Tk, H, D), v (B, Tk, H, Dv), out (B, Tq, H, Dv).
Per batch b and head h:  out = softmax(q k^T * scale, masked) v.

- Masking (Keras 3's rule): a score is kept where mask[b, i, j] > 0.5 (mask float32
  (B, Tq, Tk), the same for every head; None: no mask) and, with causal=True, where
  j <= i (top-left aligned, as Keras's causal mask when Tq != Tk). A dropped score is
  replaced by -1e9 (Keras's large negative), so a fully masked row attends uniformly
  to every key: out = mean of v, as Keras 3's MultiHeadAttention (dot_product_attention
  path) gives. Dropped scores get no gradient.
- The full (Tq, Tk) score matrix never exists: the forward walks key tiles with an
  online softmax and keeps only lse (B, H, Tq), the per-row logsumexp of the scores
  (-inf marks a fully masked row). The backward recomputes the scores tile by tile.
  CPU: one task per (b, h), tiles of 64 x 64 in a workspace from
  `attention_workspace_shape` (its size does not depend on Tq or Tk). CUDA: tiles of
  16 x 16 in shared memory, head size D, Dv <= 128.
- probs= (optional): the probabilities materialised, (B, H, Tq, Tk), for Keras's
  return_attention_scores path (softmax times the keep mask: a fully masked row is all
  zeros there, and so is its out row); the backward then takes their gradient dprobs.
- Dropout (dropout_rate > 0, Keras's training path): the probabilities are dropped
  after the softmax and the kept ones scaled by 1/(1-rate) before the weighted sum
  (probs= stays the pre-dropout softmax, as Keras's returned scores). The keep decision
  of score (b, h, i, j) is ops.dropout's counter-based hash of its flat (B, H, Tq, Tk)
  index under the (seed, step) key: nothing is stored, the backward regenerates it
  (pass the same seed and step), and CPU and CUDA agree bit for bit. `step` is an int
  or ops.dropout's uint32 (2,) steps buffer (a replayed launch reads the step itself).
  `attention_keep_mask` writes the mask (for tests).
- Determinism: no atomics; dk/dv are accumulated by the block (CUDA) or task (CPU) that
  owns a key tile, looping over the query tiles in order.
Conventions: outputs first; ops never allocate; dq, dk, dv are overwritten.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.device import device_of
from kernels_numba.dispatch import impl
from kernels_numba.ops.dropout import key_and_steps

__all__ = ["attention_forward", "attention_backward", "attention_workspace_shape",
           "attention_keep_mask", "ATTENTION_MAX_HEAD_DIM_CUDA"]
FAMILY = "attention"
TILE_CPU = 64  # query rows and keys per CPU tile
ATTENTION_MAX_HEAD_DIM_CUDA = 128  # shared-memory tiles are sized for this


def attention_workspace_shape(q_shape, v_shape, device="cpu"):
    """Shape of the float32 workspace of attention_forward/backward.

    CPU: per (b, h) task two score tiles, an output tile and row statistics (linear in
    nothing but B*H and Dv: the sequence lengths do not enter). CUDA: (1,) (tiles live
    in shared memory).
    """
    if device == "cuda":
        return (1,)
    b, _, h, _ = (int(s) for s in q_shape)
    dv = int(v_shape[3])
    t = TILE_CPU
    return (max(b * h, 1), 2 * t * t + t * dv + 4 * t)


def _scale(op, scale, d):
    if scale is None:
        return np.float32(1.0 / np.sqrt(max(d, 1)))
    try:
        s = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected scale to be a number or None; received "
                        f"{scale!r}") from None
    if not np.isfinite(s):
        raise ValueError(f"{op}: expected a finite scale; received {scale!r}")
    return np.float32(s)


def _check_qkv(op, q, k, v, mask, causal, workspace):
    b, tq, h, d = _check.array(op, "q", q, ndim=4)
    _, tk, _, _ = _check.array(op, "k", k, shape=(b, None, h, d), ndim=4)
    dv = _check.array(op, "v", v, shape=(b, tk, h, None), ndim=4)[3]
    if mask is not None:
        _check.array(op, "mask", mask, shape=(b, tq, tk))
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"{op}: expected causal to be a bool; received {causal!r}")
    device = device_of(q)
    _check.array(op, "workspace", workspace,
                 shape=attention_workspace_shape(q.shape, v.shape, device))
    if device == "cuda" and max(d, dv) > ATTENTION_MAX_HEAD_DIM_CUDA:
        raise ValueError(f"{op}: expected head sizes D, Dv <= {ATTENTION_MAX_HEAD_DIM_CUDA} "
                         f"on CUDA; received D={d}, Dv={dv}")
    return b, tq, tk, h, d, dv


def _dropout(op, rate, seed, step, **arrays):
    """(rate, 1/(1-rate), key, steps) for the kernels, or None when rate == 0."""
    try:
        rate = float(rate)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected dropout_rate to be a number; received "
                        f"{rate!r}") from None
    if not (np.isfinite(rate) and 0.0 <= rate < 1.0):
        raise ValueError(f"{op}: expected dropout_rate in [0, 1); received {rate!r}")
    if rate == 0.0:
        return None
    key, steps = key_and_steps(op, seed, step, **arrays)
    return np.float32(rate), np.float32(1.0 / (1.0 - rate)), key, steps


def attention_keep_mask(out, *, rate, seed, step):
    """out (B, H, Tq, Tk) float32 = the dropout factors attention_forward applies for
    (rate, seed, step): 1/(1-rate) where a probability is kept, 0 where dropped."""
    op = "attention_keep_mask"
    _check.array(op, "out", out, ndim=4)
    drop = _dropout(op, rate, seed, step, out=out)
    if drop is None:
        raise ValueError(f"{op}: expected rate in (0, 1); received {rate!r}")
    impl(op, FAMILY, out=out)(out, *drop)


def attention_forward(out, lse, q, k, v, mask, workspace, *, scale=None, causal=False,
                      probs=None, dropout_rate=0.0, seed=0, step=0):
    """out = softmax(q k^T * scale + mask) v per (batch, head); lse for the backward.

    Args:
        out: (B, Tq, H, Dv) float32, output.
        lse: (B, H, Tq) float32, output (row logsumexp of the scaled, masked scores;
            -inf for a fully masked row).
        q: (B, Tq, H, D) float32. k: (B, Tk, H, D) float32. v: (B, Tk, H, Dv) float32.
        mask: (B, Tq, Tk) float32 or None (kept where > 0.5).
        workspace: float32 of attention_workspace_shape(q.shape, v.shape, device).
        scale: float or None (1/sqrt(D)).
        causal: bool, keep only keys j <= i.
        probs: (B, H, Tq, Tk) float32 or None, output: the attention probabilities
            materialised (Keras's return_attention_scores path: softmax times the keep
            mask, so a fully masked row is all zeros - and then so is its out row, and
            its lse is +inf); before dropout.
        dropout_rate: float in [0, 1): dropout on the probabilities (training).
        seed, step: the dropout key (ops.dropout's: step an int >= 0 or a uint32 (2,)
            steps buffer on q's device); the backward needs the same.
    """
    op = "attention_forward"
    b, tq, tk, h, d, dv = _check_qkv(op, q, k, v, mask, causal, workspace)
    _check.array(op, "out", out, shape=(b, tq, h, dv))
    _check.array(op, "lse", lse, shape=(b, h, tq))
    if probs is not None:
        _check.array(op, "probs", probs, shape=(b, h, tq, tk))
    drop = _dropout(op, dropout_rate, seed, step, q=q)
    fn = impl(op, FAMILY, out=out, lse=lse, q=q, k=k, v=v, mask=mask, workspace=workspace,
              probs=probs)
    fn(out, lse, q, k, v, mask, workspace, _scale(op, scale, d), bool(causal), probs, drop)


def attention_backward(dq, dk, dv, dout, q, k, v, out, lse, mask, workspace, *, scale=None,
                       causal=False, probs=None, dprobs=None, dropout_rate=0.0, seed=0,
                       step=0):
    """Gradients of sum(out * dout) wrt q, k, v (each overwritten; None: skip).

    Args:
        dq: (B, Tq, H, D) float32 or None. dk: (B, Tk, H, D) float32 or None.
        dv: (B, Tk, H, Dv) float32 or None.
        dout: (B, Tq, H, Dv) float32.
        q, k, v, mask, scale, causal: as given to attention_forward.
        out, lse: from attention_forward.
        workspace: as for attention_forward.
        probs, dprobs: (B, H, Tq, Tk) float32 or None: the probs attention_forward wrote
            and the gradient wrt them (both or neither; probs alone is ignored).
        dropout_rate, seed, step: as given to attention_forward (the mask is regenerated).
    """
    op = "attention_backward"
    b, tq, tk, h, d, dvs = _check_qkv(op, q, k, v, mask, causal, workspace)
    for name, a, shape in (("dq", dq, q.shape), ("dk", dk, k.shape), ("dv", dv, v.shape)):
        if a is not None:
            _check.array(op, name, a, shape=tuple(shape))
    _check.array(op, "dout", dout, shape=(b, tq, h, dvs))
    _check.array(op, "out", out, shape=(b, tq, h, dvs))
    _check.array(op, "lse", lse, shape=(b, h, tq))
    if dprobs is not None:
        if probs is None:
            raise ValueError(f"{op}: expected probs (from attention_forward) with dprobs; "
                             f"received probs=None")
        _check.array(op, "probs", probs, shape=(b, h, tq, tk))
        _check.array(op, "dprobs", dprobs, shape=(b, h, tq, tk))
    drop = _dropout(op, dropout_rate, seed, step, q=q)
    fn = impl(op, FAMILY, dq=dq, dk=dk, dv=dv, dout=dout, q=q, k=k, v=v, out=out, lse=lse,
              mask=mask, workspace=workspace, probs=probs, dprobs=dprobs)
    fn(dq, dk, dv, dout, q, k, v, out, lse, mask, workspace, _scale(op, scale, d),
       bool(causal), probs, dprobs, drop)
