import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, on, randn

SHAPES = [(1,), (7, 3), (2, 5, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fill_copy_scale_axpy(device, shape):
    x = randn(shape, seed=1)
    y0 = randn(shape, seed=2)
    y = on(device, np.zeros(shape, np.float32))
    ops.fill(y, 2.5)
    assert_close(host(y), np.full(shape, 2.5), what="fill")
    xb = on(device, x)
    ops.copy(y, xb)
    assert_close(host(y), x, what="copy")
    ops.scale(y, xb, -1.5)
    assert_close(host(y), -1.5 * x.astype(np.float64), what="scale")
    yb = on(device, y0)
    ops.axpy(yb, xb, 0.25)
    assert_close(host(yb), y0 + 0.25 * x.astype(np.float64), what="axpy")


def test_casts_roundtrip(device):
    x = randn((3, 5), seed=3)
    h = on(device, np.zeros((3, 5), np.float16))
    ops.cast_f32_to_f16(h, on(device, x))
    assert_close(host(h), x.astype(np.float16), rtol=0, atol=0, what="f32->f16")
    back = on(device, np.zeros((3, 5), np.float32))
    ops.cast_f16_to_f32(back, h)
    assert_close(host(back), x.astype(np.float16).astype(np.float32), rtol=0, atol=0)


def test_bad_arguments_name_the_op():
    with pytest.raises(ValueError, match=r"copy: expected y.shape == \(3,\); received \(4,\)"):
        ops.copy(np.zeros(4, np.float32), np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="scale: expected x.dtype == float32; received float64"):
        ops.scale(np.zeros(3, np.float32), np.zeros(3), 2.0)
    with pytest.raises(ValueError, match="C-contiguous"):
        ops.axpy(np.zeros(3, np.float32), np.zeros(6, np.float32)[::2], 1.0)
    with pytest.raises(TypeError, match="fill: argument y"):
        ops.fill([1.0, 2.0], 0.0)


def test_nan_in_nan_out(device):
    # NaN propagates through every elementwise op, scaling by 0 included (NaN * 0 is NaN).
    x = np.array([np.nan, 1.0, -2.0, np.inf], np.float32)
    nan = np.isnan(x)
    xb, y = on(device, x), on(device, np.zeros(4, np.float32))
    ops.copy(y, xb)
    np.testing.assert_array_equal(np.isnan(host(y)), nan)
    with np.errstate(invalid="ignore"):  # NumPy (the CPU twin) warns on inf * 0
        ops.scale(y, xb, 0.0)
    np.testing.assert_array_equal(np.isnan(host(y)), [True, False, False, True])  # inf * 0 too
    yb = on(device, np.ones(4, np.float32))
    ops.axpy(yb, xb, 0.5)
    np.testing.assert_array_equal(np.isnan(host(yb)), nan)
    ops.fill(y, np.nan)
    assert np.isnan(host(y)).all()
    h = on(device, np.zeros(4, np.float16))
    ops.cast_f32_to_f16(h, xb)
    np.testing.assert_array_equal(np.isnan(host(h)), nan)
    back = on(device, np.zeros(4, np.float32))
    ops.cast_f16_to_f32(back, h)
    np.testing.assert_array_equal(np.isnan(host(back)), nan)


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (7, 1)])
def test_scale_rows(device, shape):
    rng = np.random.default_rng(3)
    y0 = rng.normal(size=shape).astype(np.float32)
    w = rng.normal(size=shape[0]).astype(np.float32)
    w[0] = np.nan
    y = on(device, y0)
    ops.scale_rows(y, on(device, w))
    expected = y0.astype(np.float64) * w.astype(np.float64)[:, None]
    np.testing.assert_allclose(host(y), expected, rtol=1e-6, equal_nan=True)
    with pytest.raises(ValueError, match="scale_rows"):
        ops.scale_rows(on(device, y0), on(device, np.ones(shape[0] + 1, np.float32)))


def test_cast_i32_to_f32(device):
    x = np.array([0, -3, 7, 2**20], np.int32)
    y = on(device, np.zeros((4, 1), np.float32))
    ops.cast_i32_to_f32(y, on(device, x))
    np.testing.assert_array_equal(host(y)[:, 0], x.astype(np.float32))
