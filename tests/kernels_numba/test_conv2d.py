import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

X_SHAPE, W_SHAPE = (1, 5, 7, 3), (3, 2, 3, 2)  # odd, non-square; kernel 3x2, 2 filters
CASES = [((1, 1), "valid"), ((2, 2), "valid"), ((1, 1), "same"), ((2, 2), "same")]
IDS = [f"s{s[0]}-{p}" for s, p in CASES]


def _pads(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def conv_ref(x, w, b=None, strides=(1, 1), padding="valid", activation="linear"):
    """float64 loop reference: zero-pad explicitly, then slide the window."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    ho, top, bottom = _pads(h, kh, strides[0], padding)
    wo, left, right = _pads(wd, kw, strides[1], padding)
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    y = np.zeros((n, ho, wo, f))
    for i in range(ho):
        for j in range(wo):
            r, s = i * strides[0], j * strides[1]
            patch = xp[:, r:r + kh, s:s + kw, :]
            y[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    if b is not None:
        y = y + b
    return {"linear": lambda v: v, "relu": lambda v: np.maximum(v, 0),
            "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}[activation](y)


def _buffers(device, x_shape, w_shape, strides, padding):
    y_shape = ops.conv2d_output_shape(x_shape, w_shape, strides=strides, padding=padding)
    ws_shape = ops.conv2d_workspace_shape(x_shape, w_shape, strides=strides, padding=padding)
    ws = on(device, np.full(ws_shape, np.nan, np.float32))  # garbage in: the ops must not read it
    return y_shape, ws


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
@pytest.mark.parametrize("activation", ["linear", "relu"])
def test_forward(device, strides, padding, activation):
    x, w, b = randn(X_SHAPE, seed=1), randn(W_SHAPE, seed=2), randn((2,), seed=3)
    y_shape, ws = _buffers(device, X_SHAPE, W_SHAPE, strides, padding)
    y = on(device, np.zeros(y_shape, np.float32))
    ops.conv2d_forward(y, *on(device, x, w, b), ws, strides=strides, padding=padding,
                       activation=activation)
    assert_close(host(y), conv_ref(x, w, b, strides, padding, activation), what="conv2d_forward")


@pytest.mark.parametrize("activation", ["sigmoid", "tanh"])
def test_forward_batch_no_bias(device, activation):
    x_shape, w_shape = (2, 4, 3, 2), (2, 2, 2, 3)
    x, w = randn(x_shape, seed=4), randn(w_shape, seed=5)
    y_shape, ws = _buffers(device, x_shape, w_shape, (1, 2), "same")
    y = on(device, np.zeros(y_shape, np.float32))
    ops.conv2d_forward(y, *on(device, x, w), None, ws, strides=(1, 2), padding="same",
                       activation=activation)
    assert_close(host(y), conv_ref(x, w, None, (1, 2), "same", activation), what=activation)


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_backward_data(device, strides, padding):
    x, w = randn(X_SHAPE, seed=6), randn(W_SHAPE, seed=7)
    y_shape, ws = _buffers(device, X_SHAPE, W_SHAPE, strides, padding)
    dy = randn(y_shape, seed=8)
    dx = on(device, np.full(X_SHAPE, 7.0, np.float32))  # overwritten, not accumulated
    ops.conv2d_backward_data(dx, *on(device, dy, w), ws, strides=strides, padding=padding)
    expected = numeric_grad(lambda v: np.sum(conv_ref(v, w, None, strides, padding) * dy), x)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-4, what="conv2d_backward_data")


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_backward_filter_accumulates(device, strides, padding):
    x, w = randn(X_SHAPE, seed=9), randn(W_SHAPE, seed=10)
    y_shape, ws = _buffers(device, X_SHAPE, W_SHAPE, strides, padding)
    dy = randn(y_shape, seed=11)
    dw0, db0 = randn(W_SHAPE, seed=12), randn((2,), seed=13)
    dw, db = on(device, dw0, db0)
    ops.conv2d_backward_filter(dw, db, *on(device, dy, x), ws, strides=strides, padding=padding)
    exp_dw = dw0 + numeric_grad(lambda v: np.sum(conv_ref(x, v, None, strides, padding) * dy), w)
    exp_db = db0 + numeric_grad(lambda v: np.sum(conv_ref(x, w, v, strides, padding) * dy),
                                np.zeros(2))
    assert_close(host(dw), exp_dw, rtol=1e-4, atol=1e-4, what="dw")
    assert_close(host(db), exp_db, rtol=1e-4, atol=1e-4, what="db")


@pytest.mark.parametrize("strides,padding", [((1, 1), "valid"), ((2, 2), "same")],
                         ids=["s1-valid", "s2-same"])
@pytest.mark.parametrize("activation", ["relu", "sigmoid", "tanh"])
def test_backward_fused_activation(device, strides, padding, activation):
    """dy wrt the OUTPUT y = f(conv + b): both backward ops apply f'(y) as they read dy
    (finite differences through the activation); dy is left unchanged."""
    x_shape = (2, 5, 7, 3)
    x, w, b = randn(x_shape, seed=21), randn(W_SHAPE, seed=22), randn((2,), seed=23)
    y_shape, ws = _buffers(device, x_shape, W_SHAPE, strides, padding)
    dy = randn(y_shape, seed=24)
    kw = {"strides": strides, "padding": padding}
    y = on(device, np.zeros(y_shape, np.float32))
    ops.conv2d_forward(y, *on(device, x, w, b), ws, activation=activation, **kw)
    dw0, db0 = randn(W_SHAPE, seed=25), randn((2,), seed=26)
    dw, db, dyd = on(device, dw0, db0, dy)
    dx = on(device, np.full(x_shape, np.nan, np.float32))
    ops.conv2d_backward_filter(dw, db, dyd, on(device, x), ws, columns_ready=True,
                               activation=activation, y=y, **kw)
    ops.conv2d_backward_data(dx, dyd, on(device, w), ws, activation=activation, y=y, **kw)
    np.testing.assert_array_equal(host(dyd), dy)

    def loss(x_, w_, b_):
        return np.sum(conv_ref(x_, w_, b_, strides, padding, activation) * dy)

    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    assert_close(host(dx), numeric_grad(lambda v: loss(v, w64, b64), x64), rtol=1e-4, atol=1e-4,
                 what=f"dx {activation}")
    assert_close(host(dw), dw0 + numeric_grad(lambda v: loss(x64, v, b64), w64), rtol=1e-4,
                 atol=1e-4, what=f"dw {activation}")
    assert_close(host(db), db0 + numeric_grad(lambda v: loss(x64, w64, v), b64), rtol=1e-4,
                 atol=1e-4, what=f"db {activation}")


def test_backward_needs_y_with_an_activation():
    x, w = np.zeros(X_SHAPE, np.float32), np.zeros(W_SHAPE, np.float32)
    y_shape, ws = _buffers("cpu", X_SHAPE, W_SHAPE, (1, 1), "valid")
    dy = np.zeros(y_shape, np.float32)
    with pytest.raises(ValueError, match=r"conv2d_backward_data: expected y \(the forward "
                                         r"output, shape \(1, 3, 6, 2\)\) with activation='relu'"):
        ops.conv2d_backward_data(x.copy(), dy, w, ws, activation="relu")
    with pytest.raises(ValueError, match=r"conv2d_backward_filter: expected y.shape == "
                                         r"\(1, 3, 6, 2\); received \(1, 3, 6, 3\)"):
        ops.conv2d_backward_filter(w.copy(), None, dy, x, ws, activation="tanh",
                                   y=np.zeros((1, 3, 6, 3), np.float32))
    with pytest.raises(ValueError, match=r"conv2d_backward_filter: expected activation in"):
        ops.conv2d_backward_filter(w.copy(), None, dy, x, ws, activation="elu", y=dy)


def test_pointwise_conv_all_ops(device):
    # 1x1 stride-1 convolutions skip im2col on the CPU; check all three ops there.
    x_shape, w_shape = (1, 3, 5, 4), (1, 1, 4, 3)
    x, w, dy = randn(x_shape, seed=14), randn(w_shape, seed=15), randn((1, 3, 5, 3), seed=16)
    y_shape, ws = _buffers(device, x_shape, w_shape, (1, 1), "same")
    y, dx, dw = on(device, np.zeros(y_shape, np.float32), np.zeros(x_shape, np.float32),
                   np.zeros(w_shape, np.float32))
    xb, wb, dyb = on(device, x, w, dy)
    ops.conv2d_forward(y, xb, wb, None, ws, padding="same")
    ops.conv2d_backward_data(dx, dyb, wb, ws, padding="same")
    ops.conv2d_backward_filter(dw, None, dyb, xb, ws, padding="same")
    x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
    assert_close(host(y), conv_ref(x, w), what="y")
    assert_close(host(dx), dy64 @ w64[0, 0].T, what="dx")
    assert_close(host(dw)[0, 0], x64.reshape(-1, 4).T @ dy64.reshape(-1, 3), what="dw")


def test_shapes():
    assert ops.conv2d_output_shape((64, 28, 28, 1), (3, 3, 1, 32)) == (64, 26, 26, 32)
    assert ops.conv2d_output_shape((2, 5, 7, 3), (3, 2, 3, 4), strides=(2, 2),
                                   padding="same") == (2, 3, 4, 4)
    assert ops.conv2d_output_shape((1, 5, 7, 3), (3, 2, 3, 4), strides=2) == (1, 2, 3, 4)
    # columns (M=36 x K=18), then the minimum scratch (1); K is not split
    assert ops.conv2d_workspace_shape((2, 5, 7, 3), (3, 2, 3, 4)) == (2 * 3 * 6 * 18 + 1,)
    # the reference CNN's second conv: columns + 15 split-K partials of dw (288 x 64)
    # with db as one extra row (289 x 64)
    assert ops.conv2d_workspace_shape((64, 13, 13, 32), (3, 3, 32, 64)) == \
        (64 * 11 * 11 * 288 + 15 * 289 * 64,)
    # one input channel: the columns get a row of ones (the bias gradient's GEMM row)
    n_m = 64 * 26 * 26
    assert ops.conv2d_workspace_shape((64, 28, 28, 1), (3, 3, 1, 32)) == \
        (n_m * 10 + ops.weight_grad_workspace_shape(9, 32, n_m)[0],)


def _args(x_shape=X_SHAPE, w_shape=W_SHAPE, strides=(1, 1), padding="valid"):
    y_shape = (1, 3, 6, 2)
    ws = np.zeros(ops.conv2d_workspace_shape(X_SHAPE, W_SHAPE), np.float32)
    return (np.zeros(y_shape, np.float32), np.zeros(x_shape, np.float32),
            np.zeros(w_shape, np.float32), None, ws)


def test_bad_arguments_name_the_op():
    with pytest.raises(ValueError, match=r"conv2d_forward: kernel w.shape=\(7, 2, 3, 2\) is larger "
                                         r"than the input x.shape=\(1, 5, 7, 3\)"):
        ops.conv2d_forward(*_args(w_shape=(7, 2, 3, 2)))
    with pytest.raises(ValueError, match="conv2d_output_shape: kernel .* larger"):
        ops.conv2d_output_shape((1, 2, 2, 1), (3, 3, 1, 1))
    with pytest.raises(ValueError, match=r"conv2d_forward: expected padding in \['same', 'v"):
        ops.conv2d_forward(*_args(), padding="full")
    with pytest.raises(ValueError, match="conv2d_forward: expected strides to be a positive"):
        ops.conv2d_forward(*_args(), strides=(0, 1))
    with pytest.raises(ValueError, match="conv2d_forward: expected strides to be a pair"):
        ops.conv2d_forward(*_args(), strides=(1, 1, 1))
    with pytest.raises(ValueError, match=r"conv2d_forward: expected y.shape == \(1, 3, 6, 2\); "
                                         r"received \(1, 3, 6, 4\)"):
        ops.conv2d_forward(np.zeros((1, 3, 6, 4), np.float32), *_args()[1:])
    with pytest.raises(ValueError, match="conv2d_forward: expected w.shape == .* input channels"):
        ops.conv2d_forward(*_args(w_shape=(3, 2, 4, 2)))
    with pytest.raises(TypeError, match="conv2d_forward: expected x.dtype == float32"):
        y, x, w, b, ws = _args()
        ops.conv2d_forward(y, x.astype(np.float64), w, b, ws)
    with pytest.raises(ValueError, match="conv2d_forward: expected activation in"):
        ops.conv2d_forward(*_args(), activation="softmax")
    with pytest.raises(ValueError, match=r"conv2d_forward: expected workspace.shape == \(325,\)"):
        y, x, w, b, ws = _args()
        ops.conv2d_forward(y, x, w, b, ws[:10])
    with pytest.raises(ValueError, match=r"conv2d_backward_filter: expected db.shape == \(2,\)"):
        y, x, w, b, ws = _args()
        ops.conv2d_backward_filter(w, np.zeros(3, np.float32), y, x, ws)
    with pytest.raises(ValueError, match="conv2d_backward_data: expected dy.shape"):
        y, x, w, b, ws = _args()
        ops.conv2d_backward_data(x, y[:, :2].copy(), w, ws)
    with pytest.raises(ValueError, match="C-contiguous"):
        y, x, w, b, ws = _args()
        ops.conv2d_forward(y, np.zeros((1, 5, 14, 3), np.float32)[:, :, ::2], w, b, ws)
