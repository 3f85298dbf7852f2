"""noise ops: Gaussian draws (moments, reproducibility, CPU == CUDA), dropout masks equal
to ops.dropout_forward's, channel_scale against NumPy; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, on, randn


def test_gaussian_fill_moments_and_reproducible(device):
    # The simulator (one Python thread per element) draws fewer: its draws equal the CPU
    # twin's element by element below, and the CPU case checks the moments at 20,001.
    n, tol = (20001, 0.02) if device == "cpu" else (1537, 0.05)  # ~5.7 and ~3.9 sigma
    out = on(device, np.zeros(n, np.float32))
    ops.gaussian_fill(out, mean=1.5, stddev=0.5, seed=7, step=3)
    a = host(out)
    assert abs(a.mean() - 1.5) < tol and abs(a.std() - 0.5) < tol
    assert np.isfinite(a).all()
    ops.gaussian_fill(out, mean=1.5, stddev=0.5, seed=7, step=3)
    np.testing.assert_array_equal(host(out), a)
    ops.gaussian_fill(out, mean=1.5, stddev=0.5, seed=7, step=4)
    assert not np.array_equal(host(out), a)
    # same draws on the CPU twin (up to float32 rounding of log/cos/sqrt)
    cpu = np.zeros(n, np.float32)
    ops.gaussian_fill(cpu, mean=1.5, stddev=0.5, seed=7, step=3)
    assert_close(a, cpu, rtol=1e-5, atol=1e-5, what="device vs CPU")


def test_dropout_mask_matches_dropout_forward(device):
    shape = (3, 7)
    mask = on(device, np.zeros(shape, np.float32))
    ops.dropout_mask(mask, rate=0.4, seed=11, step=2)
    ones = on(device, np.ones(shape, np.float32))
    ref_mask = on(device, np.zeros(shape, np.float32))
    ops.dropout_forward(ones, ref_mask, ones, rate=0.4, seed=11, step=2)
    np.testing.assert_array_equal(host(mask), host(ref_mask))
    assert set(np.unique(host(mask))) <= {0.0, np.float32(1 / 0.6)}


@pytest.mark.parametrize("shape", [(1, 1), (2, 3, 4, 5), (3, 2, 5)])
def test_channel_scale(device, shape):
    x = randn(shape, seed=1)
    x.flat[0] = np.nan
    mask = randn((shape[0], shape[-1]), seed=2)
    want = x * mask.reshape(shape[0], *([1] * (len(shape) - 2)), shape[-1])
    y = on(device, np.zeros(shape, np.float32))
    ops.channel_scale(y, on(device, x), on(device, mask))
    np.testing.assert_array_equal(host(y), want.astype(np.float32))


def test_errors_name_the_op():
    with pytest.raises(ValueError, match="gaussian_fill: expected stddev >= 0"):
        ops.gaussian_fill(np.zeros(3, np.float32), stddev=-1.0, seed=0, step=0)
    with pytest.raises(ValueError, match="dropout_mask: expected rate in"):
        ops.dropout_mask(np.zeros(3, np.float32), rate=1.0, seed=0, step=0)
    with pytest.raises(ValueError, match=r"channel_scale: expected mask.shape == \(2, 3\)"):
        ops.channel_scale(np.zeros((2, 4, 3), np.float32), np.zeros((2, 4, 3), np.float32),
                          np.zeros((2, 4), np.float32))


def test_steps_buffer_gives_the_by_value_draws(device):
    words = np.zeros(2, np.uint32)
    ops.step_words(words, 2**33 + 4)
    steps = on(device, words)
    for by_value in (True, False):
        step = 2**33 + 4 if by_value else steps
        out, mask = on(device, np.zeros(101, np.float32), np.zeros((5, 4), np.float32))
        ops.gaussian_fill(out, mean=0.5, stddev=2.0, seed=3, step=step)
        ops.dropout_mask(mask, rate=0.3, seed=3, step=step)
        if by_value:
            want_out, want_mask = host(out), host(mask)
    np.testing.assert_array_equal(host(out), want_out)
    np.testing.assert_array_equal(host(mask), want_mask)
    with pytest.raises(ValueError, match=r"gaussian_fill: expected step.shape == \(2,\)"):
        ops.gaussian_fill(np.zeros(3, np.float32), seed=1, step=np.zeros(3, np.uint32))


def test_uniform_fill_range_moments_and_reproducible(device):
    out = on(device, np.zeros(20001, np.float32))
    ops.uniform_fill(out, minval=-1.0, maxval=3.0, seed=5, step=1)
    a = host(out)
    assert a.min() >= -1.0 and a.max() < 3.0
    # float64 reference of U(-1, 3): mean 1, variance 16/12
    assert abs(a.mean() - 1.0) < 0.03 and abs(a.var() - 16.0 / 12.0) < 0.03
    ops.uniform_fill(out, minval=-1.0, maxval=3.0, seed=5, step=1)
    np.testing.assert_array_equal(host(out), a)
    ops.uniform_fill(out, minval=-1.0, maxval=3.0, seed=5, step=2)
    assert not np.array_equal(host(out), a)
    # the uniforms are dropout's: kept where u >= rate, so mask > 0 <=> (a + 1) / 4 >= 0.3
    mask = np.zeros(20001, np.float32)
    ops.dropout_mask(mask, rate=0.3, seed=5, step=1)
    u = (a.astype(np.float64) + 1.0) / 4.0
    sure = np.abs(u - 0.3) > 1e-6
    np.testing.assert_array_equal((mask > 0)[sure], (u >= 0.3)[sure])
    cpu = np.zeros(20001, np.float32)
    ops.uniform_fill(cpu, minval=-1.0, maxval=3.0, seed=5, step=1)
    np.testing.assert_array_equal(a, cpu)


def test_truncated_normal_fill_bounds_moments(device):
    out = on(device, np.zeros(20001, np.float32))
    ops.truncated_normal_fill(out, mean=0.5, stddev=2.0, seed=3, step=0)
    a = host(out).astype(np.float64)
    assert np.isfinite(a).all() and np.abs(a - 0.5).max() <= 4.0 + 1e-5
    # float64 reference: a standard normal truncated to [-2, 2] has std 0.8796
    assert abs(a.mean() - 0.5) < 0.04 and abs(a.std() / 2.0 - 0.8796) < 0.02
    cpu = np.zeros(20001, np.float32)
    ops.truncated_normal_fill(cpu, mean=0.5, stddev=2.0, seed=3, step=0)
    assert_close(host(out), cpu, rtol=1e-5, atol=1e-5, what="device vs CPU")
    # the accepted draw of element i is the first in-range normal of counters 16 i + k
    normals = np.zeros(16 * 20, np.float32)
    ops.gaussian_fill(normals, seed=3, step=0)
    want = [next((n for n in normals[16 * i:16 * i + 16] if abs(n) <= 2), 0.0) for i in range(20)]
    assert_close(cpu[:20], 0.5 + 2.0 * np.array(want), rtol=1e-6, atol=1e-6, what="first 20")


def test_uniform_and_truncated_errors_name_the_op():
    with pytest.raises(ValueError, match=r"uniform_fill: expected maxval >= minval"):
        ops.uniform_fill(np.zeros(3, np.float32), minval=1.0, maxval=0.0, seed=0, step=0)
    with pytest.raises(ValueError, match="truncated_normal_fill: expected stddev >= 0"):
        ops.truncated_normal_fill(np.zeros(3, np.float32), stddev=-1.0, seed=0, step=0)
