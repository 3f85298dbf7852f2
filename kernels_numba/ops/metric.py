"""Metric accumulators: confusion counts over thresholds and top-k matches.

Deterministic on both devices (no float atomics): `confusion_update` gives each
threshold to one CUDA block, which sums its elements with a fixed-order block tree and
adds the totals to its own accumulator slots; the top-k ops write one value per row
(summed afterwards by ops.sum_into). Keras's rules: a prediction is positive when
p > threshold; a label is positive when it is nonzero (cast to bool); `weights`
(empty, or one per element) weight each element's count.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["confusion_update", "top_k_matches", "top_k_matches_onehot"]
FAMILY = "metric"


def confusion_update(tp, fp, tn, fn, preds, targets, thresholds, weights, *, clip=False,
                     sigmoid=False):
    """tp[i] += sum w [p > thr_i and t != 0], fp/tn/fn likewise (accumulated).

    Args:
        tp, fp, tn, fn: (T,) float32 accumulators.
        preds: float32, any non-empty shape.
        targets: float32, same shape as preds.
        thresholds: (T,) float32.
        weights: (0,) float32 (unweighted) or float32 with preds.size elements.
        clip: clip p to [0, 1] first (Keras's AUC path).
        sigmoid: p = sigmoid(p) first (AUC(from_logits=True)).
    """
    op = "confusion_update"
    shape = _check.array(op, "preds", preds)
    if not shape or 0 in shape:
        raise ValueError(f"{op}: expected preds with at least one element; received {shape}")
    _check.array(op, "targets", targets, shape=shape)
    (t,) = _check.array(op, "thresholds", thresholds, ndim=1)
    for name, a in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn)):
        _check.array(op, name, a, shape=(t,))
    (w,) = _check.array(op, "weights", weights, ndim=1)
    if w not in (0, int(np.prod(shape))):
        raise ValueError(f"{op}: expected weights with 0 or {int(np.prod(shape))} elements; "
                         f"received {w}")
    impl(op, FAMILY, tp=tp, fp=fp, tn=tn, fn=fn, preds=preds, targets=targets,
         thresholds=thresholds, weights=weights)(
        tp, fp, tn, fn, preds, targets, thresholds, weights, int(bool(clip)), int(bool(sigmoid)))


def _k(op, k):
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"{op}: expected k to be an int >= 1; received {k!r}")
    return int(k)


def top_k_matches(out, probs, labels, *, k):
    """out[n] = 1 if probs[n, labels[n]] >= the k-th largest of probs[n] (ties count,
    as Keras's in_top_k), else 0; an out-of-range label never matches.

    Args:
        out: (N,) float32 output.
        probs: (N, K) float32.
        labels: (N,) int32.
        k: int >= 1.
    """
    op = "top_k_matches"
    n, c = _check.array(op, "probs", probs, ndim=2)
    if c == 0:
        raise ValueError(f"{op}: expected probs with K >= 1 classes; received {(n, c)}")
    _check.array(op, "labels", labels, shape=(n,), dtype=np.int32)
    _check.array(op, "out", out, shape=(n,))
    impl(op, FAMILY, out=out, probs=probs, labels=labels)(out, probs, labels, _k(op, k))


def top_k_matches_onehot(out, probs, targets, *, k):
    """top_k_matches with labels = argmax(targets[n]) (first maximum).

    Args:
        out: (N,) float32 output.
        probs: (N, K) float32.
        targets: (N, K) float32.
        k: int >= 1.
    """
    op = "top_k_matches_onehot"
    n, c = _check.array(op, "probs", probs, ndim=2)
    if c == 0:
        raise ValueError(f"{op}: expected probs with K >= 1 classes; received {(n, c)}")
    _check.array(op, "targets", targets, shape=(n, c))
    _check.array(op, "out", out, shape=(n,))
    impl(op, FAMILY, out=out, probs=probs, targets=targets)(out, probs, targets, _k(op, k))
