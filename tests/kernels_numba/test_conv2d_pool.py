"""conv2d_relu_maxpool_backward: the backward of maxpool(relu(conv2d(x, w) + b)) from the
pooled gradient, against float64 finite differences and against the separate ops."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn
from tests.kernels_numba.test_pool2d import maxpool_ref

# (x, w, conv strides, padding, dilation, pool, pool strides, pool padding): odd sizes,
# disjoint (2x2, gapped) and overlapping pools, padded pools and convs, dilation (tiny:
# the simulator runs every case)
CASES = [
    ((2, 7, 6, 3), (3, 2, 3, 4), (1, 1), "valid", (1, 1), (2, 2), None, "valid"),
    ((1, 6, 7, 5), (2, 3, 5, 5), (1, 1), "same", (1, 1), (2, 2), None, "valid"),
    ((1, 7, 7, 4), (3, 3, 4, 3), (2, 1), "same", (1, 1), (3, 3), (2, 2), "same"),
    ((1, 8, 7, 3), (2, 2, 3, 5), (1, 1), "valid", (2, 1), (3, 2), (1, 2), "valid"),
    ((1, 7, 7, 4), (3, 3, 4, 3), (1, 1), "valid", (1, 1), (2, 2), (3, 2), "same"),
    ((1, 8, 9, 3), (2, 2, 3, 4), (1, 1), "valid", (1, 1), (2, 2), (3, 2), "valid"),
]
IDS = ["c3-2x2", "c5-same-2x2", "c4-s2-overlap-same", "c3-dilated-3x2", "c4-gaps-same",
       "c3-2x2-gaps-valid"]  # (the last: a whole 2x2 pool not at stride 2, cpu/pool2d.py)


def _pad(size, k, s, padding, d):
    span = d * (k - 1) + 1
    if padding == "valid":
        return (size - span) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + span - size, 0) // 2


def conv_ref(x, w, b, strides, padding, dilation):
    """float64 relu(conv2d + b), dilated taps, TensorFlow's 'same' padding."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    ho, pt = _pad(h, kh, strides[0], padding, dilation[0])
    wo, pl = _pad(wd, kw, strides[1], padding, dilation[1])
    z = np.zeros((n, ho, wo, f)) + b
    for i in range(kh):
        for j in range(kw):
            for oh in range(ho):
                ih = oh * strides[0] - pt + i * dilation[0]
                for ow in range(wo):
                    iw = ow * strides[1] - pl + j * dilation[1]
                    if 0 <= ih < h and 0 <= iw < wd:
                        z[:, oh, ow] += x[:, ih, iw] @ w[i, j]
    return np.maximum(z, 0)


def _forward(device, x, w, b, conv_kw, pool_kw):
    """z, p, argmax from the forward ops on `device` (what a model's forward leaves)."""
    z_shape = ops.conv2d_output_shape(x.shape, w.shape, **conv_kw)
    (size,) = ops.conv2d_workspace_shape(x.shape, w.shape, **conv_kw)
    z, ws = on(device, np.zeros(z_shape, np.float32), np.zeros(size, np.float32))
    ops.conv2d_forward(z, *on(device, x, w, b), ws, activation="relu", **conv_kw)
    p_shape = ops.pool2d_output_shape(z_shape, **pool_kw)
    p, arg = on(device, np.zeros(p_shape, np.float32), np.zeros(p_shape, np.int32))
    ops.maxpool2d_forward(p, arg, z, **pool_kw)
    return z, p, arg, ws


def _kw(case):
    _, _, strides, padding, dilation, pool, pool_strides, pool_padding = case
    conv_kw = dict(strides=strides, padding=padding, dilation_rate=dilation)
    return conv_kw, dict(pool_size=pool, strides=pool_strides, padding=pool_padding)


def _fused_kw(conv_kw, pool_kw):
    return dict(**conv_kw, pool_size=pool_kw["pool_size"], pool_strides=pool_kw["strides"],
                pool_padding=pool_kw["padding"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_finite_differences(device, case):
    x_shape, w_shape = case[:2]
    conv_kw, pool_kw = _kw(case)
    x, w, b = randn(x_shape, seed=1), randn(w_shape, seed=2, scale=0.5), randn(w_shape[3], seed=3)
    z, p, arg, ws = _forward(device, x, w, b, conv_kw, pool_kw)
    dp = randn(host(p).shape, seed=4)

    def loss(x_, w_, b_):
        z_ = conv_ref(x_, w_, b_, conv_kw["strides"], conv_kw["padding"], conv_kw["dilation_rate"])
        return np.sum(maxpool_ref(z_, pool_kw["pool_size"], pool_kw["strides"] or
                                  pool_kw["pool_size"], pool_kw["padding"])[0] * dp)

    assert_close(host(p), maxpool_ref(conv_ref(x, w, b, conv_kw["strides"], conv_kw["padding"],
                                               conv_kw["dilation_rate"]),
                                      pool_kw["pool_size"], pool_kw["strides"] or
                                      pool_kw["pool_size"], pool_kw["padding"])[0],
                 rtol=1e-4, atol=1e-4, what="forward p")
    dw0, db0 = randn(w_shape, seed=5), randn(w_shape[3], seed=6)
    dx, dw, db = on(device, np.full(x_shape, 7.0, np.float32), dw0, db0)  # dx overwritten
    dz = on(device, np.zeros(host(z).shape, np.float32))
    ops.conv2d_relu_maxpool_backward(dx, dw, db, on(device, dp), p, arg, *on(device, x, w), ws,
                                     dz, columns_ready=True, **_fused_kw(conv_kw, pool_kw))
    tol = dict(rtol=1e-4, atol=1e-4)
    assert_close(host(dx), numeric_grad(lambda v: loss(v, w, b), x), **tol, what="dx")
    assert_close(host(dw), dw0 + numeric_grad(lambda v: loss(x, v, b), w), **tol, what="dw")
    assert_close(host(db), db0 + numeric_grad(lambda v: loss(x, w, v), b), **tol, what="db")


@pytest.mark.parametrize("case", CASES[:2], ids=IDS[:2])
def test_matches_the_separate_ops_and_each_output_is_optional(device, case):
    x_shape, w_shape = case[:2]
    conv_kw, pool_kw = _kw(case)
    x, w, b = randn(x_shape, seed=7), randn(w_shape, seed=8, scale=0.5), randn(w_shape[3], seed=9)
    z, p, arg, ws = _forward(device, x, w, b, conv_kw, pool_kw)
    dp = on(device, randn(host(p).shape, seed=10))
    # the separate ops: pool backward, then the conv's backward with its ReLU mask
    dz = on(device, np.zeros(host(z).shape, np.float32))
    ops.maxpool2d_backward(dz, dp, arg, **pool_kw)
    ref_dx, ref_dw, ref_db = on(device, np.zeros(x_shape, np.float32),
                                np.zeros(w_shape, np.float32), np.zeros(w_shape[3], np.float32))
    ops.conv2d_backward_filter(ref_dw, ref_db, dz, on(device, x), ws, activation="relu", y=z,
                               **conv_kw)
    ops.conv2d_backward_data(ref_dx, dz, on(device, w), ws, activation="relu", y=z, **conv_kw)
    for want in ("dx", "dw", "db"):  # each output alone: the others None
        out = {k: None for k in ("dx", "dw", "db")}
        out[want] = on(device, np.zeros(host({"dx": ref_dx, "dw": ref_dw, "db": ref_db}[want])
                                        .shape, np.float32))
        ops.conv2d_relu_maxpool_backward(out["dx"], out["dw"], out["db"], dp, p, arg,
                                         *on(device, x, w), ws, dz,
                                         **_fused_kw(conv_kw, pool_kw))
        ref = {"dx": ref_dx, "dw": ref_dw, "db": ref_db}[want]
        assert_close(host(out[want]), host(ref), rtol=1e-5, atol=1e-5, what=want)


def test_nan_in_a_window_reaches_every_gradient(device):
    case = CASES[0]
    conv_kw, pool_kw = _kw(case)
    x, w, b = randn(case[0], seed=11), randn(case[1], seed=12), randn(case[1][3], seed=13)
    x[0, 2, 2, 1] = np.nan  # inside conv windows the pools cover
    z, p, arg, ws = _forward(device, x, w, b, conv_kw, pool_kw)
    assert np.isnan(host(p)).any()
    dx, dw, db = on(device, np.zeros(case[0], np.float32), np.zeros(case[1], np.float32),
                    np.zeros(case[1][3], np.float32))
    ops.conv2d_relu_maxpool_backward(dx, dw, db, on(device, np.ones(host(p).shape, np.float32)),
                                     p, arg, *on(device, x, w), ws, z,
                                     **_fused_kw(conv_kw, pool_kw))
    assert np.isnan(host(dw)).any() and np.isnan(host(db)).all() and np.isnan(host(dx)[0]).any()
    assert not np.isnan(host(dx)[1]).any()  # the other image is untouched by it


def test_argmax_outside_its_window_or_relu_off_contributes_nothing(device):
    # x (1, 4, 4, 1), w 1x1 = 1: z = relu(x); 2x2 pool -> 2x2 windows
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    x[0, 0, 0] = -3.0  # window (0, 0)'s max is 6 at (1, 1); pointed at (0, 0) instead below
    w = np.ones((1, 1, 1, 1), np.float32)
    p = np.array([6, 8, 14, 16], np.float32).reshape(1, 2, 2, 1)
    p[0, 1, 1] = -1.0  # the ReLU off for window (1, 1) (p <= 0: no gradient)
    arg = np.array([0, 99, 13, 15], np.int32).reshape(1, 2, 2, 1)  # (0,0) ok, 99 out of range
    dx, dw, db = on(device, np.full((1, 4, 4, 1), 5.0, np.float32), np.zeros((1, 1, 1, 1),
                                                                              np.float32),
                    np.zeros(1, np.float32))
    dp = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    ws = on(device, np.zeros(ops.conv2d_workspace_shape(x.shape, w.shape), np.float32))
    ops.conv2d_relu_maxpool_backward(dx, dw, db, *on(device, dp, p, arg, x, w), ws,
                                     on(device, np.zeros_like(x)))
    expected = np.zeros(16)
    expected[[0, 13]] = [1.0, 3.0]
    assert_close(host(dx).ravel(), expected, rtol=0, atol=0, what="dx")
    assert_close(host(db), [4.0], rtol=0, atol=0, what="db")
    assert_close(host(dw).ravel(), [1 * -3.0 + 3 * 14.0], rtol=0, atol=0, what="dw")


def test_bad_arguments_name_the_op():
    x, w = np.zeros((1, 6, 6, 2), np.float32), np.zeros((3, 3, 2, 4), np.float32)
    good = np.zeros((1, 2, 2, 4), np.float32)
    arg = np.zeros((1, 2, 2, 4), np.int32)
    ws = np.zeros(ops.conv2d_workspace_shape(x.shape, w.shape), np.float32)
    dz = np.zeros((1, 4, 4, 4), np.float32)
    op = ops.conv2d_relu_maxpool_backward
    with pytest.raises(ValueError, match=r"conv2d_relu_maxpool_backward.*dp"):
        op(None, None, None, np.zeros((1, 3, 3, 4), np.float32), good, arg, x, w, ws, dz)
    with pytest.raises(TypeError, match=r"conv2d_relu_maxpool_backward.*argmax.dtype"):
        op(None, None, None, good, good, good, x, w, ws, dz)
    with pytest.raises(ValueError, match=r"conv2d_relu_maxpool_backward.*dw"):
        op(None, np.zeros((3, 3, 2, 5), np.float32), None, good, good, arg, x, w, ws, dz)
    with pytest.raises(ValueError, match=r"conv2d_relu_maxpool_backward.*dz"):
        op(None, None, None, good, good, arg, x, w, ws, np.zeros((1, 4, 4, 3), np.float32))
    with pytest.raises(ValueError, match=r"conv2d_relu_maxpool_backward.*workspace"):
        op(None, None, None, good, good, arg, x, w, ws[:10], dz)

