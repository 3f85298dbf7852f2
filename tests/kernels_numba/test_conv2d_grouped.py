"""conv2d's grouped CPU forward and backward-data (kernels_numba/cpu/conv2d_columns.py
FORWARD / BACKWARD_DATA: columns, one BLAS call and the epilogue or the scatter per group of
images on each thread) against float64, against the separate passes, with NaN, on one
block and split over two threads."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.cpu import _parallel, conv2d
from kernels_numba.testing import assert_close, randn
from tests.kernels_numba.test_conv2d import CASES, IDS, _buffers, _pads, conv_ref

W_SHAPE = (3, 3, 5, 6)
BATCHES = pytest.mark.parametrize("batch", [5, 9], ids=["one-block", "two-threads"])


def _x_shape(batch):
    # two threads need enough work to split (checked below): a larger image
    return (batch, 12, 11, 5) if batch < 8 else (batch, 25, 23, 5)


@pytest.fixture
def grouped(monkeypatch):
    """Records (mode, taken) per grouped call tried; `grouped.off()` makes the launchers
    take the separate passes, `grouped.on()` restores them."""
    taken = []
    real = conv2d._grouped_calls

    def spy(*args):
        call = real(*args)
        taken.append((args[0], call is not None))
        return call

    class Switch:
        def on(self):
            monkeypatch.setattr(conv2d, "_grouped_calls", spy)

        def off(self):
            monkeypatch.setattr(conv2d, "_grouped_calls", lambda *a: None)

    switch = Switch()
    switch.taken = taken
    switch.on()
    return switch


def _check_split(batch, y_shape):
    if batch >= 8:
        if not _parallel.split(1 << 40):
            pytest.skip("one numba thread: nothing to split")
        assert _parallel.split(int(np.prod(y_shape[:3])) * 45), "not enough work to split"


def _window_hits(mask, strides, padding):
    """Outputs whose window holds a True of mask (N, H, W, C)."""
    ones = np.ones((W_SHAPE[0], W_SHAPE[1], mask.shape[3], 1))
    return conv_ref(mask.astype(np.float64), ones, None, strides, padding)[..., 0] > 0


@BATCHES
@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
@pytest.mark.parametrize("activation,bias", [("relu", True), ("linear", False)])
def test_grouped_forward(grouped, batch, strides, padding, activation, bias):
    x = randn(_x_shape(batch), seed=31)
    w, b = randn(W_SHAPE, seed=32), randn((6,), seed=33) if bias else None
    x[1, 4, 5, 2] = np.nan
    y_shape, ws = _buffers("cpu", x.shape, W_SHAPE, strides, padding)
    _check_split(batch, y_shape)
    kw = {"strides": strides, "padding": padding}
    y = np.zeros(y_shape, np.float32)
    ops.conv2d_forward(y, x, w, b, ws, activation=activation, **kw)
    assert grouped.taken == [(conv2d.FORWARD, True)]
    hit = _window_hits(np.isnan(x), strides, padding)  # NaN there (ReLU passes it) only
    assert np.isnan(y[hit]).all() and not np.isnan(y[~hit]).any()
    ref = conv_ref(np.nan_to_num(x, nan=0.0), w, b, strides, padding, activation)
    assert_close(np.where(hit[..., None], 0, y), np.where(hit[..., None], 0, ref), what="y")
    # the full columns stay in the workspace for backward-filter
    dy = randn(y_shape, seed=34)
    reused, rebuilt = np.zeros(W_SHAPE, np.float32), np.zeros(W_SHAPE, np.float32)
    ops.conv2d_backward_filter(reused, None, dy, x, ws, columns_ready=True, **kw)
    ops.conv2d_backward_filter(rebuilt, None, dy, x, ws, **kw)
    np.testing.assert_array_equal(reused, rebuilt)
    again = np.zeros(y_shape, np.float32)
    ops.conv2d_forward(again, x, w, b, ws, activation=activation, **kw)
    np.testing.assert_array_equal(again.view(np.uint32), y.view(np.uint32))  # repeatable
    if strides == (1, 1):  # dilation, against the separate passes
        kw["dilation_rate"] = (2, 1)
    shape = ops.conv2d_output_shape(x.shape, W_SHAPE, **kw)
    ws2 = np.full(ops.conv2d_workspace_shape(x.shape, W_SHAPE, **kw), np.nan, np.float32)
    one, other = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    ops.conv2d_forward(one, x, w, b, ws2, activation=activation, **kw)
    grouped.off()
    ops.conv2d_forward(other, x, w, b, ws2, activation=activation, **kw)
    np.testing.assert_allclose(one, other, rtol=1e-6, atol=1e-6)
    assert (np.isnan(one) == np.isnan(other)).all()


def _backward_data_ref(dy, w, x_shape, strides, padding):
    """float64 dx: each output's dy times w, scattered onto its window (then cropped)."""
    dy, w = dy.astype(np.float64), w.astype(np.float64)
    n, h, wd, c = x_shape
    kh, kw = w.shape[:2]
    _, top, bottom = _pads(h, kh, strides[0], padding)
    _, left, right = _pads(wd, kw, strides[1], padding)
    dxp = np.zeros((n, h + top + bottom, wd + left + right, c))
    ho, wo = dy.shape[1:3]
    for i in range(kh):
        for j in range(kw):
            rows = slice(i, i + strides[0] * (ho - 1) + 1, strides[0])
            cols = slice(j, j + strides[1] * (wo - 1) + 1, strides[1])
            dxp[:, rows, cols, :] += dy @ w[i, j].T
    return dxp[:, top:top + h, left:left + wd, :]


@BATCHES
@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_grouped_backward_data(grouped, batch, strides, padding, activation):
    x_shape = _x_shape(batch)
    w = randn(W_SHAPE, seed=41)
    y_shape, ws = _buffers("cpu", x_shape, W_SHAPE, strides, padding)
    _check_split(batch, y_shape)
    dy, y = randn(y_shape, seed=42), np.maximum(randn(y_shape, seed=43), 0)
    dy[2, 1, 3, 4] = np.nan
    kw = {"strides": strides, "padding": padding, "activation": activation, "y": y}
    dx = np.full(x_shape, 7.0, np.float32)  # overwritten, never read
    ops.conv2d_backward_data(dx, dy, w, ws, **kw)
    assert grouped.taken == [(conv2d.BACKWARD_DATA, True)]
    g = np.where(y > 0, dy, 0) if activation == "relu" else dy  # ReLU's mask selects
    ref = _backward_data_ref(np.nan_to_num(g, nan=0.0), w, x_shape, strides, padding)
    nan = np.isnan(_backward_data_ref(np.where(np.isnan(g), np.nan, 0.0), w, x_shape,
                                      strides, padding))
    assert (np.isnan(dx) == nan).all()
    assert_close(np.where(nan, 0, dx), np.where(nan, 0, ref), rtol=1e-5, atol=1e-5, what="dx")
    again = np.full(x_shape, 7.0, np.float32)
    ops.conv2d_backward_data(again, dy, w, ws, **kw)
    np.testing.assert_array_equal(again.view(np.uint32), dx.view(np.uint32))  # repeatable
    grouped.off()
    other = np.full(x_shape, 7.0, np.float32)
    ops.conv2d_backward_data(other, dy, w, ws, **kw)
    np.testing.assert_allclose(dx, other, rtol=1e-6, atol=1e-6)
    assert (np.isnan(dx) == np.isnan(other)).all()


def test_few_images_per_thread_keep_the_separate_passes(grouped):
    """3 images cannot be 4 per thread: the launchers keep im2col + split GEMM + epilogue."""
    x, w = randn((3, 9, 8, 5), seed=51), randn(W_SHAPE, seed=52)
    y_shape, ws = _buffers("cpu", x.shape, W_SHAPE, (1, 1), "valid")
    y = np.zeros(y_shape, np.float32)
    ops.conv2d_forward(y, x, w, None, ws)
    assert grouped.taken == [(conv2d.FORWARD, False)]
    assert_close(y, conv_ref(x, w), what="y")


@pytest.mark.parametrize("batch", [5, 8], ids=["one-block", "two-threads"])
def test_grouped_backward_data_with_and_without_room_for_transposed_weights(monkeypatch, batch):
    # With room in the workspace past the scratch rows, each group's product reads a copy
    # of W^T in place; without (the groups cover every row), it reads W transposed.
    x_shape, strides, padding = (batch, 12, 11, 5), (1, 1), "valid"
    w = randn(W_SHAPE, seed=51)
    y_shape, ws = _buffers("cpu", x_shape, W_SHAPE, strides, padding)
    dy = randn(y_shape, seed=52)
    flags = []
    real_pack = conv2d.pack

    def spy_pack(*items):
        if len(items) > 3 and items[2] == conv2d.BACKWARD_DATA:
            flags.append(items[16] & conv2d.WEIGHTS_TRANSPOSED)  # after col, x, mode, geometry, dy, w, b
        return real_pack(*items)

    monkeypatch.setattr(conv2d, "pack", spy_pack)
    with_room = np.zeros(x_shape, np.float32)
    ops.conv2d_backward_data(with_room, dy, w, ws, strides=strides, padding=padding)
    monkeypatch.setattr(conv2d, "GROUP_ROWS", 1 << 30)  # one group per thread: no room
    m = int(np.prod(y_shape[:3]))
    parts = conv2d.numba.get_num_threads() if conv2d.split(m * W_SHAPE[3]) else 1
    if batch % parts:
        pytest.skip("the images do not split evenly over the threads: the tail stays")
    without = np.zeros(x_shape, np.float32)
    ops.conv2d_backward_data(without, dy, w, ws, strides=strides, padding=padding)
    assert flags == [conv2d.WEIGHTS_TRANSPOSED, 0]
    ref = _backward_data_ref(dy, w, x_shape, strides, padding)
    assert_close(with_room, ref, rtol=1e-5, atol=1e-5, what="dx, W^T copy")
    assert_close(without, ref, rtol=1e-5, atol=1e-5, what="dx, W transposed")
