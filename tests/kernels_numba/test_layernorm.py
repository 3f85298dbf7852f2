"""layernorm ops: forward against float64 NumPy, backward against finite differences,
NaN, argument errors; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

SHAPES = [(1, 1), (1, 5), (7, 3), (5, 33)]


def _ref(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y, mu[:, 0], 1 / np.sqrt(var[:, 0] + eps)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm_forward_backward(device, shape, affine):
    m, c = shape
    x = randn(shape, seed=1) * 2 + 0.5
    gamma = randn((c,), seed=2) if affine else None
    beta = randn((c,), seed=3) if affine else None
    g = randn(shape, seed=4)
    eps = 1e-3
    xb, gb = on(device, x, g)
    gam, bet = (on(device, gamma, beta) if affine else (None, None))
    y, mean, rstd = (on(device, np.zeros(s, np.float32)) for s in (shape, (m,), (m,)))
    ops.layernorm_forward(y, mean, rstd, xb, gam, bet, epsilon=eps)
    want, mu, rs = _ref(x, gamma, beta, eps)
    assert_close(host(y), want, rtol=1e-4, atol=1e-4, what="y")
    assert_close(host(mean), mu, what="mean")
    assert_close(host(rstd), rs, rtol=1e-4, what="rstd")

    dx = on(device, np.full(shape, 9, np.float32))
    dgam = on(device, np.full((c,), 0.5, np.float32))
    dbet = on(device, np.full((c,), -0.5, np.float32))
    ops.layernorm_backward(dx, dgam if affine else None, dbet if affine else None, gb, xb,
                           gam, mean, rstd)
    gam64 = None if gamma is None else gamma.astype(np.float64)
    bet64 = None if beta is None else beta.astype(np.float64)
    want_dx = numeric_grad(lambda t: np.sum(_ref(t, gam64, bet64, eps)[0] * g), x)
    assert_close(host(dx), want_dx, rtol=2e-3, atol=2e-3, what="dx")
    if affine:
        want_dg = numeric_grad(lambda t: np.sum(_ref(x, t, bet64, eps)[0] * g), gam64)
        want_db = numeric_grad(lambda t: np.sum(_ref(x, gam64, t, eps)[0] * g), bet64)
        assert_close(host(dgam), want_dg + 0.5, rtol=1e-4, atol=1e-4, what="dgamma (+=)")
        assert_close(host(dbet), want_db - 0.5, rtol=1e-4, atol=1e-4, what="dbeta (+=)")


def test_layernorm_backward_in_place_and_params_only(device):
    x, g = randn((4, 6), seed=5), randn((4, 6), seed=6)
    gamma = randn((6,), seed=7)
    xb, gb, gam = on(device, x, g, gamma)
    y, mean, rstd = on(device, np.zeros((4, 6), np.float32), np.zeros(4, np.float32),
                       np.zeros(4, np.float32))
    ops.layernorm_forward(y, mean, rstd, xb, gam, None)
    dx = on(device, np.zeros((4, 6), np.float32))
    ops.layernorm_backward(dx, None, None, gb, xb, gam, mean, rstd)
    dg1 = on(device, np.zeros(6, np.float32))
    ops.layernorm_backward(None, dg1, None, gb, xb, gam, mean, rstd)
    dg2 = on(device, np.zeros(6, np.float32))
    ops.layernorm_backward(gb, dg2, None, gb, xb, gam, mean, rstd)  # dx over dy
    assert_close(host(gb), host(dx), rtol=0, atol=0, what="in place dx")
    assert_close(host(dg2), host(dg1), rtol=0, atol=0, what="dgamma with dx in place")


def test_layernorm_nan_stays_in_its_row(device):
    x = randn((3, 4), seed=8)
    x[1, 2] = np.nan
    xb = on(device, x)
    y, mean, rstd = on(device, np.zeros((3, 4), np.float32), np.zeros(3, np.float32),
                       np.zeros(3, np.float32))
    ops.layernorm_forward(y, mean, rstd, xb)
    out = host(y)
    assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all()


@pytest.mark.parametrize("invert", [False, True])
def test_feature_normalize(device, invert):
    x = randn((5, 3), seed=9)
    mean = np.array([0.5, -1.0, 2.0], np.float32)
    var = np.array([4.0, 0.0, np.nan], np.float32)  # 0: the epsilon floor; NaN propagates
    eps = 1e-7
    den = np.maximum(np.sqrt(var.astype(np.float64)), eps)
    den[2] = np.nan
    want = mean + x * den if invert else (x - mean) / den
    xb, mb, vb = on(device, x, mean, var)
    y = on(device, np.zeros((5, 3), np.float32))
    ops.feature_normalize_forward(y, xb, mb, vb, epsilon=eps, invert=invert)
    got = host(y)
    assert np.isnan(got[:, 2]).all()
    assert_close(got[:, :2], want[:, :2], rtol=1e-6, what="normalize")
    g = randn((5, 3), seed=10)
    dx = on(device, np.zeros((5, 3), np.float32))
    ops.feature_normalize_backward(dx, on(device, g), vb, epsilon=eps, invert=invert)
    want_dx = g * den if invert else g / den
    assert_close(host(dx)[:, :2], want_dx[:, :2], rtol=1e-6, what="normalize dx")


def test_errors_name_the_op():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"layernorm_forward: expected gamma.shape == \(3,\)"):
        ops.layernorm_forward(x, np.zeros(2, np.float32), np.zeros(2, np.float32), x,
                              np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="feature_normalize_forward: expected epsilon >= 0"):
        ops.feature_normalize_forward(x, x, np.zeros(3, np.float32), np.ones(3, np.float32),
                                      epsilon=-1.0)
