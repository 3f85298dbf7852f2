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
