"""Losses: per-sample values loss (N,) and the gradient wrt the input, scaled by `scale`.

kerasish reduces loss (N,) itself (e.g. mean on the device) and passes
scale = 1/N for Keras's "sum_over_batch_size". Gradients overwrite their output.
Conventions (Keras, keras-reference.md §1.9):
- labels are int32 (N,); a label outside [0, K) gives a NaN loss and a zero
  gradient row, and is never used as an index.
- probability inputs: p / sum(p) over the class axis (categorical losses), then
  clip to [1e-7, 1 - 1e-7]; the gradient through the clip is zero outside it.
- binary CE and MSE: per-sample = mean over all non-batch elements (Keras's mean
  over the last axis, then the batch mean, gives the same total).
- binary CE from logits uses the stable max(z,0) - z*t + log1p(exp(-|z|)) (as
  Keras's TF and torch backends), without clipping.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = [
    "softmax_sparse_ce_train",
    "softmax_sparse_ce_train_workspace_shape",
    "softmax_cross_entropy_forward",
    "softmax_cross_entropy_backward",
    "softmax_categorical_cross_entropy_forward",
    "softmax_categorical_cross_entropy_backward",
    "sparse_categorical_crossentropy_forward",
    "sparse_categorical_crossentropy_backward",
    "categorical_crossentropy_forward",
    "categorical_crossentropy_backward",
    "binary_crossentropy_forward",
    "binary_crossentropy_backward",
    "binary_crossentropy_logits_forward",
    "binary_crossentropy_logits_backward",
    "mse_forward",
    "mse_backward",
]
FAMILY = "loss"
# Blocks of the fused training loss on CUDA (their partial sums sit in the workspace).
TRAIN_MAX_BLOCKS = 64


def _classes(op, name, a):
    """Check a (N, K) float32 input with N, K >= 1; returns (N, K)."""
    shape = _check.array(op, name, a, ndim=2)
    if 0 in shape:
        raise ValueError(f"{op}: expected {name} with shape (N >= 1, K >= 1); received {shape}")
    return shape


def _samples(op, name, a):
    """Check a (N, ...) float32 input with no empty axis; returns its shape."""
    shape = _check.array(op, name, a)
    if not shape or 0 in shape:
        raise ValueError(
            f"{op}: expected {name} with shape (N >= 1, ...) and no empty axis; received {shape}"
        )
    return shape


def _scale(op, scale):
    try:
        v = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected scale to be a number; received {scale!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{op}: expected scale to be finite; received {scale!r}")
    return v


def _labels(op, labels, n):
    _check.array(op, "labels", labels, shape=(n,), dtype=np.int32)


def _labels_forward(op, loss, probs, x, x_name, labels):
    n, k = _classes(op, x_name, x)
    _check.array(op, "probs", probs, shape=(n, k))
    _check.array(op, "loss", loss, shape=(n,))
    _labels(op, labels, n)


def _targets_forward(op, loss, x, x_name, targets, out=None):
    shape = _classes(op, x_name, x) if out is not None else _samples(op, x_name, x)
    if out is not None:
        _check.array(op, "probs", out, shape=shape)
    _check.array(op, "targets", targets, shape=shape)
    _check.array(op, "loss", loss, shape=(shape[0],))


def _backward(op, dx, dx_name, x, x_name, labels=None, targets=None, classes=True):
    shape = _classes(op, x_name, x) if classes else _samples(op, x_name, x)
    _check.array(op, dx_name, dx, shape=shape)
    if labels is not None:
        _labels(op, labels, shape[0])
    if targets is not None:
        _check.array(op, "targets", targets, shape=shape)


def softmax_cross_entropy_forward(loss, probs, logits, labels):
    """Fused softmax + sparse CE from logits: probs = softmax(logits), loss = lse - logits[label].

    Args:
        loss: (N,) float32 output.
        probs: (N, K) float32 output, kept for backward (may be logits).
        logits: (N, K) float32.
        labels: (N,) int32.
    """
    op = "softmax_cross_entropy_forward"
    _labels_forward(op, loss, probs, logits, "logits", labels)
    impl(op, FAMILY, loss=loss, probs=probs, logits=logits, labels=labels)(
        loss, probs, logits, labels
    )


def softmax_cross_entropy_backward(dlogits, probs, labels, *, scale):
    """dlogits = scale * (probs - onehot(labels)).

    Args:
        dlogits: (N, K) float32 output (may be probs).
        probs: (N, K) float32, from the forward.
        labels: (N,) int32.
        scale: gradient factor (1/N for a batch mean).
    """
    op = "softmax_cross_entropy_backward"
    _backward(op, dlogits, "dlogits", probs, "probs", labels=labels)
    fn = impl(op, FAMILY, dlogits=dlogits, probs=probs, labels=labels)
    fn(dlogits, probs, labels, scale=_scale(op, scale))


def softmax_categorical_cross_entropy_forward(loss, probs, logits, targets):
    """Fused softmax + categorical CE from logits: loss = -sum(targets * log_softmax(logits)).

    Args:
        loss: (N,) float32 output.
        probs: (N, K) float32 output, kept for backward (may be logits).
        logits: (N, K) float32.
        targets: (N, K) float32.
    """
    op = "softmax_categorical_cross_entropy_forward"
    _targets_forward(op, loss, logits, "logits", targets, out=probs)
    impl(op, FAMILY, loss=loss, probs=probs, logits=logits, targets=targets)(
        loss, probs, logits, targets
    )


def softmax_categorical_cross_entropy_backward(dlogits, probs, targets, *, scale):
    """dlogits = scale * (probs * sum(targets) - targets) (probs - targets for one-hot targets).

    Args:
        dlogits: (N, K) float32 output (may be probs).
        probs: (N, K) float32, from the forward.
        targets: (N, K) float32.
        scale: gradient factor.
    """
    op = "softmax_categorical_cross_entropy_backward"
    _backward(op, dlogits, "dlogits", probs, "probs", targets=targets)
    fn = impl(op, FAMILY, dlogits=dlogits, probs=probs, targets=targets)
    fn(dlogits, probs, targets, scale=_scale(op, scale))


def sparse_categorical_crossentropy_forward(loss, probs, labels):
    """loss = -log(clip(probs[label] / sum(probs), 1e-7, 1 - 1e-7)) (probabilities in).

    Args:
        loss: (N,) float32 output.
        probs: (N, K) float32.
        labels: (N,) int32.
    """
    op = "sparse_categorical_crossentropy_forward"
    n, _ = _classes(op, "probs", probs)
    _check.array(op, "loss", loss, shape=(n,))
    _labels(op, labels, n)
    impl(op, FAMILY, loss=loss, probs=probs, labels=labels)(loss, probs, labels)


def sparse_categorical_crossentropy_backward(dprobs, probs, labels, *, scale):
    """dprobs = scale * (1/sum(p) - onehot/p[label]) where unclipped, else 0.

    Args:
        dprobs: (N, K) float32 output (may be probs).
        probs: (N, K) float32.
        labels: (N,) int32.
        scale: gradient factor.
    """
    op = "sparse_categorical_crossentropy_backward"
    _backward(op, dprobs, "dprobs", probs, "probs", labels=labels)
    fn = impl(op, FAMILY, dprobs=dprobs, probs=probs, labels=labels)
    fn(dprobs, probs, labels, scale=_scale(op, scale))


def categorical_crossentropy_forward(loss, probs, targets):
    """loss = -sum(targets * log(clip(probs / sum(probs), 1e-7, 1 - 1e-7))).

    Args:
        loss: (N,) float32 output.
        probs: (N, K) float32.
        targets: (N, K) float32.
    """
    op = "categorical_crossentropy_forward"
    shape = _classes(op, "probs", probs)
    _check.array(op, "targets", targets, shape=shape)
    _check.array(op, "loss", loss, shape=(shape[0],))
    impl(op, FAMILY, loss=loss, probs=probs, targets=targets)(loss, probs, targets)


def categorical_crossentropy_backward(dprobs, probs, targets, *, scale):
    """Gradient of categorical_crossentropy_forward wrt probs, times scale.

    Args:
        dprobs: (N, K) float32 output.
        probs: (N, K) float32.
        targets: (N, K) float32.
        scale: gradient factor.
    """
    op = "categorical_crossentropy_backward"
    _backward(op, dprobs, "dprobs", probs, "probs", targets=targets)
    fn = impl(op, FAMILY, dprobs=dprobs, probs=probs, targets=targets)
    fn(dprobs, probs, targets, scale=_scale(op, scale))


def binary_crossentropy_forward(loss, probs, targets):
    """loss[n] = mean over the sample's elements of -(t log p + (1-t) log(1-p)), p clipped.

    Args:
        loss: (N,) float32 output.
        probs: (N, ...) float32.
        targets: same shape as probs, float32.
    """
    op = "binary_crossentropy_forward"
    _targets_forward(op, loss, probs, "probs", targets)
    impl(op, FAMILY, loss=loss, probs=probs, targets=targets)(loss, probs, targets)


def binary_crossentropy_backward(dprobs, probs, targets, *, scale):
    """dprobs = scale/D * ((1-t)/(1-p) - t/p) where p is unclipped, else 0 (D: elements/sample).

    Args:
        dprobs: (N, ...) float32 output (may be probs).
        probs: (N, ...) float32.
        targets: same shape, float32.
        scale: gradient factor.
    """
    op = "binary_crossentropy_backward"
    _backward(op, dprobs, "dprobs", probs, "probs", targets=targets, classes=False)
    fn = impl(op, FAMILY, dprobs=dprobs, probs=probs, targets=targets)
    fn(dprobs, probs, targets, scale=_scale(op, scale))


def binary_crossentropy_logits_forward(loss, logits, targets):
    """loss[n] = mean over the sample's elements of max(z,0) - z*t + log1p(exp(-|z|)).

    Args:
        loss: (N,) float32 output.
        logits: (N, ...) float32.
        targets: same shape as logits, float32.
    """
    op = "binary_crossentropy_logits_forward"
    _targets_forward(op, loss, logits, "logits", targets)
    impl(op, FAMILY, loss=loss, logits=logits, targets=targets)(loss, logits, targets)


def binary_crossentropy_logits_backward(dlogits, logits, targets, *, scale):
    """dlogits = scale/D * (sigmoid(z) - t).

    Args:
        dlogits: (N, ...) float32 output (may be logits).
        logits: (N, ...) float32.
        targets: same shape, float32.
        scale: gradient factor.
    """
    op = "binary_crossentropy_logits_backward"
    _backward(op, dlogits, "dlogits", logits, "logits", targets=targets, classes=False)
    fn = impl(op, FAMILY, dlogits=dlogits, logits=logits, targets=targets)
    fn(dlogits, logits, targets, scale=_scale(op, scale))


def mse_forward(loss, pred, targets):
    """loss[n] = mean over the sample's elements of (pred - targets)**2.

    Args:
        loss: (N,) float32 output.
        pred: (N, ...) float32.
        targets: same shape as pred, float32.
    """
    op = "mse_forward"
    _targets_forward(op, loss, pred, "pred", targets)
    impl(op, FAMILY, loss=loss, pred=pred, targets=targets)(loss, pred, targets)


def mse_backward(dpred, pred, targets, *, scale):
    """dpred = scale * 2/D * (pred - targets).

    Args:
        dpred: (N, ...) float32 output (may be pred).
        pred: (N, ...) float32.
        targets: same shape, float32.
        scale: gradient factor.
    """
    op = "mse_backward"
    _backward(op, dpred, "dpred", pred, "pred", targets=targets, classes=False)
    fn = impl(op, FAMILY, dpred=dpred, pred=pred, targets=targets)
    fn(dpred, pred, targets, scale=_scale(op, scale))


# Keras's other losses live in their own family (kernels_numba.ops.pointwise_loss);
# re-exported here so `ops.<name>` reaches them like the cross-entropies.
from kernels_numba.ops import pointwise_loss as _pointwise_loss  # noqa: E402
from kernels_numba.ops.pointwise_loss import *  # noqa: E402,F401,F403

__all__ += _pointwise_loss.__all__


def softmax_sparse_ce_train_workspace_shape(n):
    """(S,) float32 for softmax_sparse_ce_train over n rows: per-block loss and match
    partials (at most TRAIN_MAX_BLOCKS blocks; batch-sized n uses one block and none)."""
    _check.positive_int("softmax_sparse_ce_train_workspace_shape", "n", n)
    return (2 * TRAIN_MAX_BLOCKS,)


def softmax_sparse_ce_train(probs, dlogits, loss_acc, match_acc, logits, labels, *, scale,
                            workspace=None, from_logits=False):
    """One training step of softmax + sparse categorical CE, fused (one CUDA launch).

    probs = softmax(logits) row-wise (as ops.activation_forward's softmax);
    loss_acc[0] += sum_n -log(clip(probs[n, label] / sum(probs[n]), 1e-7, 1 - 1e-7))
    (the row losses of sparse_categorical_crossentropy_forward); match_acc[0] +=
    #{n: argmax(probs[n]) == labels[n]} (first maximum, as count_argmax_matches);
    dlogits = scale * (probs - onehot(labels)) where the clip is inactive, 0 where it is
    active (the gradient of the clipped loss through the softmax). With from_logits=True
    the loss is Keras's from-logits one, logsumexp(logits[n]) - logits[n, label] (the row
    losses of softmax_cross_entropy_forward, no clip), and dlogits = scale * (probs -
    onehot(labels)) everywhere. A label outside
    [0, K) gives a NaN loss (so loss_acc turns NaN), a zero gradient row and no match;
    it is never used as an index. The sums are deterministic (fixed order).

    Args:
        probs: (N, K) float32 output (may be logits).
        dlogits: (N, K) float32 output (may be logits, not probs).
        loss_acc: (1,) float32, accumulated into.
        match_acc: (1,) float32, accumulated into; None to skip the accuracy count.
        logits: (N, K) float32.
        labels: (N,) int32.
        scale: gradient factor (1/N for a batch mean).
        workspace: optional (S,) float32 scratch, S from
            softmax_sparse_ce_train_workspace_shape (CUDA with many rows; the CPU ignores it).
        from_logits: the loss of SparseCategoricalCrossentropy(from_logits=True).
    """
    op = "softmax_sparse_ce_train"
    n, k = _classes(op, "logits", logits)
    _check.array(op, "probs", probs, shape=(n, k))
    _check.array(op, "dlogits", dlogits, shape=(n, k))
    if dlogits is probs:
        raise ValueError(f"{op}: expected dlogits to be a different buffer from probs "
                         "(both are outputs); received the same array twice")
    _check.array(op, "loss_acc", loss_acc, shape=(1,))
    if match_acc is not None:
        _check.array(op, "match_acc", match_acc, shape=(1,))
    _labels(op, labels, n)
    if workspace is not None:
        (need,) = softmax_sparse_ce_train_workspace_shape(n)
        got = _check.array(op, "workspace", workspace, ndim=1)
        if got[0] < need:
            raise ValueError(f"{op}: expected workspace.shape == ({need},) (or larger); "
                             f"received {got}")
    fn = impl(op, FAMILY, probs=probs, dlogits=dlogits, loss_acc=loss_acc, match_acc=match_acc,
              logits=logits, labels=labels, workspace=workspace)
    fn(probs, dlogits, loss_acc, match_acc, logits, labels, scale=_scale(op, scale),
       workspace=workspace, from_logits=bool(from_logits))
