"""depthwise ops and dilated conv2d: forward against a float64 NumPy direct convolution,
backward against finite differences, NaN, argument errors; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def _pads(size, k, s, padding, d):
    span = d * (k - 1) + 1
    if padding == "valid":
        return (size - span) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + span - size, 0) // 2


def ref_conv(x, w, strides, padding, dilation, depthwise):
    """Direct float64 convolution: w HWIO (conv2d) or (KH, KW, C, DM) (depthwise)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, h, wd, c = x.shape
    kh, kw = w.shape[:2]
    ho, pt = _pads(h, kh, strides[0], padding, dilation[0])
    wo, pl = _pads(wd, kw, strides[1], padding, dilation[1])
    f = c * w.shape[3] if depthwise else w.shape[3]
    y = np.zeros((n, ho, wo, f))
    for i in range(kh):
        for j in range(kw):
            for oh in range(ho):
                ih = oh * strides[0] - pt + i * dilation[0]
                if not 0 <= ih < h:
                    continue
                for ow in range(wo):
                    iw = ow * strides[1] - pl + j * dilation[1]
                    if not 0 <= iw < wd:
                        continue
                    v = x[:, ih, iw, :]
                    if depthwise:
                        y[:, oh, ow, :] += (v[:, :, None] * w[i, j][None]).reshape(n, f)
                    else:
                        y[:, oh, ow, :] += v @ w[i, j]
    return y


CASES = [  # x_shape, (KH, KW, DM), strides, padding, dilation
    ((1, 3, 3, 1), (3, 3, 1), (1, 1), "valid", (1, 1)),
    ((2, 5, 4, 3), (3, 2, 2), (2, 1), "same", (1, 1)),
    ((1, 6, 7, 2), (2, 3, 3), (1, 2), "valid", (1, 1)),
    ((2, 7, 6, 2), (3, 3, 1), (1, 1), "same", (2, 2)),
    ((1, 7, 7, 3), (2, 2, 2), (1, 1), "valid", (3, 2)),
]


@pytest.mark.parametrize("x_shape,k,strides,padding,dilation", CASES)
def test_depthwise(device, x_shape, k, strides, padding, dilation):
    kh, kw, dm = k
    c = x_shape[3]
    x, w, b = randn(x_shape, seed=1), randn((kh, kw, c, dm), seed=2), randn((c * dm,), seed=3)
    kwargs = {"strides": strides, "padding": padding, "dilation_rate": dilation}
    out = ops.depthwise_conv2d_output_shape(x_shape, w.shape, **kwargs)
    want = ref_conv(x, w, strides, padding, dilation, True) + b
    assert out == want.shape
    xb, wb, bb = on(device, x, w, b)
    y = on(device, np.zeros(out, np.float32))
    ops.depthwise_conv2d_forward(y, xb, wb, bb, **kwargs)
    assert_close(host(y), want, rtol=1e-5, atol=1e-5, what="y")
    ops.depthwise_conv2d_forward(y, xb, wb, None, **kwargs)
    assert_close(host(y), want - b, rtol=1e-5, atol=1e-5, what="y without bias")

    g = randn(out, seed=4)
    gb = on(device, g)
    dx = on(device, np.full(x_shape, 9, np.float32))
    ops.depthwise_conv2d_backward_data(dx, gb, wb, **kwargs)
    f = lambda t: np.sum(ref_conv(t, w, strides, padding, dilation, True) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(f, x), rtol=1e-4, atol=1e-4, what="dx")
    dw = on(device, np.ones(w.shape, np.float32))
    ops.depthwise_conv2d_backward_filter(dw, gb, xb, **kwargs)
    f = lambda t: np.sum(ref_conv(x, t, strides, padding, dilation, True) * g)  # noqa: E731
    assert_close(host(dw), numeric_grad(f, w) + 1, rtol=1e-4, atol=1e-4, what="dw (+=)")


@pytest.mark.parametrize("x_shape,k,strides,padding,dilation",
                         [c for c in CASES if c[4] != (1, 1)] +
                         [((2, 6, 5, 1), (3, 2, 2), (1, 1), "same", (2, 1))])
def test_conv2d_dilated(device, x_shape, k, strides, padding, dilation):
    kh, kw, f = k
    c = x_shape[3]
    x, w, b = randn(x_shape, seed=5), randn((kh, kw, c, f), seed=6), randn((f,), seed=7)
    kwargs = {"strides": strides, "padding": padding, "dilation_rate": dilation}
    out = ops.conv2d_output_shape(x_shape, w.shape, **kwargs)
    want = ref_conv(x, w, strides, padding, dilation, False) + b
    assert out == want.shape
    (ws_n,) = ops.conv2d_workspace_shape(x_shape, w.shape, **kwargs)
    xb, wb, bb = on(device, x, w, b)
    ws = on(device, np.zeros(ws_n, np.float32))
    y = on(device, np.zeros(out, np.float32))
    ops.conv2d_forward(y, xb, wb, bb, ws, activation="relu", **kwargs)
    assert_close(host(y), np.maximum(want, 0), rtol=1e-5, atol=1e-5, what="relu(conv + b)")
    g = randn(out, seed=8)
    gb = on(device, g)
    dw = on(device, np.zeros(w.shape, np.float32))
    db = on(device, np.zeros(f, np.float32))
    ops.conv2d_backward_filter(dw, db, gb, xb, ws, columns_ready=True, **kwargs)
    fn = lambda t: np.sum(ref_conv(x, t, strides, padding, dilation, False) * g)  # noqa: E731
    assert_close(host(dw), numeric_grad(fn, w), rtol=1e-4, atol=1e-4, what="dw")
    assert_close(host(db), g.reshape(-1, f).sum(0), rtol=1e-5, atol=1e-5, what="db")
    dx = on(device, np.zeros(x_shape, np.float32))
    ops.conv2d_backward_data(dx, gb, wb, ws, **kwargs)
    fn = lambda t: np.sum(ref_conv(t, w, strides, padding, dilation, False) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(fn, x), rtol=1e-4, atol=1e-4, what="dx")


def test_nan_reaches_its_windows_only(device):
    x = randn((1, 5, 5, 1), seed=9)
    x[0, 0, 0, 0] = np.nan
    y = on(device, np.zeros((1, 3, 3, 1), np.float32))
    ops.depthwise_conv2d_forward(y, on(device, x), on(device, randn((3, 3, 1, 1), seed=1)))
    out = host(y)[0, :, :, 0]
    assert np.isnan(out[0, 0]) and np.isfinite(out.flat[1:]).all()


def test_errors_name_the_op():
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(ValueError, match=r"depthwise_conv2d_forward: expected w.shape == "
                                         r"\(\?, \?, 2, \?\)"):
        ops.depthwise_conv2d_forward(np.zeros((1, 2, 2, 3), np.float32), x,
                                     np.zeros((3, 3, 3, 1), np.float32))
    with pytest.raises(ValueError, match=r"conv2d_output_shape: kernel .* dilated by \(4, 4\) "
                                         r"is larger than the input"):
        ops.conv2d_output_shape(x.shape, (2, 2, 2, 1), dilation_rate=(4, 4))
