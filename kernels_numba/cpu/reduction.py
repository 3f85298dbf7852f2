"""CPU twins of kernels_numba.ops.reduction (validated arguments only).

Sums accumulate in float64 (free on the CPU) and are stored as float32; a serial
fixed order, so the workspace the CUDA path uses is accepted and ignored.
"""

import numba
import numpy as np


@numba.njit(inline="always")  # inlined: a compile of its own cost 0.1 s
def _argmax_row(a, r):
    """First index of the row maximum (np.argmax's tie rule)."""
    best = a[r, 0]
    arg = 0
    for j in range(1, a.shape[1]):
        if a[r, j] > best:
            best = a[r, j]
            arg = j
    return arg


@numba.njit(cache=True)  # one argmax per row: serial beats waking threads
def _count_argmax(probs, labels):
    count = 0
    for r in range(probs.shape[0]):
        if _argmax_row(probs, r) == labels[r]:
            count += 1
    return count


@numba.njit(cache=True)  # one argmax per row: serial beats waking threads
def _count_argmax_onehot(probs, targets):
    count = 0
    for r in range(probs.shape[0]):
        if _argmax_row(probs, r) == _argmax_row(targets, r):
            count += 1
    return count


def batch_sum(y, x, workspace=None):
    y += x.sum(axis=0, dtype=np.float64).astype(np.float32)


def sum_into(acc, x, workspace=None):
    acc[0] += np.float32(x.sum(dtype=np.float64))


def mean(y, x):
    y[0] = np.float32(x.mean(dtype=np.float64))


def count_argmax_matches(acc, probs, labels, workspace=None):
    acc[0] += np.float32(_count_argmax(probs, labels))


def count_argmax_matches_onehot(acc, probs, targets, workspace=None):
    acc[0] += np.float32(_count_argmax_onehot(probs, targets))


def count_binary_matches(acc, probs, targets, threshold, workspace=None):
    predicted = (probs > threshold).astype(np.float32)
    acc[0] += np.float32(np.count_nonzero(predicted == targets))
