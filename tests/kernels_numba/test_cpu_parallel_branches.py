"""The CPU twins run small inputs on the calling thread and large ones on numba's
threads, in the same function; the op tests use small shapes, so here each loss and
reduction runs on a large input (parallel branch) and must give exactly the results
of the same rows run in small pieces (serial branch)."""

import numpy as np
import pytest

from kernels_numba.cpu import loss as cpu_loss
from kernels_numba.cpu import reduction as cpu_reduction

ROWS, K = cpu_loss.SERIAL_ROWS * 2 + 7, 70  # ROWS * K > SERIAL_ELEMENTS too
PIECE = 16  # rows per small call


def _rng(seed):
    return np.random.default_rng(seed)


def _inputs():
    logits = _rng(1).standard_normal((ROWS, K)).astype(np.float32) * 3
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = _rng(2).integers(0, K, ROWS).astype(np.int32)
    targets = np.eye(K, dtype=np.float32)[labels]
    return logits, probs.astype(np.float32), labels, targets


def _whole_and_pieces(call, outputs, inputs):
    """Run `call(*outputs, *inputs)` once on all rows and again in PIECE-row slices."""
    whole = [np.zeros_like(o) for o in outputs]
    call(*whole, *inputs)
    pieces = [np.zeros_like(o) for o in outputs]
    for r in range(0, ROWS, PIECE):
        call(*(p[r:r + PIECE] for p in pieces), *(i[r:r + PIECE] for i in inputs))
    return whole, pieces


CASES = {
    "softmax_ce": (lambda l, p, z, y: cpu_loss.softmax_cross_entropy_forward(l, p, z, y),
                   ((ROWS,), (ROWS, K)), ("logits", "labels")),
    "softmax_ce_backward": (lambda d, p, y: cpu_loss.softmax_cross_entropy_backward(
        d, p, y, scale=0.5), ((ROWS, K),), ("probs", "labels")),
    "softmax_categorical_ce": (lambda l, p, z, t: cpu_loss.softmax_categorical_cross_entropy_forward(
        l, p, z, t), ((ROWS,), (ROWS, K)), ("logits", "targets")),
    "softmax_categorical_ce_backward": (
        lambda d, p, t: cpu_loss.softmax_categorical_cross_entropy_backward(d, p, t, scale=0.5),
        ((ROWS, K),), ("probs", "targets")),
    "sparse_ce": (lambda l, p, y: cpu_loss.sparse_categorical_crossentropy_forward(l, p, y),
                  ((ROWS,),), ("probs", "labels")),
    "sparse_ce_backward": (lambda d, p, y: cpu_loss.sparse_categorical_crossentropy_backward(
        d, p, y, scale=0.5), ((ROWS, K),), ("probs", "labels")),
    "categorical_ce": (lambda l, p, t: cpu_loss.categorical_crossentropy_forward(l, p, t),
                       ((ROWS,),), ("probs", "targets")),
    "categorical_ce_backward": (lambda d, p, t: cpu_loss.categorical_crossentropy_backward(
        d, p, t, scale=0.5), ((ROWS, K),), ("probs", "targets")),
    "mse": (lambda l, p, t: cpu_loss.mse_forward(l, p, t), ((ROWS,),), ("probs", "targets")),
    "bce_backward": (lambda d, p, t: cpu_loss.binary_crossentropy_backward(d, p, t, scale=0.5),
                     ((ROWS, K),), ("probs", "targets")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_losses_parallel_branch_matches_serial(name):
    logits, probs, labels, targets = _inputs()
    named = {"logits": logits, "probs": probs, "labels": labels, "targets": targets}
    call, out_shapes, in_names = CASES[name]
    outputs = [np.zeros(s, np.float32) for s in out_shapes]
    whole, pieces = _whole_and_pieces(call, outputs, [named[n] for n in in_names])
    for w, p in zip(whole, pieces):
        np.testing.assert_array_equal(w, p)


def test_count_argmax_parallel_branch():
    _, probs, labels, targets = _inputs()
    labels[::3] = (labels[::3] + 1) % K  # some misses
    expected = int(np.count_nonzero(probs.argmax(axis=1) == labels))
    assert cpu_reduction._count_argmax(probs, labels) == expected
    assert cpu_reduction._count_argmax_onehot(probs, np.eye(K, dtype=np.float32)[labels]) == \
        expected
