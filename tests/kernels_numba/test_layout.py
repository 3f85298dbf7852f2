"""kernels_numba layout family: strided copies (transpose, slices, blocks), take and its
gather gradient, one_hot; vs NumPy on both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def _strides(a):
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("view", ["transpose", "slice", "reverse", "broadcast"])
def test_strided_copy_matches_numpy_views(device, view):
    x = randn((3, 4, 5), seed=1)
    v = {"transpose": x.transpose(2, 0, 1), "slice": x[1:, ::2, 1:4],
         "reverse": x[::-1, :, ::-2], "broadcast": np.broadcast_to(x[:, :1], (3, 6, 5))}[view]
    offset = (v.__array_interface__["data"][0] - x.__array_interface__["data"][0]) // 4
    y = on(device, np.full(v.shape, np.nan, np.float32))
    ops.strided_copy(y, on(device, x), shape=v.shape, y_offset=0,
                     y_strides=_strides(np.empty(v.shape, np.float32)), x_offset=offset,
                     x_strides=_strides(v))
    assert_close(host(y), v, rtol=0, atol=0, what=view)


def test_strided_copy_into_a_block(device):
    y = on(device, np.zeros((2, 7), np.float32))
    x = randn((2, 3), seed=2)
    ops.strided_copy(y, on(device, x), shape=(2, 3), y_offset=4, y_strides=(7, 1),
                     x_offset=0, x_strides=(3, 1))
    want = np.zeros((2, 7))
    want[:, 4:] = x
    assert_close(host(y), want, rtol=0, atol=0)


def test_strided_copy_refuses_out_of_bounds():
    with pytest.raises(ValueError, match=r"strided_copy: the index space \(2, 3\) reaches x "
                                         r"positions \[1, 6\]; expected within \[0, 6\)"):
        ops.strided_copy(np.zeros(6, np.float32), np.zeros(6, np.float32), shape=(2, 3),
                         y_offset=0, y_strides=(3, 1), x_offset=1, x_strides=(3, 1))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_take_and_gradient(device, axis):
    x = randn((3, 4, 2), seed=3)
    idx = np.array([[1, -1], [0, 1]], np.float32)
    ref = np.take(x, idx.astype(int), axis=axis)
    y = on(device, np.zeros(ref.shape, np.float32))
    ops.take(y, on(device, x), on(device, idx), axis=axis)
    assert_close(host(y), ref, rtol=0, atol=0)
    w = randn(ref.shape, seed=4)
    dx = on(device, np.full(x.shape, np.nan, np.float32))
    ops.take_backward(dx, on(device, w), on(device, idx), axis=axis)
    g = numeric_grad(lambda v: (np.take(v, idx.astype(int), axis=axis) * w).sum(), x)
    assert_close(host(dx), g, rtol=1e-6, atol=1e-6)


def test_take_out_of_range_is_nan(device):
    y = on(device, np.zeros(3, np.float32))
    ops.take(y, on(device, np.arange(3, dtype=np.float32)),
             on(device, np.array([0, 5, np.nan], np.float32)), axis=0)
    got = host(y)
    assert got[0] == 0 and np.isnan(got[1]) and np.isnan(got[2])


def test_one_hot(device):
    idx = np.array([[0, 2], [3, -1]], np.float32)
    y = on(device, np.full((2, 2, 3), 7, np.float32))
    ops.one_hot(y, on(device, idx), num_classes=3)
    want = np.zeros((2, 2, 3))
    want[0, 0, 0] = want[0, 1, 2] = 1
    assert_close(host(y), want, rtol=0, atol=0)
    y1 = on(device, np.zeros((1, 2), np.float32))
    ops.one_hot(y1, on(device, np.array([np.nan], np.float32)), num_classes=2)
    assert np.isnan(host(y1)).all()
