"""Nadam, Adamax, Adadelta, Lion and Ftrl (kernels_numba.ops.optim_more) against float64
transcriptions of Keras 3's update_step, and gradient clipping inside the update kernels."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, on, randn
from tests.kernels_numba.test_optim import LR, SHAPE, WD, _decayed, _grads, _run


def _nadam_reference(w0, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    w, m, v, prod = w0.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE), 1.0
    for t, g in enumerate(grads, start=1):
        u_t, u_next = b1 * (1 - 0.5 * 0.96**t), b1 * (1 - 0.5 * 0.96 ** (t + 1))
        prod *= u_t
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = u_next * m / (1 - prod * u_next) + (1 - u_t) * g / (1 - prod)
        w = w - lr * m_hat / (np.sqrt(v / (1 - b2**t)) + eps)
    return w, m, v


def test_nadam(device):
    w0, grads = randn(SHAPE, seed=61), _grads(62)
    prod = [np.float32(1.0)]

    def update(w_, g_, m_, v_, step):
        prod[0] = np.float32(prod[0] * np.float32(0.9 * (1 - 0.5 * 0.96**step)))
        ops.nadam_update(w_, g_, m_, v_, lr=0.01, step=step, u_product=prod[0], zero_grad=True)

    zeros = np.zeros(SHAPE, np.float32)
    got_w, (got_m, got_v) = _run(device, update, [zeros, zeros], grads, w0)
    w, m, v = _nadam_reference(w0, grads)
    assert_close(got_w, w, what="nadam w")
    assert_close(got_m, m, what="nadam m")
    assert_close(got_v, v, what="nadam v")


def test_adamax(device):
    w0, grads = randn(SHAPE, seed=63), _grads(64)
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    w, m, u = w0.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        w = w - lr * m / ((u + eps) * (1 - b1**t))

    def update(w_, g_, m_, u_, step):
        ops.adamax_update(w_, g_, m_, u_, lr=lr, step=step, zero_grad=True)

    zeros = np.zeros(SHAPE, np.float32)
    got_w, (got_m, got_u) = _run(device, update, [zeros, zeros], grads, w0)
    assert_close(got_w, w, what="adamax w")
    assert_close(got_m, m, what="adamax m")
    assert_close(got_u, u, what="adamax u")


def test_adadelta(device):
    w0, grads = randn(SHAPE, seed=65), _grads(66)
    lr, rho, eps = 1.0, 0.95, 1e-7
    w, a, d_acc = w0.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE)
    for g in grads:
        a = rho * a + (1 - rho) * g * g
        d = -np.sqrt(d_acc + eps) * g / np.sqrt(a + eps)
        d_acc = rho * d_acc + (1 - rho) * d * d
        w = w + lr * d

    def update(w_, g_, a_, d_, step):
        ops.adadelta_update(w_, g_, a_, d_, lr=lr, rho=rho, epsilon=eps, zero_grad=True)

    zeros = np.zeros(SHAPE, np.float32)
    got_w, (got_a, got_d) = _run(device, update, [zeros, zeros], grads, w0)
    assert_close(got_w, w, what="adadelta w")
    assert_close(got_a, a, what="adadelta accumulated_grad")
    assert_close(got_d, d_acc, rtol=1e-5, atol=1e-9, what="adadelta accumulated_delta")


def test_lion(device):
    w0, grads = randn(SHAPE, seed=67), _grads(68)
    lr, b1, b2 = 0.01, 0.9, 0.99
    w, m = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        w = w - lr * np.sign(b1 * m + (1 - b1) * g)
        m = b2 * m + (1 - b2) * g

    def update(w_, g_, m_, step):
        ops.lion_update(w_, g_, m_, lr=lr, beta_1=b1, beta_2=b2, zero_grad=True)

    got_w, (got_m,) = _run(device, update, [np.zeros(SHAPE, np.float32)], grads, w0)
    assert_close(got_w, w, what="lion w")
    assert_close(got_m, m, what="lion m")


@pytest.mark.parametrize("l1,l2,shrink,beta,power", [
    (0.0, 0.0, 0.0, 0.0, -0.5), (0.05, 0.1, 0.02, 0.3, -0.7)])
def test_ftrl(device, l1, l2, shrink, beta, power):
    w0, grads = randn(SHAPE, seed=69), _grads(70)
    lr = 0.1
    w, n, z = w0.astype(np.float64), np.full(SHAPE, 0.1), np.zeros(SHAPE)
    l2_total = l2 + beta / (2 * lr)
    for g in grads:
        n_new = n + g * g
        z = z + g + 2 * shrink * w - (n_new ** -power - n ** -power) / lr * w
        w = (np.clip(z, -l1, l1) - z) / (n_new ** -power / lr + 2 * l2_total)
        n = n_new

    def update(w_, g_, n_, z_, step):
        ops.ftrl_update(w_, g_, n_, z_, lr=lr, learning_rate_power=power,
                        l1_regularization_strength=l1, l2_regularization_strength=l2,
                        l2_shrinkage_regularization_strength=shrink, beta=beta, zero_grad=True)

    got_w, (got_n, got_z) = _run(device, update, [np.full(SHAPE, 0.1, np.float32),
                                                  np.zeros(SHAPE, np.float32)], grads, w0)
    assert_close(got_w, w, rtol=1e-5, atol=1e-6, what="ftrl w")
    assert_close(got_n, n, what="ftrl accumulator")
    assert_close(got_z, z, rtol=1e-5, atol=1e-6, what="ftrl linear")


def test_new_optimizers_weight_decay(device):
    # w -= w*wd*lr before each optimizer's own step (Lion: then lr*sign(...)).
    w0, grads = randn(SHAPE, seed=71), _grads(72)
    w, m = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        w = _decayed(w) - LR * np.sign(0.9 * m + 0.1 * g)
        m = 0.99 * m + 0.01 * g

    def update(w_, g_, m_, step):
        ops.lion_update(w_, g_, m_, lr=LR, weight_decay=WD, zero_grad=True)

    got_w, _ = _run(device, update, [np.zeros(SHAPE, np.float32)], grads, w0)
    assert_close(got_w, w, what="lion w with weight decay")


def test_new_optimizers_nan_gradient(device):
    g0 = randn((5,), seed=73)
    g0[1] = np.nan
    z5 = np.zeros(5, np.float32)
    for name, make in {
        "nadam": lambda w, g: ops.nadam_update(w, g, *on(device, z5, z5), lr=0.1, step=1,
                                               u_product=0.5),
        "adamax": lambda w, g: ops.adamax_update(w, g, *on(device, z5, z5), lr=0.1, step=1),
        "adadelta": lambda w, g: ops.adadelta_update(w, g, *on(device, z5, z5), lr=1.0),
        "lion": lambda w, g: ops.lion_update(w, g, on(device, z5), lr=0.1),
        "ftrl": lambda w, g: ops.ftrl_update(w, g, on(device, np.full(5, 0.1, np.float32)),
                                             on(device, z5), lr=0.1),
    }.items():
        w, g = on(device, randn((5,), seed=74), g0)
        make(w, g)
        np.testing.assert_array_equal(np.isnan(host(w)), np.isnan(g0), err_msg=name)


def test_new_optimizers_bad_arguments_name_the_op():
    z = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"lion_update: expected beta_1 in \(0, 1\]; received 0"):
        ops.lion_update(z, z.copy(), z.copy(), lr=0.1, beta_1=0.0)
    with pytest.raises(ValueError, match=r"ftrl_update: expected lr > 0"):
        ops.ftrl_update(z, z.copy(), z.copy(), z.copy(), lr=0.0)
    with pytest.raises(ValueError, match=r"ftrl_update: expected learning_rate_power <= 0"):
        ops.ftrl_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match=r"nadam_update: expected beta_2 in \[0, 1\)"):
        ops.nadam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, step=1, u_product=0.9,
                         beta_2=1.0)
    with pytest.raises(ValueError, match=r"adadelta_update: expected accumulated_delta.shape"):
        ops.adadelta_update(z, z.copy(), z.copy(), np.zeros(4, np.float32), lr=0.1)


# Gradient clipping inside the update kernels, and the norms that make the scales.


def test_clipvalue_in_the_update(device):
    w0, g = randn((9,), seed=75), randn((9,), seed=76) * 3
    w, gb = on(device, w0, g)
    ops.sgd_update(w, gb, lr=0.5, clipvalue=1.0, zero_grad=True)
    assert_close(host(w), w0 - 0.5 * np.clip(g.astype(np.float64), -1, 1), what="sgd clipvalue")
    assert not host(gb).any()


def test_segment_scales_in_the_update_and_gaps_stay_zero(device):
    # A block holding two variables ([0, 5) and [8, 14)) with zero gaps between/after.
    n = 16
    w0, g = np.zeros(n, np.float32), np.zeros(n, np.float32)
    w0[:5], w0[8:14] = randn((5,), seed=77), randn((6,), seed=78)
    g[:5], g[8:14] = randn((5,), seed=79), randn((6,), seed=80)
    segments = np.array([[0, 5], [8, 14]], np.int64)
    scales = np.array([0.5, 0.25], np.float32)
    want_g = g.astype(np.float64).copy()
    want_g[:5] *= 0.5
    want_g[8:14] *= 0.25
    m0 = np.zeros(n, np.float32)
    w, gb, m, v, sc, seg = on(device, w0, g, m0, m0, scales, segments)
    ops.adam_update(w, gb, m, v, lr=0.1, step=1, grad_scale=sc, segments=seg, zero_grad=True)
    got_m = host(m)
    assert_close(got_m, 0.1 * want_g, what="adam m from scaled gradients")
    gaps = np.r_[5:8, 14:16]
    assert not host(w)[gaps].any() and not got_m[gaps].any() and not host(v)[gaps].any()
    # one scale for the whole buffer (global_clipnorm)
    w, gb, one = on(device, w0, g, np.array([0.5], np.float32))
    ops.sgd_update(w, gb, lr=1.0, grad_scale=one)
    assert_close(host(w), w0 - 0.5 * g.astype(np.float64), what="sgd one scale")


def test_sum_squares_segments_and_whole(device):
    x = randn((3000,), seed=81)
    segments = np.array([[0, 7], [16, 2100], [2112, 3000]], np.int64)
    out, whole = on(device, np.zeros(3, np.float32), np.zeros(1, np.float32))
    seg = on(device, segments)
    xb = on(device, x)
    ops.sum_squares(out, xb, seg)
    x64 = x.astype(np.float64)
    want = [np.sum(x64[a:b] ** 2) for a, b in segments]
    assert_close(host(out), np.array(want), what="sum_squares per segment")
    ops.sum_squares(whole, xb)
    assert_close(host(whole), np.array([np.sum(x64 ** 2)]), what="sum_squares whole")
    first = host(out).copy()
    ops.sum_squares(out, xb, seg)
    np.testing.assert_array_equal(host(out), first)  # deterministic: same bits


def test_clip_norm_scales_follow_keras(device):
    s = np.array([0.0, 0.25, 9.0, np.inf, np.nan], np.float32)
    sb, scales = on(device, s, np.zeros(5, np.float32))
    ops.clip_norm_scales(scales, sb, clipnorm=1.0)
    got = host(scales)
    np.testing.assert_allclose(got[:4], [1.0, 1.0, 1.0 / 3.0, 0.0], rtol=1e-6)
    assert np.isnan(got[4])
    one = on(device, np.zeros(1, np.float32))
    for sums, want in (([0.0, 0.0], 1.0), ([1.0, 3.0], 0.5), ([0.1, 0.2], 1.0)):
        ops.clip_norm_scales(one, on(device, np.array(sums, np.float32)), clipnorm=1.0,
                             global_norm=True)
        np.testing.assert_allclose(host(one), [want], rtol=1e-6)
    for bad in ([np.inf, 1.0], [np.nan, 1.0]):  # Keras: a non-finite global norm gives NaN
        ops.clip_norm_scales(one, on(device, np.array(bad, np.float32)), clipnorm=1.0,
                             global_norm=True)
        assert np.isnan(host(one)[0])


def test_clipping_arguments_are_checked():
    z = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="sgd_update: expected at most one of clipvalue and "
                                         "grad_scale"):
        ops.sgd_update(z, z.copy(), lr=0.1, clipvalue=1.0, grad_scale=np.ones(1, np.float32))
    with pytest.raises(ValueError, match=r"adam_update: expected clipvalue > 0; received -1"):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, step=1, clipvalue=-1)
    with pytest.raises(ValueError, match=r"sgd_update: expected grad_scale.shape == \(2,\)"):
        ops.sgd_update(z, z.copy(), lr=0.1, grad_scale=np.ones(1, np.float32),
                       segments=np.array([[0, 1], [2, 4]], np.int64))
    with pytest.raises(ValueError, match="sgd_update: expected segments as sorted"):
        ops.sgd_update(z, z.copy(), lr=0.1, grad_scale=np.ones(2, np.float32),
                       segments=np.array([[2, 4], [0, 1]], np.int64))
    with pytest.raises(ValueError, match=r"sum_squares: expected out.shape == \(2,\)"):
        ops.sum_squares(np.zeros(1, np.float32), z, np.array([[0, 1], [2, 4]], np.int64))
    with pytest.raises(ValueError, match="clip_norm_scales: expected clipnorm > 0"):
        ops.clip_norm_scales(np.zeros(1, np.float32), np.zeros(1, np.float32), clipnorm=0.0)


def test_global_scale_fills_every_segment(device):
    scales = on(device, np.zeros(3, np.float32))
    ops.clip_norm_scales(scales, on(device, np.array([1.0, 2.0, 1.0], np.float32)),
                         clipnorm=1.0, global_norm=True)
    np.testing.assert_allclose(host(scales), [0.5, 0.5, 0.5], rtol=1e-6)
