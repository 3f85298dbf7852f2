"""CPU twins of kernels_numba.ops.metric (validated arguments only); the row math is
shared with the CUDA kernels."""

import math

import numba
import numpy as np

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def top_k_row(probs, label, k, n):
    """1 if probs[n, label] is among the k largest (fewer than k strictly greater)."""
    c = probs.shape[1]
    if label < 0 or label >= c:
        return _ZERO
    v = probs[n, label]
    greater = 0
    for j in range(c):
        if probs[n, j] > v:
            greater += 1
    return _ONE if greater < k else _ZERO


def argmax_row(a, n):
    best = a[n, 0]
    arg = 0
    for j in range(1, a.shape[1]):
        if a[n, j] > best:
            best = a[n, j]
            arg = j
    return arg


def prepare(p, clip, sigmoid):
    if sigmoid:
        if p >= _ZERO:
            p = _ONE / (_ONE + math.exp(-p))
        else:
            e = math.exp(p)
            p = e / (_ONE + e)
    if clip:
        p = _ZERO if p < _ZERO else (_ONE if p > _ONE else p)
    return p


_top_k_row = numba.njit(cache=True)(top_k_row)
_argmax_row = numba.njit(cache=True)(argmax_row)
_prepare = numba.njit(cache=True)(prepare)


@numba.njit(cache=True)
def _confusion(tp, fp, tn, fn, preds, targets, thresholds, weights, clip, sigmoid):
    weighted = weights.size > 0
    for i in range(thresholds.size):
        thr = thresholds[i]
        a, b, c, d = _ZERO, _ZERO, _ZERO, _ZERO
        for e in range(preds.size):
            p = _prepare(preds[e], clip, sigmoid)
            w = weights[e] if weighted else _ONE
            pos = targets[e] != _ZERO
            if p > thr:
                if pos:
                    a += w
                else:
                    b += w
            elif pos:
                d += w
            else:
                c += w
        tp[i] += a
        fp[i] += b
        tn[i] += c
        fn[i] += d


@numba.njit(cache=True)
def _top_k(out, probs, labels, k):
    for n in range(out.size):
        out[n] = _top_k_row(probs, labels[n], k, n)


@numba.njit(cache=True)
def _top_k_onehot(out, probs, targets, k):
    for n in range(out.size):
        out[n] = _top_k_row(probs, _argmax_row(targets, n), k, n)


def confusion_update(tp, fp, tn, fn, preds, targets, thresholds, weights, clip, sigmoid):
    _confusion(tp, fp, tn, fn, preds.reshape(-1), targets.reshape(-1), thresholds, weights,
               clip, sigmoid)


def top_k_matches(out, probs, labels, k):
    _top_k(out, probs, labels, k)


def top_k_matches_onehot(out, probs, targets, k):
    _top_k_onehot(out, probs, targets, k)
