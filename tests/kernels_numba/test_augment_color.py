"""augment_color ops (per-sample uniform draws, brightness, contrast): forward against
float64 NumPy, backward against finite differences, CPU == CUDA for one seed."""

import numpy as np
import pytest

from kernels_numba.ops import augment_color as ac
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

RANGE = (-1.0, 1.5)


def test_uniform_identical_on_cpu_and_device(device):
    u = on(device, np.zeros(37, np.float32))
    ac.random_uniform_params(u, seed=3, step=4, low=-0.5, high=2.0)
    want = np.zeros(37, np.float32)
    ac.random_uniform_params(want, seed=3, step=4, low=-0.5, high=2.0)
    np.testing.assert_array_equal(host(u), want)
    assert want.min() >= -0.5 and want.max() < 2.0 and len(set(want)) == 37
    other = np.zeros(37, np.float32)
    ac.random_uniform_params(other, seed=3, step=5, low=-0.5, high=2.0)
    assert not np.array_equal(other, want)


def test_brightness(device):
    x = randn((3, 2, 5, 3), seed=1)
    x[0, 0, 0, 0] = np.nan
    delta = np.array([0.3, -0.7, 0.05], np.float32)
    want = np.clip(x.astype(np.float64) + delta[:, None, None, None], *RANGE)
    y = on(device, np.zeros_like(x))
    ac.brightness_forward(y, on(device, x), on(device, delta), value_range=RANGE)
    assert_close(host(y), want, what="brightness")
    assert np.isnan(host(y)[0, 0, 0, 0])
    x[0, 0, 0, 0] = 0.1
    g = randn(x.shape, seed=2)
    dx = on(device, np.full(x.shape, 5, np.float32))
    ac.brightness_backward(dx, on(device, g), on(device, x), on(device, delta),
                           value_range=RANGE)
    ref = lambda u: np.sum(np.clip(u + delta[:, None, None, None], *RANGE) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-4, atol=1e-4, what="brightness dx")


def _contrast_ref(x, f):
    mu = x.mean(axis=(1, 2), keepdims=True)
    return np.clip((x - mu) * f[:, None, None, None] + mu, *RANGE)


def test_contrast(device):
    x = randn((2, 3, 5, 3), seed=3)
    f = np.array([1.4, 0.6], np.float32)
    y, mean = on(device, np.zeros_like(x), np.zeros((2, 3), np.float32))
    ac.contrast_forward(y, mean, on(device, x), on(device, f), value_range=RANGE)
    assert_close(host(y), _contrast_ref(x.astype(np.float64), f), what="contrast")
    assert_close(host(mean), x.astype(np.float64).mean(axis=(1, 2)), what="mean")
    g = randn(x.shape, seed=4)
    dx = on(device, np.full(x.shape, 5, np.float32))
    ac.contrast_backward(dx, on(device, g), on(device, x), mean, on(device, f),
                         value_range=RANGE)
    ref = lambda u: np.sum(_contrast_ref(u, f) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-4, atol=1e-4, what="contrast dx")


def test_errors_name_the_op():
    x = np.zeros((2, 3, 3, 1), np.float32)
    with pytest.raises(ValueError, match=r"brightness_forward: expected delta.shape == \(2,\)"):
        ac.brightness_forward(x.copy(), x, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="contrast_forward: expected value_range with low"):
        ac.contrast_forward(x.copy(), np.zeros((2, 1), np.float32), x,
                            np.zeros(2, np.float32), value_range=(1, 0))
    with pytest.raises(TypeError, match="random_uniform_params: expected seed"):
        ac.random_uniform_params(np.zeros(2, np.float32), seed=None, step=0)
