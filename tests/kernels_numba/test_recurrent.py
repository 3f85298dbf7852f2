"""Recurrent, embedding and conv1d ops: one step forward vs a float64 NumPy reference,
backward vs finite differences of that reference, on both devices (cuda = simulator)."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

TOL = dict(rtol=1e-5, atol=1e-5)
GTOL = dict(rtol=1e-4, atol=1e-4)


def sig(v):
    return 1 / (1 + np.exp(-v))


def lstm_step(z, c_prev, b):
    u = c_prev.shape[1]
    z = z + (0 if b is None else b)
    i, f, g, o = sig(z[:, :u]), sig(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), sig(z[:, 3 * u:])
    c = f * c_prev + i * g
    return o * np.tanh(c), c


def gru_step(xg, inner, h_prev, b):
    u = h_prev.shape[1]
    xg = xg + (0 if b is None else b[0])
    inner = inner + (0 if b is None else b[1])
    z, r = sig(xg[:, :u] + inner[:, :u]), sig(xg[:, u:2 * u] + inner[:, u:2 * u])
    hh = np.tanh(xg[:, 2 * u:] + r * inner[:, 2 * u:])
    return z * h_prev + (1 - z) * hh


@pytest.mark.parametrize("n,u,use_bias", [(1, 1, True), (3, 5, False), (2, 33, True)])
def test_lstm_step(device, n, u, use_bias):
    z, cp, hp = randn((n, 4 * u), 1), randn((n, u), 2), randn((n, u), 3)
    b = randn((4 * u,), 4) if use_bias else None
    mask = np.ones((n, 2), np.float32)
    mask[0, 1] = 0
    for t in (0, 1):
        bufs = on(device, z, cp, hp, mask)
        g, cpd, hpd, md = bufs
        h, c = on(device, np.zeros((n, u), np.float32), np.zeros((n, u), np.float32))
        ops.lstm_step_forward(h, c, g, hpd, cpd, None if b is None else on(device, b), md, t=t)
        h_ref, c_ref = lstm_step(z.astype(np.float64), cp.astype(np.float64), b)
        keep = mask[:, t:t + 1] != 0
        assert_close(host(h), np.where(keep, h_ref, hp), **TOL, what="h")
        assert_close(host(c), np.where(keep, c_ref, cp), **TOL, what="c")
    # backward of loss = sum(h*wh + c*wc), unmasked, with dy added at t_out
    wh, wc, dy = randn((n, u), 5), randn((n, u), 6), randn((n, 2, u), 7)
    g, cpd, h, c = on(device, z, cp, np.zeros((n, u), np.float32), np.zeros((n, u), np.float32))
    ops.lstm_step_forward(h, c, g, on(device, hp), cpd, None if b is None else on(device, b))
    dh, dc = on(device, wh, wc)
    ops.lstm_step_backward(g, dh, dc, c, cpd, None, on(device, dy), t_out=1)

    def loss(zz, cc):
        hh, c2 = lstm_step(zz, cc, b)
        return float(((wh + dy[:, 1]) * hh).sum() + (wc * c2).sum())
    assert_close(host(g), numeric_grad(lambda v: loss(v, cp.astype(np.float64)), z), **GTOL,
                 what="dgates")
    assert_close(host(dc), numeric_grad(lambda v: loss(z.astype(np.float64), v), cp), **GTOL,
                 what="dc_prev")
    assert_close(host(dh), np.zeros((n, u)), what="dh bypass")


def test_lstm_step_backward_masked_carries(device):
    n, u = 2, 3
    g = on(device, randn((n, 4 * u), 1))
    dh, dc = on(device, randn((n, u), 2), randn((n, u), 3))
    mask = on(device, np.zeros((n, 1), np.float32))
    dh0, dc0 = host(dh).copy(), host(dc).copy()
    c = on(device, randn((n, u), 4))
    ops.lstm_step_backward(g, dh, dc, c, c, mask, t=0)
    assert_close(host(g), np.zeros((n, 4 * u)))
    assert_close(host(dh), dh0)
    assert_close(host(dc), dc0)


@pytest.mark.parametrize("n,u,use_bias", [(1, 1, True), (3, 4, False), (2, 33, True)])
def test_gru_step(device, n, u, use_bias):
    xg, inner, hp = randn((n, 3 * u), 1), randn((n, 3 * u), 2), randn((n, u), 3)
    b = randn((2, 3 * u), 4) if use_bias else None
    g, i, hpd, h = on(device, xg, inner, hp, np.zeros((n, u), np.float32))
    ops.gru_step_forward(h, g, i, hpd, None if b is None else on(device, b))
    f64 = [a.astype(np.float64) for a in (xg, inner, hp)]
    assert_close(host(h), gru_step(*f64, b), **TOL, what="h")
    w = randn((n, u), 5)
    dh = on(device, w)
    ops.gru_step_backward(g, i, dh, hpd)

    def loss(a, bb, cc):
        return float((w * gru_step(a, bb, cc, b)).sum())
    assert_close(host(g), numeric_grad(lambda v: loss(v, f64[1], f64[2]), xg), **GTOL, what="dx")
    assert_close(host(i), numeric_grad(lambda v: loss(f64[0], v, f64[2]), inner), **GTOL,
                 what="dinner")
    # dh holds the bypass part: d/dh_prev minus the part through inner (inner fixed here)
    assert_close(host(dh), numeric_grad(lambda v: loss(f64[0], f64[1], v), hp), **GTOL,
                 what="dh bypass")


@pytest.mark.parametrize("kind", ["tanh", "relu", "sigmoid", "linear", "hard_sigmoid"])
def test_simple_step(device, kind):
    n, u = 3, 5
    z, hp, b = randn((n, u), 1), randn((n, u), 2), randn((u,), 3)
    acts = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0), "sigmoid": sig,
            "linear": lambda v: v, "hard_sigmoid": lambda v: np.clip(v / 6 + 0.5, 0, 1)}
    zd, hpd, h = on(device, z, hp, np.zeros((n, u), np.float32))
    ops.simple_step_forward(h, zd, hpd, on(device, b), activation=kind)
    assert_close(host(h), acts[kind](z.astype(np.float64) + b), **TOL)
    w = randn((n, u), 4)
    dz, dh = on(device, np.zeros((n, u), np.float32), w)
    ops.simple_step_backward(dz, dh, h, activation=kind)
    num = numeric_grad(lambda v: float((w * acts[kind](v + b)).sum()), z)
    assert_close(host(dz), num, **GTOL)


@pytest.mark.parametrize("reverse", [False, True])
def test_time_major_layout(device, reverse):
    x, s = randn((2, 5, 3), 1), randn((2, 3), 2)
    y = on(device, np.zeros((5, 2, 3), np.float32))
    ops.to_time_major(y, on(device, x), reverse=reverse, scale=on(device, s))
    xr = x[:, ::-1] if reverse else x
    assert_close(host(y), np.transpose(xr * s[:, None], (1, 0, 2)))
    back = on(device, np.zeros((2, 5, 3), np.float32))
    ops.from_time_major(back, y, reverse=reverse)
    assert_close(host(back), x * s[:, None])


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave"])
def test_merge(device, mode):
    a, b, = randn((2, 4, 3), 1), randn((2, 4, 3), 2)
    width = 6 if mode == "concat" else 3
    br = b[:, ::-1]
    ref = {"concat": np.concatenate([a, br], -1), "sum": a + br, "mul": a * br,
           "ave": (a + br) / 2}[mode]
    y = on(device, np.zeros((2, 4, width), np.float32))
    ad, bd = on(device, a, b)
    ops.merge_forward(y, ad, bd, mode=mode, reverse=True)
    assert_close(host(y), ref)
    w = randn((2, 4, width), 3)
    da, db = on(device, np.zeros_like(a), np.zeros_like(b))
    ops.merge_backward(da, db, on(device, w), ad, bd, mode=mode, reverse=True)

    def f(aa, bb):
        bb = bb[:, ::-1]
        out = {"concat": lambda: np.concatenate([aa, bb], -1), "sum": lambda: aa + bb,
               "mul": lambda: aa * bb, "ave": lambda: (aa + bb) / 2}[mode]()
        return float((out * w).sum())
    assert_close(host(da), numeric_grad(lambda v: f(v, b.astype(np.float64)), a), **GTOL)
    assert_close(host(db), numeric_grad(lambda v: f(a.astype(np.float64), v), b), **GTOL)


def test_step_ops_reject_bad_shapes():
    h = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="lstm_step_forward: expected gates.shape"):
        ops.lstm_step_forward(h, h, np.zeros((2, 11), np.float32), h, h)
    with pytest.raises(ValueError, match="expected 0 <= t < 2"):
        ops.simple_step_forward(h, h, h, None, np.ones((2, 2), np.float32), t=2)
    with pytest.raises(ValueError, match="activation"):
        ops.simple_step_forward(h, h, h, activation="gelu")


# embedding and masks


def test_embedding(device):
    table = randn((7, 5), 1)
    ids = np.array([0, 6, 3, 3, 2.5, 7, -1, 6], np.float32)  # 2.5, 7, -1 are invalid
    y = on(device, np.zeros((8, 5), np.float32))
    ops.embedding_forward(y, on(device, ids), on(device, table))
    out = host(y)
    valid = [0, 1, 2, 3, 7]
    assert_close(out[valid], table[ids[valid].astype(int)])
    assert np.isnan(out[[4, 5, 6]]).all()
    dy = randn((8, 5), 2)
    dt = on(device, np.ones((7, 5), np.float32))
    ops.embedding_backward(dt, on(device, dy), on(device, ids))
    ref = np.ones((7, 5))
    for m in valid:
        ref[int(ids[m])] += dy[m]
    assert_close(host(dt), ref)
    mask = on(device, np.zeros(8, np.float32))
    ops.embedding_mask(mask, on(device, ids))
    assert_close(host(mask), (ids != 0).astype(np.float32))


def test_masking(device):
    x = randn((2, 4, 3), 1)
    x[0, 1] = 0.0
    x[1, 3] = 0.0
    x[1, 0, 0] = 0.0  # partly zero: kept
    y, m = on(device, np.zeros_like(x), np.zeros((2, 4), np.float32))
    ops.masking_forward(y, m, on(device, x), mask_value=0.0)
    ref_m = np.any(x != 0, axis=-1).astype(np.float32)
    assert_close(host(m), ref_m)
    assert_close(host(y), x * ref_m[..., None])
    dy = randn((2, 4, 3), 2)
    dx = on(device, np.zeros_like(x))
    ops.masking_backward(dx, on(device, dy), m)
    assert_close(host(dx), dy * ref_m[..., None])


# conv1d columns and upsampling


def conv1d_ref(x, w, stride, padding, dil):
    n, t, c = x.shape
    k, _, f = w.shape
    t_out, pad = ops.conv1d_geometry(t, k, strides=stride, padding=padding, dilation_rate=dil)
    y = np.zeros((n, t_out, f))
    for o in range(t_out):
        for j in range(k):
            ti = o * stride + j * dil - pad
            if 0 <= ti < t:
                y[:, o] += x[:, ti] @ w[j]
    return y


@pytest.mark.parametrize("k,stride,padding,dil", [
    (3, 1, "valid", 1), (3, 2, "same", 1), (2, 1, "causal", 2), (3, 3, "same", 2),
    (1, 1, "valid", 1), (4, 2, "causal", 1)])
def test_conv1d_columns(device, k, stride, padding, dil):
    n, t, c, f = 2, 7, 3, 2
    x, w = randn((n, t, c), 1), randn((k, c, f), 2)
    t_out, _ = ops.conv1d_geometry(t, k, strides=stride, padding=padding, dilation_rate=dil)
    kw = dict(kernel_size=k, strides=stride, padding=padding, dilation_rate=dil)
    cols = on(device, np.zeros((n * t_out, k * c), np.float32))
    ops.conv1d_im2col(cols, on(device, x), **kw)
    y = host(cols) @ w.reshape(k * c, f)
    assert_close(y.reshape(n, t_out, f), conv1d_ref(x.astype(np.float64), w, stride, padding,
                                                   dil), **TOL)
    g = randn((n, t_out, f), 3)
    dcols = on(device, (g.reshape(-1, f) @ w.reshape(k * c, f).T).astype(np.float32))
    dx = on(device, np.full((n, t, c), np.nan, np.float32))
    ops.conv1d_col2im(dx, dcols, **kw)
    num = numeric_grad(lambda v: float((conv1d_ref(v, w, stride, padding, dil) * g).sum()), x)
    assert_close(host(dx), num, **GTOL)


def test_conv1d_geometry_rejects_long_kernel():
    with pytest.raises(ValueError, match="longer than the input"):
        ops.conv1d_geometry(4, 3, padding="valid", dilation_rate=2)


def test_upsampling1d(device):
    x = randn((2, 3, 4), 1)
    y = on(device, np.zeros((2, 9, 4), np.float32))
    ops.upsampling1d_forward(y, on(device, x), size=3)
    assert_close(host(y), np.repeat(x, 3, axis=1))
    dy = randn((2, 9, 4), 2)
    dx = on(device, np.zeros_like(x))
    ops.upsampling1d_backward(dx, on(device, dy), size=3)
    assert_close(host(dx), dy.reshape(2, 3, 3, 4).sum(2))
