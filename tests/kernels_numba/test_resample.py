"""resample ops (nearest upsampling, zero padding, cropping): forward against NumPy,
backward against finite differences, NaN passes, argument errors; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


@pytest.mark.parametrize("shape,size", [((1, 1, 1, 1), (2, 2)), ((2, 3, 5, 3), (2, 3)),
                                        ((1, 4, 2, 2), (1, 3))])
def test_upsampling2d(device, shape, size):
    x = randn(shape, seed=1)
    x.flat[0] = np.nan
    n, h, w, c = shape
    out = (n, h * size[0], w * size[1], c)
    want = np.repeat(np.repeat(x, size[0], axis=1), size[1], axis=2)
    y = on(device, np.zeros(out, np.float32))
    ops.upsampling2d_forward(y, on(device, x), size=size)
    np.testing.assert_array_equal(host(y), want)
    g = randn(out, seed=2)
    dx = on(device, np.full(shape, 7, np.float32))
    ops.upsampling2d_backward(dx, on(device, g), size=size)
    ref = lambda t: np.sum(np.repeat(np.repeat(t, size[0], 1), size[1], 2) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, randn(shape, seed=1)), rtol=1e-5, what="dx")


PADS = [((0, 0), (0, 0)), ((1, 0), (2, 3)), ((2, 1), (0, 1))]


@pytest.mark.parametrize("pads", PADS)
def test_zero_padding2d(device, pads):
    shape = (2, 3, 4, 3)
    x = randn(shape, seed=3)
    (t, b), (l, r) = pads
    want = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)))
    y = on(device, np.full(want.shape, 5, np.float32))
    ops.zero_padding2d_forward(y, on(device, x), padding=pads)
    np.testing.assert_array_equal(host(y), want)
    g = randn(want.shape, seed=4)
    dx = on(device, np.zeros(shape, np.float32))
    ops.zero_padding2d_backward(dx, on(device, g), padding=pads)
    ref = lambda u: np.sum(np.pad(u, ((0, 0), (t, b), (l, r), (0, 0))) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-5, what="dx")


@pytest.mark.parametrize("crops", PADS)
def test_cropping2d(device, crops):
    shape = (2, 5, 6, 2)
    x = randn(shape, seed=5)
    (t, b), (l, r) = crops
    want = x[:, t:shape[1] - b, l:shape[2] - r]
    y = on(device, np.zeros(want.shape, np.float32))
    ops.cropping2d_forward(y, on(device, x), cropping=crops)
    np.testing.assert_array_equal(host(y), want)
    g = randn(want.shape, seed=6)
    dx = on(device, np.full(shape, 3, np.float32))
    ops.cropping2d_backward(dx, on(device, g), cropping=crops)
    ref = lambda u: np.sum(u[:, t:shape[1] - b, l:shape[2] - r] * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-5, what="dx")


def test_errors_name_the_op():
    x = np.zeros((1, 3, 3, 1), np.float32)
    with pytest.raises(ValueError, match=r"upsampling2d_forward: expected y.shape == "
                                         r"\(1, 6, 6, 1\)"):
        ops.upsampling2d_forward(np.zeros((1, 6, 5, 1), np.float32), x, size=(2, 2))
    with pytest.raises(ValueError, match="cropping2d_forward: cropping=.* leaves nothing"):
        ops.cropping2d_forward(x, x, cropping=((2, 1), (0, 0)))
    with pytest.raises(ValueError, match="zero_padding2d_forward: expected padding as"):
        ops.zero_padding2d_forward(x, x, padding=((-1, 0), (0, 0)))
