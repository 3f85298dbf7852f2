import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

EPS = 1e-3
# (M, C) views: M=1, M=7, NHWC with M=12, and M=70 (more rows than a block, not a multiple of it).
SHAPES = [(1, 3), (7, 3), (2, 3, 2, 3), (70, 2)]


def _ref_train(x, gamma, beta, eps=EPS):
    x2 = x.reshape(-1, x.shape[-1]).astype(np.float64)
    mean, var = x2.mean(axis=0), x2.var(axis=0)  # biased
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x2 - mean) * rstd * gamma + beta
    return y.reshape(x.shape), mean, var, rstd


def _params(c, seed):
    return randn(c, seed=seed, scale=0.5) + 1.0, randn(c, seed=seed + 1, scale=0.5)


@pytest.mark.parametrize("shape", SHAPES)
def test_forward_train(device, shape):
    c = shape[-1]
    x = randn(shape, seed=1, scale=2.0) + 0.5
    gamma, beta = _params(c, 2)
    mm0, mv0 = randn(c, seed=4), np.abs(randn(c, seed=5)) + 0.5
    y, mean, rstd = on(
        device, np.zeros(shape, np.float32), np.zeros(c, np.float32), np.zeros(c, np.float32)
    )
    mm, mv = on(device, mm0, mv0)
    ops.batchnorm_forward_train(
        y,
        mean,
        rstd,
        mm,
        mv,
        on(device, x),
        on(device, gamma),
        on(device, beta),
        momentum=0.9,
        epsilon=EPS,
    )
    y_ref, mean_ref, var_ref, rstd_ref = _ref_train(x, gamma, beta)
    assert_close(host(y), y_ref, rtol=1e-4, atol=1e-4, what="y")
    assert_close(host(mean), mean_ref, what="mean")
    assert_close(host(rstd), rstd_ref, rtol=1e-4, what="rstd")
    assert_close(host(mm), mm0 * 0.9 + mean_ref * 0.1, what="moving_mean")
    assert_close(host(mv), mv0 * 0.9 + var_ref * 0.1, rtol=1e-4, what="moving_var")


def test_forward_train_in_place(device):
    x = randn((7, 3), seed=6)
    gamma, beta = _params(3, 7)
    xb = on(device, x)
    stats = on(device, *[np.zeros(3, np.float32) for _ in range(4)])
    ops.batchnorm_forward_train(
        xb, stats[0], stats[1], stats[2], stats[3], xb, on(device, gamma), on(device, beta)
    )
    assert_close(host(xb), _ref_train(x, gamma, beta)[0], rtol=1e-4, atol=1e-4, what="in-place y")


@pytest.mark.parametrize("shape", [(1, 3), (2, 3, 2, 3)])
def test_forward_infer(device, shape):
    c = shape[-1]
    x = randn(shape, seed=8)
    gamma, beta = _params(c, 9)
    mm, mv = randn(c, seed=11), np.abs(randn(c, seed=12)) + 0.1
    y = on(device, np.zeros(shape, np.float32))
    ops.batchnorm_forward_infer(
        y,
        on(device, x),
        on(device, gamma),
        on(device, beta),
        on(device, mm),
        on(device, mv),
        epsilon=EPS,
    )
    want = (x.astype(np.float64) - mm) / np.sqrt(mv.astype(np.float64) + EPS) * gamma + beta
    assert_close(host(y), want, rtol=1e-5, atol=1e-5, what="y")


@pytest.mark.parametrize("shape", [(1, 3), (7, 3), (2, 2, 1, 3)])
def test_backward_matches_numeric_grad(device, shape):
    c = shape[-1]
    x = randn(shape, seed=13, scale=1.5)
    gamma, beta = _params(c, 14)
    dy = randn(shape, seed=16)
    _, mean_ref, _, rstd_ref = _ref_train(x, gamma, beta)

    def loss(x_=x, g_=gamma, b_=beta):  # sum(y * dy): its gradient is the backward of dy
        return float((_ref_train(x_, g_, b_)[0] * dy).sum())

    dgamma0, dbeta0 = randn(c, seed=17), randn(c, seed=18)
    dx = on(device, np.full(shape, 5.0, np.float32))
    dgamma, dbeta = on(device, dgamma0, dbeta0)
    ops.batchnorm_backward(
        dx,
        dgamma,
        dbeta,
        on(device, dy),
        on(device, x),
        on(device, gamma),
        on(device, mean_ref.astype(np.float32)),
        on(device, rstd_ref.astype(np.float32)),
    )
    assert_close(host(dx), numeric_grad(lambda v: loss(x_=v), x), rtol=1e-4, atol=1e-4, what="dx")
    assert_close(
        host(dgamma),
        dgamma0 + numeric_grad(lambda v: loss(g_=v), gamma),
        rtol=1e-4,
        atol=1e-4,
        what="dgamma (accumulated)",
    )
    assert_close(
        host(dbeta),
        dbeta0 + numeric_grad(lambda v: loss(b_=v), beta),
        rtol=1e-4,
        atol=1e-4,
        what="dbeta (accumulated)",
    )


def test_backward_in_place(device):
    x, dy = randn((7, 3), seed=19), randn((7, 3), seed=20)
    gamma, beta = _params(3, 21)
    _, mean_ref, _, rstd_ref = _ref_train(x, gamma, beta)
    args = [
        on(device, a) for a in (x, gamma, mean_ref.astype(np.float32), rstd_ref.astype(np.float32))
    ]
    dx_sep, dyb = on(device, np.zeros((7, 3), np.float32), dy)
    zeros = [on(device, np.zeros(3, np.float32)) for _ in range(4)]
    ops.batchnorm_backward(dx_sep, zeros[0], zeros[1], dyb, *args)
    ops.batchnorm_backward(dyb, zeros[2], zeros[3], dyb, *args)
    assert_close(host(dyb), host(dx_sep), rtol=0, atol=0, what="dx computed in place of dy")


def test_bad_arguments_name_the_op():
    z3, x = np.zeros(3, np.float32), np.zeros((4, 3), np.float32)
    with pytest.raises(
        ValueError,
        match=r"batchnorm_forward_train: expected gamma.shape == \(3,\); received \(4,\)",
    ):
        ops.batchnorm_forward_train(x.copy(), z3, z3, z3, z3, x, np.zeros(4, np.float32), z3)
    with pytest.raises(
        ValueError, match=r"batchnorm_forward_train: expected momentum in \[0, 1\]; received 1.5"
    ):
        ops.batchnorm_forward_train(x.copy(), z3, z3, z3, z3, x, z3, z3, momentum=1.5)
    with pytest.raises(
        ValueError, match="batchnorm_forward_infer: expected epsilon > 0; received 0.0"
    ):
        ops.batchnorm_forward_infer(x.copy(), x, z3, z3, z3, z3, epsilon=0.0)
    with pytest.raises(ValueError, match="batchnorm_forward_infer: expected x with rank >= 2"):
        ops.batchnorm_forward_infer(z3.copy(), z3, z3, z3, z3, z3)
    with pytest.raises(
        ValueError, match=r"batchnorm_backward: expected dy.shape == \(4, 3\); received \(3, 4\)"
    ):
        ops.batchnorm_backward(x.copy(), z3, z3, np.zeros((3, 4), np.float32), x, z3, z3, z3)
    with pytest.raises(ValueError, match="batchnorm_backward: expected x to be C-contiguous"):
        ops.batchnorm_backward(
            x.copy(), z3, z3, x.copy(), np.zeros((3, 4), np.float32).T, z3, z3, z3
        )


@pytest.mark.cudasim
def test_train_kernel_is_correct_for_any_launch_configuration():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    from kernels_numba._cuda import launch
    from kernels_numba.gpu import normalization as gpu

    x = randn((11, 3), seed=22)
    gamma, beta = _params(3, 23)
    y_ref, mean_ref, _, rstd_ref = _ref_train(x, gamma, beta)
    for grid, block in [(1, 1), (2, 5)]:  # fewer blocks than channels, odd block size
        y, mean, rstd, mm, mv = on(
            "cuda", np.zeros((11, 3), np.float32), *[np.zeros(3, np.float32)] * 4
        )
        launch(
            gpu._train_kernel,
            grid,
            block,
            y,
            mean,
            rstd,
            mm,
            mv,
            on("cuda", x),
            on("cuda", gamma),
            on("cuda", beta),
            np.float32(0.99),
            np.float32(EPS),
        )
        assert_close(host(y), y_ref, rtol=1e-4, atol=1e-4, what=f"y {grid}x{block}")
        assert_close(host(mean), mean_ref, what=f"mean {grid}x{block}")
        assert_close(host(rstd), rstd_ref, rtol=1e-4, what=f"rstd {grid}x{block}")


def _infer_ref(x, gamma, beta, mm, mv):
    return (x - mm) / np.sqrt(mv + EPS) * gamma + beta


@pytest.mark.parametrize("shape", [(1, 3), (5, 3), (2, 3, 1, 3)])
def test_backward_infer_matches_numeric_grad(device, shape):
    # The gradient of the inference forward (a frozen layer's): dx only, moving stats constant.
    c = shape[-1]
    x, dy = randn(shape, seed=31).astype(np.float64), randn(shape, seed=32)
    gamma, beta = _params(c, 33)
    mm, mv = randn(c, seed=35), np.abs(randn(c, seed=36)) + 0.1
    expected = numeric_grad(lambda v: float((_infer_ref(v, gamma, beta, mm, mv) * dy).sum()), x)
    dx = on(device, np.full(shape, 5.0, np.float32))
    ops.batchnorm_backward_infer(dx, on(device, dy), on(device, gamma), on(device, mv), epsilon=EPS)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-5, what="dx")
    dyb = on(device, dy)  # in place
    ops.batchnorm_backward_infer(dyb, dyb, on(device, gamma), on(device, mv), epsilon=EPS)
    assert_close(host(dyb), host(dx), rtol=0, atol=0, what="dx in place of dy")


def test_backward_infer_bad_arguments_name_the_op():
    dy, c3 = np.zeros((4, 3), np.float32), np.ones(3, np.float32)
    with pytest.raises(ValueError, match=r"batchnorm_backward_infer: expected gamma.shape == \(3,"):
        ops.batchnorm_backward_infer(dy, dy, np.ones(2, np.float32), c3)
    with pytest.raises(ValueError, match="batchnorm_backward_infer: expected epsilon > 0; "
                                         "received -1"):
        ops.batchnorm_backward_infer(dy, dy, c3, c3, epsilon=-1)
    with pytest.raises(ValueError, match="batchnorm_backward_infer: expected dy with rank >= 2"):
        ops.batchnorm_backward_infer(c3, c3, c3, c3)


def test_nan_in_nan_out(device):
    # A NaN in channel 1 makes that channel's batch statistics, outputs, moving statistics and
    # gradients NaN; channels 0 and 2 stay finite. Inference: only the NaN element.
    shape, c = (4, 3), 3
    x = randn(shape, seed=41)
    x[2, 1] = np.nan
    gamma, beta = _params(c, 42)
    xb, yb = on(device, x), on(device, np.zeros(shape, np.float32))
    stats = [on(device, np.zeros(c, np.float32)) for _ in range(2)]
    mm, mv = on(device, np.zeros(c, np.float32), np.ones(c, np.float32))
    gb, bb = on(device, gamma, beta)
    ops.batchnorm_forward_train(yb, stats[0], stats[1], mm, mv, xb, gb, bb)
    nan_col = np.array([False, True, False])
    for name, got in (("y", host(yb)), ("mean", host(stats[0])), ("rstd", host(stats[1])),
                      ("moving_mean", host(mm)), ("moving_var", host(mv))):
        np.testing.assert_array_equal(np.isnan(got).reshape(-1, c).any(axis=0), nan_col, name)
        np.testing.assert_array_equal(np.isnan(got).reshape(-1, c).all(axis=0), nan_col, name)
    dx = on(device, np.zeros(shape, np.float32))
    dg, db = on(device, np.zeros(c, np.float32), np.zeros(c, np.float32))
    ops.batchnorm_backward(dx, dg, db, on(device, randn(shape, seed=43)), xb, gb, *stats)
    np.testing.assert_array_equal(np.isnan(host(dx)).all(axis=0), nan_col)
    np.testing.assert_array_equal(np.isnan(host(dg)), nan_col)
    ones = on(device, np.ones(c, np.float32))
    ops.batchnorm_forward_infer(yb, xb, gb, bb, ones, ones)
    np.testing.assert_array_equal(np.isnan(host(yb)), np.isnan(x))
    dy = np.ones(shape, np.float32)
    dy[0, 2] = np.nan
    ops.batchnorm_backward_infer(dx, on(device, dy), gb, ones)
    np.testing.assert_array_equal(np.isnan(host(dx)), np.isnan(dy))
