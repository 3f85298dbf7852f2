"""kernels_numba.ops.pointwise_loss: forward vs float64 NumPy (Keras 3's formulas), backward vs
finite differences, on both devices; hinge target conversion, label smoothing, NaN."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, rng

EPS = float(np.float32(1e-7))
SCALE = 0.5


def _mean(a):
    return a.reshape(len(a), -1).mean(axis=1)


def _softplus(z):
    return np.logaddexp(z, 0.0)


REF = {  # kind -> per-sample loss(p, t, delta) in float64
    "mae": lambda p, t, d: _mean(np.abs(t - p)),
    "mape": lambda p, t, d: _mean(100.0 * np.abs((t - p) / np.maximum(np.abs(t), EPS))),
    "msle": lambda p, t, d: _mean((np.log(np.maximum(p, EPS) + 1) -
                                   np.log(np.maximum(t, EPS) + 1)) ** 2),
    "huber": lambda p, t, d: _mean(np.where(np.abs(p - t) <= d, 0.5 * (p - t) ** 2,
                                            d * np.abs(p - t) - 0.5 * d * d)),
    "log_cosh": lambda p, t, d: _mean(np.log(np.cosh(p - t))),
    "poisson": lambda p, t, d: _mean(p - t * np.log(p + EPS)),
    "kl_divergence": lambda p, t, d: (np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) /
                                      np.clip(p, EPS, 1))).reshape(len(p), -1).sum(axis=1),
    "hinge": lambda p, t, d: _mean(np.maximum(1 - t * p, 0)),
    "squared_hinge": lambda p, t, d: _mean(np.maximum(1 - t * p, 0) ** 2),
}


def _data(kind, shape, seed):
    r = rng(seed)
    if kind in ("hinge", "squared_hinge"):
        return r.standard_normal(shape).astype(np.float32), \
            r.choice([-1.0, 1.0], shape).astype(np.float32)
    if kind in ("kl_divergence", "poisson", "msle"):
        return r.uniform(0.05, 0.95, shape).astype(np.float32), \
            r.uniform(0.0, 1.0, shape).astype(np.float32)
    p = r.standard_normal(shape).astype(np.float32) * 2
    t = r.standard_normal(shape).astype(np.float32)
    return p, t


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("kind", list(REF))
def test_pointwise_forward_and_backward(device, kind, shape):
    p, t = _data(kind, shape, 3)
    delta = 0.7
    loss = on(device, np.full(shape[0], 9.0, np.float32))
    pb, tb = on(device, p, t)
    ops.pointwise_loss_forward(loss, pb, tb, kind=kind, param=delta)
    ref = REF[kind](p.astype(np.float64), t.astype(np.float64), delta)
    assert_close(host(loss), ref, rtol=1e-5, atol=1e-6, what=f"{kind} loss")
    dp = on(device, np.full(shape, 9.0, np.float32))
    ops.pointwise_loss_backward(dp, pb, tb, kind=kind, scale=SCALE, param=delta)
    expected = numeric_grad(lambda v: SCALE * REF[kind](v, t.astype(np.float64), delta).sum(), p)
    assert_close(host(dp), expected, rtol=1e-4, atol=1e-4, what=f"{kind} dpred")


@pytest.mark.parametrize("kind", list(REF))
def test_pointwise_nan_propagates(device, kind):
    p, t = _data(kind, (2, 3), 5)
    p[0, 1] = np.nan
    loss = on(device, np.zeros(2, np.float32))
    pb, tb = on(device, p, t)
    ops.pointwise_loss_forward(loss, pb, tb, kind=kind, param=1.0)
    got = host(loss)
    assert np.isnan(got[0]) and np.isfinite(got[1]), got
    dp = on(device, np.zeros_like(p))
    ops.pointwise_loss_backward(dp, pb, tb, kind=kind, scale=1.0, param=1.0)
    g = host(dp)
    assert np.isnan(g[0, 1]) and np.isfinite(np.delete(g.reshape(-1), 1)).all(), g


def test_hinge_targets_convert_only_all_binary_batches(device):
    binary = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], np.float32)
    out = on(device, np.zeros_like(binary))
    ops.hinge_targets(out, on(device, binary))
    assert_close(host(out), 2 * binary - 1, rtol=0, atol=0, what="0/1 -> -1/1")
    mixed = binary.copy()
    mixed[1, 2] = -1.0  # one non-0/1 element: the batch is left as it is (Keras)
    buf = on(device, mixed)
    ops.hinge_targets(buf, buf)  # in place
    assert_close(host(buf), mixed, rtol=0, atol=0, what="unconverted")
    big = rng(1).integers(0, 2, (7, 300)).astype(np.float32)  # longer than one block
    out = on(device, np.zeros_like(big))
    ops.hinge_targets(out, on(device, big))
    assert_close(host(out), 2 * big - 1, rtol=0, atol=0, what="strided")


@pytest.mark.parametrize("binary", [False, True])
def test_smooth_labels(device, binary):
    t = np.eye(4, dtype=np.float32)[[0, 3, 1]]
    out = on(device, np.zeros_like(t))
    ops.smooth_labels(out, on(device, t), label_smoothing=0.2, binary=binary)
    expected = t * 0.8 + (0.1 if binary else 0.05)
    assert_close(host(out), expected, rtol=1e-6, atol=1e-7, what="smoothed")
    with pytest.raises(ValueError, match=r"smooth_labels: expected label_smoothing in \[0, 1\]"):
        ops.smooth_labels(out, out, label_smoothing=1.5, binary=binary)


def ref_cosine(p, t):
    def unit(a):
        return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), EPS)
    return -(unit(p) * unit(t)).sum(axis=1)


def ref_cat_hinge(p, t):
    return np.maximum(((1 - t) * p).max(axis=1) - (t * p).sum(axis=1) + 1, 0)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("which", ["cosine_similarity", "categorical_hinge"])
def test_row_losses(device, which, n):
    r = rng(7 + n)
    p = r.standard_normal((n, 5)).astype(np.float32)
    t = r.standard_normal((n, 5)).astype(np.float32) if which == "cosine_similarity" else \
        np.eye(5, dtype=np.float32)[r.integers(0, 5, n)]
    if which == "categorical_hinge":
        p *= 0.3  # keep the hinge active
    ref = ref_cosine if which == "cosine_similarity" else ref_cat_hinge
    fwd = getattr(ops, f"{which}_forward")
    bwd = getattr(ops, f"{which}_backward")
    loss = on(device, np.zeros(n, np.float32))
    pb, tb = on(device, p, t)
    fwd(loss, pb, tb)
    assert_close(host(loss), ref(p.astype(np.float64), t), rtol=1e-5, atol=1e-6, what=which)
    dp = on(device, np.zeros_like(p))
    bwd(dp, pb, tb, scale=SCALE)
    expected = numeric_grad(lambda v: SCALE * ref(v, t.astype(np.float64)).sum(), p)
    assert_close(host(dp), expected, rtol=1e-4, atol=1e-4, what=f"{which} backward")
    bwd(pb, pb, tb, scale=SCALE)  # in place
    assert_close(host(pb), expected, rtol=1e-4, atol=1e-4, what=f"{which} in place")


def test_cosine_zero_vector_is_zero_loss(device):
    p = np.zeros((1, 3), np.float32)
    t = np.ones((1, 3), np.float32)
    loss = on(device, np.ones(1, np.float32))
    ops.cosine_similarity_forward(loss, on(device, p), on(device, t))
    assert host(loss)[0] == 0.0


def test_bad_arguments_name_the_op():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"pointwise_loss_forward: expected kind in"):
        ops.pointwise_loss_forward(np.zeros(2, np.float32), x, x, kind="mse")
    with pytest.raises(ValueError, match=r"pointwise_loss_backward: expected huber delta"):
        ops.pointwise_loss_backward(x, x, x, kind="huber", scale=1.0, param=0.0)
    with pytest.raises(ValueError, match="cosine_similarity_forward"):
        ops.cosine_similarity_forward(np.zeros(3, np.float32), x, x)
    with pytest.raises(ValueError, match="hinge_targets"):
        ops.hinge_targets(np.zeros((3, 2), np.float32), x)
