"""Keras's regression, probabilistic and hinge losses: per-sample values and gradients.

Pointwise kinds (`pointwise_loss_forward/backward`): loss[n] is the mean over the
sample's elements of an elementwise term (the sum for kl_divergence, as Keras's
`sum(..., axis=-1)`); the gradient wrt pred is overwritten, times `scale`.
Formulas are Keras 3's (epsilon = 1e-7):
- mae |p - t|; mape 100 |(t - p) / max(|t|, eps)|; msle (log(max(p,eps)+1) - log(max(t,eps)+1))^2
- huber (param = delta): 0.5 e^2 where |e| <= delta, else delta |e| - 0.5 delta^2 (e = p - t)
- log_cosh: x + softplus(-2x) - log(2), x = p - t
- poisson: p - t log(p + eps)
- kl_divergence: sum of t' log(t' / p'), t' and p' clipped to [eps, 1]
- hinge max(1 - t p, 0), squared_hinge its square; targets converted first by
  `hinge_targets` (Keras: 0/1 labels become -1/1 when the whole batch is 0/1).
Row losses over the last axis (N, K): cosine_similarity -sum(l2n(t) * l2n(p)) with
Keras's 1/max(norm, eps) normalisation, categorical_hinge max(max((1-t) p) - sum(t p) + 1, 0).
`smooth_labels` is Keras's label smoothing of the cross-entropy targets.
NaN propagates: clips and maxima are comparisons a NaN falls through; where the
slope is zero (clipped, hinge inactive) the gradient is 0, as Keras's backends.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.loss import _backward, _classes, _scale, _targets_forward

__all__ = [
    "POINTWISE_LOSS_KINDS",
    "pointwise_loss_forward",
    "pointwise_loss_backward",
    "hinge_targets",
    "smooth_labels",
    "cosine_similarity_forward",
    "cosine_similarity_backward",
    "categorical_hinge_forward",
    "categorical_hinge_backward",
]
FAMILY = "pointwise_loss"

# kind -> integer code shared by the CPU twin and the CUDA kernels.
KIND_CODES = {
    "mae": 0, "mape": 1, "msle": 2, "huber": 3, "log_cosh": 4, "poisson": 5,
    "kl_divergence": 6, "hinge": 7, "squared_hinge": 8,
}
POINTWISE_LOSS_KINDS = tuple(KIND_CODES)


def _param(op, kind, param):
    try:
        v = float(param)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected param to be a number; received {param!r}") from None
    if kind == "huber" and not (np.isfinite(v) and v > 0):
        raise ValueError(f"{op}: expected huber delta (param) > 0 and finite; received {param!r}")
    return np.float32(v)


def pointwise_loss_forward(loss, pred, targets, *, kind, param=0.0):
    """loss[n] = mean (kl_divergence: sum) over sample n's elements of the kind's term.

    Args:
        loss: (N,) float32 output.
        pred: (N, ...) float32.
        targets: same shape as pred, float32 (hinge kinds: from hinge_targets).
        kind: one of POINTWISE_LOSS_KINDS.
        param: huber's delta; ignored by the other kinds.
    """
    op = "pointwise_loss_forward"
    _check.choice(op, "kind", kind, POINTWISE_LOSS_KINDS)
    _targets_forward(op, loss, pred, "pred", targets)
    impl(op, FAMILY, loss=loss, pred=pred, targets=targets)(
        loss, pred, targets, kind=kind, param=_param(op, kind, param))


def pointwise_loss_backward(dpred, pred, targets, *, kind, scale, param=0.0):
    """dpred = scale * d(loss[n]) / d pred (overwritten; may be pred).

    Args:
        dpred: (N, ...) float32 output.
        pred: (N, ...) float32.
        targets: same shape, float32.
        kind: one of POINTWISE_LOSS_KINDS.
        scale: gradient factor (1/N for a batch mean).
        param: huber's delta.
    """
    op = "pointwise_loss_backward"
    _check.choice(op, "kind", kind, POINTWISE_LOSS_KINDS)
    _backward(op, dpred, "dpred", pred, "pred", targets=targets, classes=False)
    impl(op, FAMILY, dpred=dpred, pred=pred, targets=targets)(
        dpred, pred, targets, kind=kind, scale=_scale(op, scale),
        param=_param(op, kind, param))


def hinge_targets(out, targets):
    """out = 2 t - 1 if every element of targets is 0 or 1, else t (one decision per call).

    Args:
        out: float32, same shape as targets (may be targets).
        targets: float32, any non-empty shape.
    """
    op = "hinge_targets"
    shape = _check.array(op, "targets", targets)
    if not shape or 0 in shape:
        raise ValueError(f"{op}: expected targets with at least one element; received {shape}")
    _check.array(op, "out", out, shape=shape)
    impl(op, FAMILY, out=out, targets=targets)(out, targets)


def smooth_labels(out, targets, *, label_smoothing, binary):
    """out = t (1 - ls) + ls / K (categorical, K = last axis) or + ls / 2 (binary).

    Args:
        out: float32, same shape as targets (may be targets).
        targets: float32, (N, K) or any shape (binary).
        label_smoothing: in [0, 1].
        binary: BinaryCrossentropy's rule instead of CategoricalCrossentropy's.
    """
    op = "smooth_labels"
    shape = _check.array(op, "targets", targets)
    if not shape or 0 in shape:
        raise ValueError(f"{op}: expected targets with at least one element; received {shape}")
    _check.array(op, "out", out, shape=shape)
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"{op}: expected label_smoothing in [0, 1]; received {label_smoothing!r}")
    # float32 as Keras computes them: (1 - ls) and ls / K (or 0.5 * ls) rounded once.
    a = np.float32(1.0 - ls)
    b = np.float32(0.5 * ls) if binary else np.float32(ls) / np.float32(shape[-1])
    impl(op, FAMILY, out=out, targets=targets)(out, targets, a, np.float32(b))


def _rows_forward(op, loss, pred, targets):
    shape = _classes(op, "pred", pred)
    _check.array(op, "targets", targets, shape=shape)
    _check.array(op, "loss", loss, shape=(shape[0],))


def cosine_similarity_forward(loss, pred, targets):
    """loss[n] = -sum_j t[n,j] p[n,j] / (max(|t[n]|, eps) max(|p[n]|, eps)).

    Args:
        loss: (N,) float32 output.
        pred: (N, K) float32.
        targets: (N, K) float32.
    """
    op = "cosine_similarity_forward"
    _rows_forward(op, loss, pred, targets)
    impl(op, FAMILY, loss=loss, pred=pred, targets=targets)(loss, pred, targets)


def cosine_similarity_backward(dpred, pred, targets, *, scale):
    """dpred = scale * d loss[n] / d pred[n] (overwritten).

    Args:
        dpred: (N, K) float32 output (may be pred).
        pred: (N, K) float32.
        targets: (N, K) float32.
        scale: gradient factor.
    """
    op = "cosine_similarity_backward"
    _backward(op, dpred, "dpred", pred, "pred", targets=targets)
    impl(op, FAMILY, dpred=dpred, pred=pred, targets=targets)(
        dpred, pred, targets, _scale(op, scale))


def categorical_hinge_forward(loss, pred, targets):
    """loss[n] = max(max_j (1 - t) p - sum_j t p + 1, 0).

    Args:
        loss: (N,) float32 output.
        pred: (N, K) float32.
        targets: (N, K) float32.
    """
    op = "categorical_hinge_forward"
    _rows_forward(op, loss, pred, targets)
    impl(op, FAMILY, loss=loss, pred=pred, targets=targets)(loss, pred, targets)


def categorical_hinge_backward(dpred, pred, targets, *, scale):
    """dpred = scale * (-t + (1 - t) [j = first argmax of (1 - t) p]) where the hinge is
    active, else 0 (overwritten).

    Args:
        dpred: (N, K) float32 output (may be pred).
        pred: (N, K) float32.
        targets: (N, K) float32.
        scale: gradient factor.
    """
    op = "categorical_hinge_backward"
    _backward(op, dpred, "dpred", pred, "pred", targets=targets)
    impl(op, FAMILY, dpred=dpred, pred=pred, targets=targets)(
        dpred, pred, targets, _scale(op, scale))
