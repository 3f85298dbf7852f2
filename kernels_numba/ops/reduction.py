"""Reductions for bias gradients, on-device loss accumulation and accuracy counts.

Accumulators are float32 buffers of shape (1,) so losses and match counts stay on
the device between batches (counts are exact in float32 up to 2**24).
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = [
    "batch_sum",
    "sum_into",
    "mean",
    "count_argmax_matches",
    "count_argmax_matches_onehot",
    "count_binary_matches",
]
FAMILY = "reduction"


def _nonempty(op, name, shape):
    if not shape or 0 in shape:
        raise ValueError(
            f"{op}: expected {name} with at least one element; received shape {tuple(shape)}"
        )


def batch_sum(y, x):
    """y += sum over the rows of x (bias gradients).

    Args:
        y: (F,) float32, accumulated into.
        x: (N, F) float32.
    """
    n, f = _check.array("batch_sum", "x", x, ndim=2)
    _check.array("batch_sum", "y", y, shape=(f,))
    impl("batch_sum", FAMILY, y=y, x=x)(y, x)


def sum_into(acc, x):
    """acc[0] += sum(x).

    Args:
        acc: (1,) float32, accumulated into.
        x: any shape, float32.
    """
    _check.array("sum_into", "x", x)
    _check.array("sum_into", "acc", acc, shape=(1,))
    impl("sum_into", FAMILY, acc=acc, x=x)(acc, x)


def mean(y, x):
    """y[0] = mean(x) (overwritten).

    Args:
        y: (1,) float32.
        x: any non-empty shape, float32.
    """
    shape = _check.array("mean", "x", x)
    _nonempty("mean", "x", shape or (1,))
    _check.array("mean", "y", y, shape=(1,))
    impl("mean", FAMILY, y=y, x=x)(y, x)


def count_argmax_matches(acc, probs, labels):
    """acc[0] += #{n: argmax(probs[n]) == labels[n]} (ties: first maximum, like np.argmax).

    Args:
        acc: (1,) float32, accumulated into.
        probs: (N, K) float32, K >= 1.
        labels: (N,) int32; out-of-range labels never match.
    """
    op = "count_argmax_matches"
    n, k = _check.array(op, "probs", probs, ndim=2)
    _nonempty(op, "probs", (k,))
    _check.array(op, "labels", labels, shape=(n,), dtype=np.int32)
    _check.array(op, "acc", acc, shape=(1,))
    impl(op, FAMILY, acc=acc, probs=probs, labels=labels)(acc, probs, labels)


def count_argmax_matches_onehot(acc, probs, targets):
    """acc[0] += #{n: argmax(probs[n]) == argmax(targets[n])}.

    Args:
        acc: (1,) float32, accumulated into.
        probs: (N, K) float32, K >= 1.
        targets: (N, K) float32 (one-hot or soft targets).
    """
    op = "count_argmax_matches_onehot"
    n, k = _check.array(op, "probs", probs, ndim=2)
    _nonempty(op, "probs", (k,))
    _check.array(op, "targets", targets, shape=(n, k))
    _check.array(op, "acc", acc, shape=(1,))
    impl(op, FAMILY, acc=acc, probs=probs, targets=targets)(acc, probs, targets)


def count_binary_matches(acc, probs, targets, *, threshold=0.5):
    """acc[0] += number of ELEMENTS with float(probs > threshold) == targets (Keras BinaryAccuracy).

    Args:
        acc: (1,) float32, accumulated into.
        probs: any shape, float32.
        targets: same shape as probs, float32 (0 or 1; other values never match).
        threshold: decision threshold.
    """
    op = "count_binary_matches"
    shape = _check.array(op, "probs", probs)
    _check.array(op, "targets", targets, shape=shape)
    _check.array(op, "acc", acc, shape=(1,))
    if not np.isfinite(threshold):
        raise ValueError(f"{op}: expected threshold to be a finite number; received {threshold!r}")
    impl(op, FAMILY, acc=acc, probs=probs, targets=targets)(
        acc, probs, targets, np.float32(threshold)
    )
