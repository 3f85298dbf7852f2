"""Reductions for bias gradients, on-device loss accumulation and accuracy counts.

Accumulators are float32 buffers of shape (1,) so losses and match counts stay on
the device between batches (counts are exact in float32 up to 2**24).

Deterministic on both devices: on CUDA a sum over many blocks goes through per-block
partials in a workspace, added in a fixed order (no float atomics). `workspace` is a
1-D float32 buffer sized by `batch_sum_workspace_shape` / `sum_workspace_shape`; when
omitted, the CUDA path uses a process-wide scratch buffer it allocates on first use
(counted by allocation_count) and the CPU path needs none.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = [
    "batch_sum_workspace_shape",
    "sum_workspace_shape",
    "batch_sum",
    "sum_into",
    "mean",
    "count_argmax_matches",
    "count_argmax_matches_onehot",
    "count_binary_matches",
]
FAMILY = "reduction"

# The CUDA launch shapes the workspace helpers size for (gpu.reduction uses them):
ROWS_PER_BLOCK = 128  # rows one column-partial block sums (batch_sum, bias gradients)
MAX_ROW_BLOCKS = 256
SUM_ITEMS_PER_BLOCK = 256  # items per block of a flat sum or count
MAX_SUM_BLOCKS = 1024


def batch_sum_workspace_shape(x_shape):
    """(S,) float32 for batch_sum / a bias gradient over x (N, F): one partial row per
    row block, S = min(ceil(N / 128), 256) * F."""
    n, f = x_shape
    return (max(1, min(-(-n // ROWS_PER_BLOCK), MAX_ROW_BLOCKS)) * f,)


def sum_workspace_shape(n):
    """(S,) float32 for a sum or count over n items (sum_into: x.size; count_argmax_*:
    the N rows; count_binary_matches: probs.size): one slot per block."""
    return (max(1, min(-(-int(n) // SUM_ITEMS_PER_BLOCK), MAX_SUM_BLOCKS)),)


def _workspace(op, workspace):
    if workspace is not None:
        _check.array(op, "workspace", workspace, ndim=1)
    return workspace


def _nonempty(op, name, shape):
    if not shape or 0 in shape:
        raise ValueError(
            f"{op}: expected {name} with at least one element; received shape {tuple(shape)}"
        )


def batch_sum(y, x, workspace=None):
    """y += sum over the rows of x (bias gradients).

    Args:
        y: (F,) float32, accumulated into.
        x: (N, F) float32.
        workspace: optional (S,) float32 scratch, S from batch_sum_workspace_shape.
    """
    n, f = _check.array("batch_sum", "x", x, ndim=2)
    _check.array("batch_sum", "y", y, shape=(f,))
    ws = _workspace("batch_sum", workspace)
    impl("batch_sum", FAMILY, y=y, x=x, workspace=ws)(y, x, ws)


def sum_into(acc, x, workspace=None):
    """acc[0] += sum(x).

    Args:
        acc: (1,) float32, accumulated into.
        x: any shape, float32.
        workspace: optional (S,) float32 scratch, S from sum_workspace_shape(x.size).
    """
    _check.array("sum_into", "x", x)
    _check.array("sum_into", "acc", acc, shape=(1,))
    ws = _workspace("sum_into", workspace)
    impl("sum_into", FAMILY, acc=acc, x=x, workspace=ws)(acc, x, ws)


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


def count_argmax_matches(acc, probs, labels, workspace=None):
    """acc[0] += #{n: argmax(probs[n]) == labels[n]} (ties: first maximum, like np.argmax).

    Args:
        acc: (1,) float32, accumulated into.
        probs: (N, K) float32, K >= 1.
        labels: (N,) int32; out-of-range labels never match.
        workspace: optional (S,) float32 scratch, S from sum_workspace_shape(N).
    """
    op = "count_argmax_matches"
    n, k = _check.array(op, "probs", probs, ndim=2)
    _nonempty(op, "probs", (k,))
    _check.array(op, "labels", labels, shape=(n,), dtype=np.int32)
    _check.array(op, "acc", acc, shape=(1,))
    ws = _workspace(op, workspace)
    impl(op, FAMILY, acc=acc, probs=probs, labels=labels, workspace=ws)(acc, probs, labels, ws)


def count_argmax_matches_onehot(acc, probs, targets, workspace=None):
    """acc[0] += #{n: argmax(probs[n]) == argmax(targets[n])}.

    Args:
        acc: (1,) float32, accumulated into.
        probs: (N, K) float32, K >= 1.
        targets: (N, K) float32 (one-hot or soft targets).
        workspace: optional (S,) float32 scratch, S from sum_workspace_shape(N).
    """
    op = "count_argmax_matches_onehot"
    n, k = _check.array(op, "probs", probs, ndim=2)
    _nonempty(op, "probs", (k,))
    _check.array(op, "targets", targets, shape=(n, k))
    _check.array(op, "acc", acc, shape=(1,))
    ws = _workspace(op, workspace)
    impl(op, FAMILY, acc=acc, probs=probs, targets=targets, workspace=ws)(acc, probs, targets, ws)


def count_binary_matches(acc, probs, targets, *, threshold=0.5, workspace=None):
    """acc[0] += number of ELEMENTS with float(probs > threshold) == targets (Keras BinaryAccuracy).

    Args:
        acc: (1,) float32, accumulated into.
        probs: any shape, float32.
        targets: same shape as probs, float32 (0 or 1; other values never match).
        threshold: decision threshold.
        workspace: optional (S,) float32 scratch, S from sum_workspace_shape(probs.size).
    """
    op = "count_binary_matches"
    shape = _check.array(op, "probs", probs)
    _check.array(op, "targets", targets, shape=shape)
    _check.array(op, "acc", acc, shape=(1,))
    if not np.isfinite(threshold):
        raise ValueError(f"{op}: expected threshold to be a finite number; received {threshold!r}")
    ws = _workspace(op, workspace)
    impl(op, FAMILY, acc=acc, probs=probs, targets=targets, workspace=ws)(
        acc, probs, targets, np.float32(threshold), ws
    )
