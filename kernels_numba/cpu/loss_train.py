"""CPU twin of kernels_numba.ops.loss.softmax_sparse_ce_train (validated arguments only),
and the per-row math of both devices (kernels_numba.gpu.loss compiles the same row
function as a CUDA device function; kernels_numba.cpu.loss re-exports both names).

Split from cpu/loss.py (file size). One compile: the row function is inlined into the
row loop. Rows run on the calling thread, in order, with float32 partial sums (the same
bits every run): a batch has few rows, far less work than waking the thread pool.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._parallel import (bound_op, f32_1d, f32_2d, f32_bits, from_f32_bits,
                                         i32_1d, lazy_part, pack, part_call)

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_EPS = np.float32(1e-7)
_ONE_MINUS_EPS = np.float32(1.0 - 1e-7)
_NAN = np.float32(np.nan)
_NO_MATCH = np.zeros(1, np.float32)


def softmax_sparse_ce_train_row(probs, dlogits, logits, labels, scale, from_logits, n):
    """Softmax, sparse CE, argmax match and the logits gradient of one row.

    Returns (loss, match). probs as the softmax activation. Probabilities' CE (from_logits
    false): loss as sparse_ce_forward_row on those probs; dlogits = scale * (probs -
    onehot) while the clip is inactive (the gradient of the clipped loss through the
    softmax), else 0. From logits: loss = logsumexp - z[label] (softmax_ce_forward_row's,
    no clip) and dlogits = scale * (probs - onehot).
    """
    k = logits.shape[1]
    label = labels[n]
    valid = label >= 0 and label < k
    z_label = logits[n, label] if valid else _ZERO  # read before probs may overwrite logits
    m = logits[n, 0]
    for j in range(1, k):
        if logits[n, j] > m:  # a NaN is skipped here and reaches the sum below
            m = logits[n, j]
    total = _ZERO
    for j in range(k):
        e = math.exp(logits[n, j] - m)
        probs[n, j] = e
        total += e
    inv = _ONE / total
    best = _ZERO
    arg = 0
    s = _ZERO
    for j in range(k):
        p = probs[n, j] * inv
        probs[n, j] = p
        s += p
        if j == 0 or p > best:  # first maximum, as count_argmax_matches
            best = p
            arg = j
    if not valid:  # never an index: NaN loss, zero gradient, no match
        for j in range(k):
            dlogits[n, j] = _ZERO
        return _NAN, _ZERO
    q = probs[n, label] / s
    # NaN is inside: NaN gradient. From logits nothing is clipped. (One gradient loop for
    # both losses: a smaller compile.)
    inside = from_logits or not (q < _EPS or q > _ONE_MINUS_EPS)
    q = _EPS if q < _EPS else (_ONE_MINUS_EPS if q > _ONE_MINUS_EPS else q)
    for j in range(k):
        d = probs[n, j] - (_ONE if j == label else _ZERO)
        dlogits[n, j] = scale * d if inside else _ZERO
    loss = (math.log(total) + m - z_label) if from_logits else -math.log(q)
    return loss, (_ONE if arg == label else _ZERO)


_softmax_sparse_ce_train_row = numba.njit(inline="always")(softmax_sparse_ce_train_row)


@lazy_part
def _rows_softmax_sparse_ce_train(args, p, parts):
    # (probs, dlogits, logits 2-D; loss_acc, match_acc, labels 1-D; scale bits,
    # from_logits) packed.
    # A part (a cfunc), not a dispatcher over seven arrays: no argument unboxing to
    # compile (0.58 -> 0.51 CPU s cold). Always one block: rows in order, float32
    # partial sums, the same bits every run.
    a = numba.carray(args, 17)
    probs, dlogits, logits = f32_2d(a, 0), f32_2d(a, 3), f32_2d(a, 6)
    loss_acc, match_acc, labels = f32_1d(a, 9), f32_1d(a, 11), i32_1d(a, 13)
    scale, from_logits = from_f32_bits(a[15]), a[16] != 0
    total = _ZERO
    matches = _ZERO
    for n in range(probs.shape[0]):
        loss, match = _softmax_sparse_ce_train_row(probs, dlogits, logits, labels, scale,
                                                   from_logits, n)
        total += loss
        matches += match
    loss_acc[0] += total
    match_acc[0] += matches


@bound_op
def softmax_sparse_ce_train(probs, dlogits, loss_acc, match_acc, logits, labels, *, scale,
                            workspace=None, from_logits=False):
    match_acc = _NO_MATCH if match_acc is None else match_acc  # discarded
    arrays = (probs, dlogits, logits, loss_acc, match_acc, labels)
    return part_call(_rows_softmax_sparse_ce_train,
                     pack(*arrays, f32_bits(scale), int(bool(from_logits))), 1, arrays)
