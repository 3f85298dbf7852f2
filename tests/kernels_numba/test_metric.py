"""kernels_numba.ops.metric vs NumPy: confusion counts over thresholds (weights, clip,
sigmoid, accumulation, many thresholds and elements) and top-k matches, both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba._cuda import SIMULATOR
from kernels_numba.gpu.reduction import BLOCK
from kernels_numba.ops import metric as metric_ops
from kernels_numba.testing import assert_close, host, on, rng


def ref_confusion(p, t, thr, w, clip, sigmoid):
    p = p.reshape(-1).astype(np.float64)
    if sigmoid:
        p = 1 / (1 + np.exp(-p))
    if clip:
        p = np.clip(p, 0, 1)
    pos = t.reshape(-1) != 0
    w = np.ones_like(p) if w.size == 0 else w.astype(np.float64)
    above = p[None, :] > thr[:, None]
    return [((above & pos) * w).sum(1), ((above & ~pos) * w).sum(1),
            ((~above & ~pos) * w).sum(1), ((~above & pos) * w).sum(1)]


# case -> (shape, thresholds). "many": more elements than a block has threads (each
# thread strides), many blocks. The simulator runs every thread as a Python thread
# (~4 min for the full case), so there it is just past one block with a few thresholds.
CASES = {"one": ((1,), 1), "small": ((7, 3), 5), "many": ((30, 11), 67)}
SIM_MANY = ((13, 7), 3)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["plain", "weighted", "clip", "sigmoid"])
def test_confusion_update_accumulates(device, case, mode):
    shape, n_thr = SIM_MANY if (case == "many" and device == "cuda" and SIMULATOR) \
        else CASES[case]
    assert case != "many" or np.prod(shape) > BLOCK  # every thread strides
    r = rng(len(shape) + n_thr)
    p = (r.standard_normal(shape) if mode == "sigmoid" else r.uniform(-0.2, 1.2, shape))
    p = p.astype(np.float32)
    t = r.integers(0, 2, shape).astype(np.float32)
    thr = np.sort(r.uniform(-0.1, 1.1, n_thr)).astype(np.float32)
    w = r.uniform(0, 2, p.size).astype(np.float32) if mode == "weighted" else \
        np.zeros(0, np.float32)
    accs = [on(device, np.full(n_thr, 1.0, np.float32)) for _ in range(4)]  # accumulated
    args = (on(device, p), on(device, t), on(device, thr), on(device, w))
    metric_ops.confusion_update(*accs, *args, clip=mode == "clip", sigmoid=mode == "sigmoid")
    metric_ops.confusion_update(*accs, *args, clip=mode == "clip", sigmoid=mode == "sigmoid")
    want = ref_confusion(p, t, thr, w, mode == "clip", mode == "sigmoid")
    for name, got, ref in zip(("tp", "fp", "tn", "fn"), accs, want):
        assert_close(host(got), 1.0 + 2 * ref, rtol=1e-5, atol=1e-4, what=name)


def ref_top_k(p, labels, k):
    c = p.shape[1]
    ok = (labels >= 0) & (labels < c)
    v = p[np.arange(len(p)), np.where(ok, labels, 0)]
    return (ok & ((p > v[:, None]).sum(1) < k)).astype(np.float32)


@pytest.mark.parametrize("k", [1, 2, 6])
def test_top_k_matches(device, k):
    r = rng(k)
    p = r.uniform(0, 1, (9, 5)).astype(np.float32)
    p[0, :] = 0.5  # ties count as in the top k (Keras's in_top_k)
    labels = r.integers(0, 5, 9).astype(np.int32)
    labels[1] = 7  # out of range: never a match
    out = on(device, np.full(9, 3.0, np.float32))
    metric_ops.top_k_matches(out, on(device, p), on(device, labels), k=k)
    assert_close(host(out), ref_top_k(p, labels, k), rtol=0, atol=0, what="sparse")
    onehot = np.eye(5, dtype=np.float32)[np.clip(labels, 0, 4)]
    metric_ops.top_k_matches_onehot(out, on(device, p), on(device, onehot), k=k)
    assert_close(host(out), ref_top_k(p, np.clip(labels, 0, 4), k), rtol=0, atol=0,
                 what="one-hot")
    acc = on(device, np.zeros(1, np.float32))
    ops.sum_into(acc, out)
    assert host(acc)[0] == ref_top_k(p, np.clip(labels, 0, 4), k).sum()


def test_bad_arguments_name_the_op():
    x = np.zeros((2, 3), np.float32)
    a = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match="confusion_update: expected weights with 0 or 6"):
        metric_ops.confusion_update(a, a, a, a, x, x, a, np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="confusion_update"):
        metric_ops.confusion_update(a, a, a, np.zeros(3, np.float32), x, x, a,
                                    np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="top_k_matches: expected k to be an int >= 1"):
        metric_ops.top_k_matches(a, x, np.zeros(2, np.int32), k=0)
