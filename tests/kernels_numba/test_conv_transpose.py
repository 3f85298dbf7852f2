"""conv_transpose: the transposed convolution composed from ops.conv2d (as
kerasish.layers.Conv2DTranspose runs it) against a float64 scatter reference, its
gradients against finite differences, and bias_activation; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def ref_transpose(x, w, strides, padding):
    """Scatter form: every input pixel adds x * w into its output window (float64)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, h, wd, c = x.shape
    kh, kw, f, _ = w.shape
    sh, sw = strides
    full = np.zeros((n, (h - 1) * sh + kh, (wd - 1) * sw + kw, f))
    for i in range(h):
        for j in range(wd):
            full[:, i * sh:i * sh + kh, j * sw:j * sw + kw] += \
                np.einsum("nc,abfc->nabf", x[:, i, j], w)
    ho, wo = ops.conv2d_transpose_output_shape(x.shape, w.shape, strides=strides,
                                               padding=padding)[1:3]
    if padding == "valid":
        out = np.zeros((n, ho, wo, f))
        out[:, :full.shape[1], :full.shape[2]] = full[:, :ho, :wo]
        return out
    pt = max(kh - sh, 0) // 2
    pl = max(kw - sw, 0) // 2
    out = np.zeros((n, ho + kh + 2, wo + kw + 2, f))
    out[:, :full.shape[1], :full.shape[2]] = full
    return out[:, pt:pt + ho, pl:pl + wo]


def _run(device, x, w, b, strides, padding, activation="linear"):
    out = ops.conv2d_transpose_output_shape(x.shape, w.shape, strides=strides, padding=padding)
    (ws_n,) = ops.conv2d_workspace_shape(out, w.shape, strides=strides, padding=padding)
    xb, wb = on(device, x, w)
    ws = on(device, np.zeros(ws_n, np.float32))
    y = on(device, np.zeros(out, np.float32))
    ops.conv2d_backward_data(y, xb, wb, ws, strides=strides, padding=padding)
    ops.bias_activation(y.reshape(-1, out[3]), None if b is None else on(device, b),
                        activation=activation)
    return y, xb, wb, ws


@pytest.mark.parametrize("x_shape,k,strides,padding", [
    ((1, 1, 1, 1), (2, 2, 1), (1, 1), "valid"), ((2, 3, 4, 2), (3, 3, 3), (2, 2), "same"),
    ((1, 3, 2, 3), (3, 2, 2), (2, 3), "valid"), ((2, 2, 3, 1), (2, 4, 2), (3, 2), "same"),
    ((1, 4, 3, 2), (1, 1, 3), (2, 2), "valid")])
def test_conv2d_transpose(device, x_shape, k, strides, padding):
    kh, kw, f = k
    x, w, b = randn(x_shape, seed=1), randn((kh, kw, f, x_shape[3]), seed=2), randn(f, seed=3)
    y, xb, wb, ws = _run(device, x, w, b, strides, padding)
    want = ref_transpose(x, w, strides, padding)
    assert_close(host(y), want + b, rtol=1e-5, atol=1e-5, what="y")
    g = randn(want.shape, seed=4)
    gb = on(device, g)
    # backward-data is a convolution of dy; backward-filter is conv2d's with x as its dy
    dx = on(device, np.zeros(x_shape, np.float32))
    ops.conv2d_forward(dx, gb, wb, None, ws, strides=strides, padding=padding)
    fx = lambda t: np.sum(ref_transpose(t, w, strides, padding) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(fx, x), rtol=1e-4, atol=1e-4, what="dx")
    dw = on(device, np.zeros(w.shape, np.float32))
    ops.conv2d_backward_filter(dw, None, xb, gb, ws, strides=strides, padding=padding)
    fw = lambda t: np.sum(ref_transpose(x, t, strides, padding) * g)  # noqa: E731
    assert_close(host(dw), numeric_grad(fw, w), rtol=1e-4, atol=1e-4, what="dw")


@pytest.mark.parametrize("activation", ["linear", "relu", "sigmoid", "tanh"])
def test_bias_activation(device, activation):
    y = randn((5, 3), seed=5)
    y[1, 1] = np.nan
    b = randn(3, seed=6)
    z = y.astype(np.float64) + b
    want = {"linear": z, "relu": np.where(z < 0, 0, z), "sigmoid": 1 / (1 + np.exp(-z)),
            "tanh": np.tanh(z)}[activation]
    yb = on(device, y)
    ops.bias_activation(yb, on(device, b), activation=activation)
    got = host(yb)
    assert np.isnan(got[1, 1])
    assert_close(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-6, atol=1e-6, what=activation)
    yb = on(device, y)
    ops.bias_activation(yb, None, activation="linear")
    np.testing.assert_array_equal(host(yb), y)


def test_errors_name_the_op():
    with pytest.raises(ValueError, match=r"bias_activation: expected b.shape == \(3,\)"):
        ops.bias_activation(np.zeros((2, 3), np.float32), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="conv2d_transpose_output_shape: expected x"):
        ops.conv2d_transpose_output_shape((1, 2, 2, 3), (3, 3, 4, 2))
