"""Losses and accuracy counts on a large input against the same rows run in small
pieces: element-wise losses take their parallel branch above PARALLEL_MIN_SIZE (the op
tests use small shapes), and every loss must give exactly the per-row results."""

from functools import partial

import numpy as np
import pytest

from kernels_numba.cpu import loss as cpu_loss
from kernels_numba.cpu import reduction as cpu_reduction

ROWS, K = 519, 70  # ROWS * K > PARALLEL_MIN_SIZE: element-wise losses go parallel
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


def _scaled(fn):
    return partial(fn, scale=0.5)


ROW, PROBS = ((ROWS,),), ((ROWS, K),)
CASES = {  # name: (function, output shapes, input names)
    "softmax_ce": (cpu_loss.softmax_cross_entropy_forward, ROW + PROBS, ("logits", "labels")),
    "softmax_ce_backward": (_scaled(cpu_loss.softmax_cross_entropy_backward), PROBS,
                            ("probs", "labels")),
    "softmax_categorical_ce": (cpu_loss.softmax_categorical_cross_entropy_forward, ROW + PROBS,
                               ("logits", "targets")),
    "softmax_categorical_ce_backward": (
        _scaled(cpu_loss.softmax_categorical_cross_entropy_backward), PROBS,
        ("probs", "targets")),
    "sparse_ce": (cpu_loss.sparse_categorical_crossentropy_forward, ROW, ("probs", "labels")),
    "sparse_ce_backward": (_scaled(cpu_loss.sparse_categorical_crossentropy_backward), PROBS,
                           ("probs", "labels")),
    "categorical_ce": (cpu_loss.categorical_crossentropy_forward, ROW, ("probs", "targets")),
    "categorical_ce_backward": (_scaled(cpu_loss.categorical_crossentropy_backward), PROBS,
                                ("probs", "targets")),
    "mse": (cpu_loss.mse_forward, ROW, ("probs", "targets")),
    "bce_backward": (_scaled(cpu_loss.binary_crossentropy_backward), PROBS,
                     ("probs", "targets")),
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
