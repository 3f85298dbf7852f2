import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, on, randn


def _cpu_mask(shape, rate, seed, step):
    y, mask = np.empty(shape, np.float32), np.empty(shape, np.float32)
    ops.dropout_forward(y, mask, np.ones(shape, np.float32), rate=rate, seed=seed, step=step)
    return mask


@pytest.mark.parametrize("shape", [(1,), (7, 3), (2, 5, 3)])
def test_forward_backward(device, shape):
    rate = 0.4
    x, dy = randn(shape, seed=1), randn(shape, seed=2)
    y, mask = on(device, np.zeros(shape, np.float32), np.zeros(shape, np.float32))
    ops.dropout_forward(y, mask, on(device, x), rate=rate, seed=7, step=3)
    m = host(mask)
    assert set(np.unique(m)) <= {0.0, np.float32(1 / (1 - rate))}
    assert_close(host(y), x * m.astype(np.float64), what="y = x * mask")
    dx = on(device, np.full(shape, 9.0, np.float32))
    ops.dropout_backward(dx, on(device, dy), mask)
    assert_close(host(dx), dy * m.astype(np.float64), what="dx = dy * mask")


def test_mask_identical_on_cpu_and_device(device):
    shape, rate = (3, 37), 0.3
    mask = on(device, np.zeros(shape, np.float32))
    ops.dropout_forward(
        on(device, np.zeros(shape, np.float32)),
        mask,
        on(device, np.ones(shape, np.float32)),
        rate=rate,
        seed=123,
        step=5,
    )
    got = host(mask)
    assert_close(got, _cpu_mask(shape, rate, 123, 5), rtol=0, atol=0, what="mask")
    assert 0 < np.count_nonzero(got) < got.size


@pytest.mark.cudasim
def test_mask_independent_of_launch_configuration():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    device = "cuda"
    from kernels_numba._cuda import launch
    from kernels_numba.cpu.dropout import dropout_key
    from kernels_numba.gpu import dropout as gpu

    n, rate = 45, 0.5
    want = _cpu_mask((n,), rate, 9, 2)
    for grid, block in [(1, 8), (3, 7)]:  # grid-stride loops with fewer threads than elements
        y, mask, x = on(
            device, np.zeros(n, np.float32), np.zeros(n, np.float32), np.ones(n, np.float32)
        )
        launch(gpu._dropout_forward_kernel, grid, block, y, mask, x, np.float32(rate),
               np.float32(2.0), *gpu.steps_args(dropout_key(9, 2), None))
        assert_close(host(mask), want, rtol=0, atol=0, what=f"mask with grid={grid}, block={block}")


def test_keep_fraction_and_reproducibility():
    shape, rate = (200, 500), 0.3
    a = _cpu_mask(shape, rate, seed=42, step=0)
    assert abs(np.count_nonzero(a) / a.size - (1 - rate)) < 0.005
    assert np.array_equal(a, _cpu_mask(shape, rate, seed=42, step=0))
    b = _cpu_mask(shape, rate, seed=42, step=1)
    c = _cpu_mask(shape, rate, seed=43, step=0)
    for other in (b, c):  # a new step or seed gives an (almost) independent mask
        agree = np.count_nonzero((a != 0) == (other != 0)) / a.size
        assert abs(agree - (rate**2 + (1 - rate) ** 2)) < 0.01
    rows = (a != 0).mean(axis=1)  # no structure along the flat index
    assert rows.min() > 0.55 and rows.max() < 0.85


def test_rate_zero_keeps_everything(device):
    x = randn((4, 3), seed=3)
    y, mask = on(device, np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32))
    ops.dropout_forward(y, mask, on(device, x), rate=0.0, seed=1, step=0)
    assert_close(host(mask), np.ones((4, 3)), rtol=0, atol=0, what="mask")
    assert_close(host(y), x, rtol=0, atol=0, what="y")


def test_in_place(device):
    x = randn((5, 3), seed=4)
    xb, mask = on(device, x, np.zeros((5, 3), np.float32))
    ops.dropout_forward(xb, mask, xb, rate=0.5, seed=2, step=1)
    assert_close(host(xb), x * host(mask).astype(np.float64), what="in-place y")


def test_bad_arguments_name_the_op():
    z = np.zeros(3, np.float32)
    with pytest.raises(
        ValueError, match=r"dropout_forward: expected rate in \[0, 1\); received 1.0"
    ):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=1.0, seed=0, step=0)
    with pytest.raises(
        ValueError, match=r"dropout_forward: expected rate in \[0, 1\); received -0.1"
    ):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=-0.1, seed=0, step=0)
    with pytest.raises(
        TypeError, match="dropout_forward: expected seed to be an integer; received 1.5"
    ):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=0.5, seed=1.5, step=0)
    with pytest.raises(ValueError, match="dropout_forward: expected step >= 0; received -1"):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=0.5, seed=1, step=-1)
    with pytest.raises(
        ValueError, match=r"dropout_forward: expected mask.shape == \(3,\); received \(4,\)"
    ):
        ops.dropout_forward(z, np.zeros(4, np.float32), z.copy(), rate=0.5, seed=1, step=0)
    with pytest.raises(
        TypeError, match="dropout_backward: expected mask.dtype == float32; received float64"
    ):
        ops.dropout_backward(z, z.copy(), np.zeros(3))


def _steps(device, step):
    words = np.zeros(2, np.uint32)
    ops.step_words(words, step)
    return on(device, words)


@pytest.mark.parametrize("step", [0, 5, 2**32 + 3])
def test_steps_buffer_gives_the_by_value_mask(device, step):
    # The step read by the kernel from a uint32 (low, high) buffer: the same key, so the
    # same mask as the by-value step (and as the CPU twin).
    shape, rate = (4, 9), 0.4
    x = randn(shape, seed=5)
    y, mask = on(device, np.zeros(shape, np.float32), np.zeros(shape, np.float32))
    ops.dropout_forward(y, mask, on(device, x), rate=rate, seed=77, step=_steps(device, step))
    want = _cpu_mask(shape, rate, 77, step)
    assert_close(host(mask), want, rtol=0, atol=0, what="mask from the steps buffer")
    assert_close(host(y), x * want.astype(np.float64), what="y")


def test_steps_buffer_is_checked():
    z = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"dropout_forward: expected step.shape == \(2,\); "
                                         r"received \(1,\)"):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=0.5, seed=1,
                            step=np.zeros(1, np.uint32))
    with pytest.raises(TypeError, match="dropout_forward: expected step.dtype == uint32; "
                                        "received int64"):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=0.5, seed=1, step=np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="dropout_forward: expected step to be an integer or a "
                                        "uint32"):
        ops.dropout_forward(z, z.copy(), z.copy(), rate=0.5, seed=1, step=1.0)
