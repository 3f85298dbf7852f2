"""conv2d's special CPU paths against the float64 reference on both devices: a
one-channel input (transposed im2col columns) and backward-filter reusing the columns
the forward left in the workspace (columns_ready=True)."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn
from tests.kernels_numba.test_conv2d import CASES, IDS, _buffers, conv_ref

X1_SHAPE, W1_SHAPE = (2, 6, 5, 1), (3, 2, 1, 3)  # one channel, odd sizes, batch 2


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_single_channel_forward_and_backward(device, strides, padding):
    x, w, b = randn(X1_SHAPE, seed=21), randn(W1_SHAPE, seed=22), randn((3,), seed=23)
    y_shape, ws = _buffers(device, X1_SHAPE, W1_SHAPE, strides, padding)
    dy = randn(y_shape, seed=24)
    y = on(device, np.zeros(y_shape, np.float32))
    xb, wb, bb, dyb = on(device, x, w, b, dy)
    kw = {"strides": strides, "padding": padding}
    ops.conv2d_forward(y, xb, wb, bb, ws, activation="relu", **kw)
    assert_close(host(y), conv_ref(x, w, b, strides, padding, "relu"), what="y")

    dw, db = on(device, np.zeros(W1_SHAPE, np.float32), np.zeros(3, np.float32))
    ops.conv2d_backward_filter(dw, db, dyb, xb, ws, columns_ready=True, **kw)
    exp_dw = numeric_grad(lambda v: np.sum(conv_ref(x, v, None, strides, padding) * dy), w)
    assert_close(host(dw), exp_dw, rtol=1e-4, atol=1e-4, what="dw")
    assert_close(host(db), dy.astype(np.float64).sum(axis=(0, 1, 2)), what="db")

    dx = on(device, np.full(X1_SHAPE, 7.0, np.float32))
    ops.conv2d_backward_data(dx, dyb, wb, ws, **kw)
    exp_dx = numeric_grad(lambda v: np.sum(conv_ref(v, w, None, strides, padding) * dy), x)
    assert_close(host(dx), exp_dx, rtol=1e-4, atol=1e-4, what="dx")


@pytest.mark.parametrize("x_shape,w_shape", [((1, 5, 7, 3), (3, 2, 3, 2)),
                                             ((3, 9, 8, 1), (3, 3, 1, 4))], ids=["c3", "c1"])
def test_columns_ready_matches_rebuilding(device, x_shape, w_shape):
    x, w, dy_seed = randn(x_shape, seed=25), randn(w_shape, seed=26), 27
    y_shape, ws = _buffers(device, x_shape, w_shape, (2, 1), "same")
    dy = randn(y_shape, seed=dy_seed)
    xb, wb, dyb = on(device, x, w, dy)
    y = on(device, np.zeros(y_shape, np.float32))
    ops.conv2d_forward(y, xb, wb, None, ws, strides=(2, 1), padding="same")
    reused, rebuilt = (on(device, np.zeros(w_shape, np.float32)) for _ in range(2))
    ops.conv2d_backward_filter(reused, None, dyb, xb, ws, strides=(2, 1), padding="same",
                               columns_ready=True)
    ops.conv2d_backward_filter(rebuilt, None, dyb, xb, ws, strides=(2, 1), padding="same")
    np.testing.assert_array_equal(host(reused), host(rebuilt))


def test_columns_ready_must_be_bool():
    x, w = np.zeros((1, 4, 4, 1), np.float32), np.zeros((2, 2, 1, 1), np.float32)
    y_shape, ws = _buffers("cpu", x.shape, w.shape, (1, 1), "valid")
    with pytest.raises(TypeError, match="conv2d_backward_filter: expected columns_ready"):
        ops.conv2d_backward_filter(np.zeros_like(w), None, np.zeros(y_shape, np.float32), x,
                                   ws, columns_ready=1)


@pytest.mark.cudasim
@pytest.mark.parametrize("w_shape,launches", [((3, 3, 1, 2), ["_im2col_kernel", "_gemm_nn_t64_kernel"]),
                                              ((1, 1, 1, 2), ["_gemm_nn_t64_kernel"])],
                         ids=["3x3", "1x1"])
def test_cuda_forward_fuses_bias_and_activation(w_shape, launches):
    """Bias + activation run in the GEMM epilogue: no separate pass (a 1x1 conv: one launch)."""
    from kernels_numba import cuda_available, record_launches

    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x_shape = (1, 4, 5, 1)
    x, w, b = randn(x_shape, seed=31), randn(w_shape, seed=32), randn((2,), seed=33)
    y_shape, ws = _buffers("cuda", x_shape, w_shape, (1, 1), "valid")
    for act in ("relu", "sigmoid", "tanh"):
        y = on("cuda", np.full(y_shape, np.nan, np.float32))
        with record_launches() as calls:
            ops.conv2d_forward(y, *on("cuda", x, w, b), ws, activation=act)
        assert [c.name for c in calls] == launches
        assert_close(host(y), conv_ref(x, w, b, activation=act), what=f"fused {act}")


def test_bias_gradient_over_several_row_blocks(device):
    """M = 3*9*9 = 243 output pixels > one row block (128): the bias gradient adds two
    partial rows in order (CUDA) - and equals the plain column sum; repeatable bits."""
    x_shape, w_shape = (3, 11, 11, 1), (3, 3, 1, 2)
    x = randn(x_shape, seed=41)
    y_shape, ws = _buffers(device, x_shape, w_shape, (1, 1), "valid")
    dy = randn(y_shape, seed=42)
    out = []
    for _ in range(2):
        dw, db = on(device, np.zeros(w_shape, np.float32), np.zeros(2, np.float32))
        ops.conv2d_backward_filter(dw, db, *on(device, dy, x), ws)
        out.append((host(dw), host(db)))
    assert_close(out[0][1], dy.astype(np.float64).sum(axis=(0, 1, 2)), what="db")
    cols = np.lib.stride_tricks.sliding_window_view(x[..., 0].astype(np.float64), (3, 3),
                                                    axis=(1, 2))
    exp_dw = np.einsum("nhwij,nhwf->ijf", cols, dy.astype(np.float64))[:, :, None, :]
    assert_close(out[0][0], exp_dw, what="dw")
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_relu_bias_gradient_in_the_mask_pass_over_threads():
    """CPU, C > 1: backward-filter takes db from the ReLU mask's pass over dy (8 x 10 x
    10 x 48 floats: split over the threads); dw and db against float64, repeatable bits."""
    x_shape, w_shape = (8, 12, 12, 2), (3, 3, 2, 48)
    x, w, b = randn(x_shape, seed=81), randn(w_shape, seed=82), randn((48,), seed=83)
    y_shape, ws = _buffers("cpu", x_shape, w_shape, (1, 1), "valid")
    y = np.zeros(y_shape, np.float32)
    ops.conv2d_forward(y, x, w, b, ws, activation="relu")
    dy = randn(y_shape, seed=84)
    results = []
    for _ in range(2):
        dw, db = np.zeros(w_shape, np.float32), np.zeros(48, np.float32)
        ops.conv2d_backward_filter(dw, db, dy, x, ws, columns_ready=True, activation="relu",
                                   y=y)
        results.append((dw, db))
    g = np.where(y > 0, dy, 0).astype(np.float64)
    cols = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3), axis=(1, 2))
    exp_dw = np.einsum("nhwcij,nhwf->ijcf", cols, g)
    assert_close(results[0][0], exp_dw, what="dw")
    assert_close(results[0][1], g.sum(axis=(0, 1, 2)), what="db")
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
