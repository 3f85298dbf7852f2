"""Several steps of each optimizer against a float64 NumPy transcription of Keras's update."""

import math

import numpy as np
import pytest

from kernels_numba import copy_from_host, ops
from kernels_numba.testing import assert_close, host, on, randn

SHAPE = (7, 3)
STEPS = 3


def _grads(seed=10):
    return [randn(SHAPE, seed=seed + t) for t in range(STEPS)]


def _run(device, update, slots, grads, w0):
    """Apply `update(w, g, *slots, step)` for each gradient; returns host copies (w, slots)."""
    w = on(device, w0)
    slot_bufs = [on(device, s) for s in slots]
    g = on(device, np.zeros(SHAPE, np.float32))
    for t, grad in enumerate(grads):
        copy_from_host(g, grad)
        update(w, g, *slot_bufs, t + 1)
        assert not host(g).any(), "zero_grad=True must leave g == 0"
    return host(w), [host(s) for s in slot_bufs]


@pytest.mark.parametrize(
    "momentum,nesterov,with_velocity",
    [(0.0, False, False), (0.0, False, True), (0.9, False, True), (0.9, True, True)],
)
def test_sgd(device, momentum, nesterov, with_velocity):
    w0, grads, lr = randn(SHAPE, seed=1), _grads(), 0.05
    w, m = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        if not with_velocity:
            w = w - lr * g
            continue
        m = momentum * m - lr * g
        w = w + (momentum * m - lr * g if nesterov else m)
    slots = [np.zeros(SHAPE, np.float32)] if with_velocity else []

    def update(w_, g_, *rest):
        velocity = rest[0] if with_velocity else None
        ops.sgd_update(
            w_, g_, velocity, lr=lr, momentum=momentum, nesterov=nesterov, zero_grad=True
        )

    got_w, got_slots = _run(device, update, slots, grads, w0)
    assert_close(got_w, w, what="sgd w")
    if with_velocity:
        assert_close(got_slots[0], m, what="sgd velocity")


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_adam_and_adamw(device, weight_decay):
    w0, grads = randn(SHAPE, seed=2), _grads()
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    w, m, v = w0.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE)
    for t, g in enumerate(grads, start=1):
        w = w - w * weight_decay * lr
        alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        w = w - m * alpha / (np.sqrt(v) + eps)

    def update(w_, g_, m_, v_, step):
        ops.adam_update(
            w_,
            g_,
            m_,
            v_,
            lr=lr,
            step=step,
            beta_1=b1,
            beta_2=b2,
            epsilon=eps,
            weight_decay=weight_decay,
            zero_grad=True,
        )

    zeros = np.zeros(SHAPE, np.float32)
    got_w, (got_m, got_v) = _run(device, update, [zeros, zeros], grads, w0)
    assert_close(got_w, w, what="adam w")
    assert_close(got_m, m, what="adam m")
    assert_close(got_v, v, what="adam v")


@pytest.mark.parametrize(
    "centered,momentum", [(False, 0.0), (True, 0.0), (False, 0.5), (True, 0.5)]
)
def test_rmsprop(device, centered, momentum):
    w0, grads = randn(SHAPE, seed=3), _grads()
    lr, rho, eps = 0.01, 0.9, 1e-7
    w, v, a, mom = w0.astype(np.float64), np.zeros(SHAPE), np.zeros(SHAPE), np.zeros(SHAPE)
    for g in grads:
        v = rho * v + (1 - rho) * g * g
        if centered:
            a = rho * a + (1 - rho) * g
            den = v - a * a + eps
        else:
            den = v + eps
        inc = lr * g / np.sqrt(den)
        if momentum > 0:
            mom = momentum * mom + inc
            w = w - mom
        else:
            w = w - inc
    zeros = np.zeros(SHAPE, np.float32)

    def update(w_, g_, v_, mom_, a_, step):
        ops.rmsprop_update(
            w_,
            g_,
            v_,
            mom_ if momentum > 0 else None,
            a_ if centered else None,
            lr=lr,
            rho=rho,
            momentum=momentum,
            epsilon=eps,
            centered=centered,
            zero_grad=True,
        )

    got_w, (got_v, got_mom, got_a) = _run(device, update, [zeros, zeros, zeros], grads, w0)
    assert_close(got_w, w, rtol=1e-5, atol=2e-5, what="rmsprop w")
    assert_close(got_v, v, what="rmsprop velocity")
    assert_close(
        got_mom, mom if momentum > 0 else 0 * mom, rtol=1e-5, atol=2e-5, what="rmsprop momentum"
    )
    assert_close(got_a, a if centered else 0 * a, what="rmsprop average_grad")


def test_adagrad(device):
    w0, grads = randn(SHAPE, seed=4), _grads()
    lr, eps = 0.1, 1e-7
    w, acc = w0.astype(np.float64), np.full(SHAPE, 0.1)
    for g in grads:
        acc = acc + g * g
        w = w - lr * g / np.sqrt(acc + eps)

    def update(w_, g_, acc_, step):
        ops.adagrad_update(w_, g_, acc_, lr=lr, epsilon=eps, zero_grad=True)

    got_w, (got_acc,) = _run(device, update, [np.full(SHAPE, 0.1, np.float32)], grads, w0)
    assert_close(got_w, w, what="adagrad w")
    assert_close(got_acc, acc, what="adagrad accumulator")


def test_zero_grad_false_keeps_gradient(device):
    w, g = randn((5,), seed=5), randn((5,), seed=6)
    wb, gb = on(device, w, g)
    ops.sgd_update(wb, gb, lr=0.5)
    assert_close(host(gb), g, rtol=0, atol=0, what="g untouched")
    assert_close(host(wb), w - 0.5 * g.astype(np.float64), what="sgd w")


def test_bad_arguments_name_the_op():
    z = np.zeros(3, np.float32)
    with pytest.raises(
        ValueError, match="sgd_update: expected a velocity buffer when momentum > 0"
    ):
        ops.sgd_update(z, z.copy(), lr=0.1, momentum=0.9)
    with pytest.raises(
        ValueError, match=r"sgd_update: expected momentum in \[0, 1\]; received 1.5"
    ):
        ops.sgd_update(z, z.copy(), z.copy(), lr=0.1, momentum=1.5)
    with pytest.raises(
        ValueError, match=r"sgd_update: expected velocity.shape == \(3,\); received \(4,\)"
    ):
        ops.sgd_update(z, z.copy(), np.zeros(4, np.float32), lr=0.1, momentum=0.5)
    with pytest.raises(
        ValueError, match="adam_update: expected step to be a positive integer; received 0"
    ):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, step=0)
    with pytest.raises(ValueError, match=r"adam_update: expected beta_1 in \[0, 1\); received 1.0"):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, step=1, beta_1=1.0)
    with pytest.raises(ValueError, match="adam_update: expected lr >= 0; received -0.1"):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=-0.1, step=1)
    with pytest.raises(
        TypeError, match="adam_update: expected m.dtype == float32; received float64"
    ):
        ops.adam_update(z, z.copy(), np.zeros(3), z.copy(), lr=0.1, step=1)
    with pytest.raises(
        ValueError, match="rmsprop_update: expected an average_grad buffer when centered=True"
    ):
        ops.rmsprop_update(z, z.copy(), z.copy(), lr=0.1, centered=True)
    with pytest.raises(
        ValueError, match="rmsprop_update: expected a momentum_buf buffer when momentum > 0"
    ):
        ops.rmsprop_update(z, z.copy(), z.copy(), lr=0.1, momentum=0.5)
    with pytest.raises(
        TypeError, match="adagrad_update: expected lr to be a number; received 'fast'"
    ):
        ops.adagrad_update(z, z.copy(), z.copy(), lr="fast")


def test_cpu_parallel_and_serial_twins_agree():
    # Tensors from PARALLEL_MIN_SIZE elements up take the parallel loops; the per-element
    # formula is the same, so both must give bit-identical results (with the gradient
    # read through the segment-scale path, the longest one).
    from kernels_numba.cpu import optim as cpu_optim
    from kernels_numba.cpu import optim_more

    n = cpu_optim.PARALLEL_MIN_SIZE + 3
    w0, g0, m0, v0 = (randn((n,), seed=s) for s in (41, 42, 43, 44))
    v0 = np.abs(v0)
    seg = np.array([[0, 100], [116, n - 7]], np.int64)
    grad = (cpu_optim.SCALE_SEGMENTS, np.float32(0), np.array([0.5, 2.0], np.float32), seg)
    f32 = np.float32
    more = {
        "nadam": lambda f, w, g, m, v: f(w, g, m, v, np.array(
            [1e-3, 0.9, 0.999, 0.9, 0.2, 0.5, 0.6, 1e-3, 1e-7, 1e-3], f32), True, *grad),
        "adamax": lambda f, w, g, m, v: f(w, g, m, v, np.array(
            [1e-3, 0.9, 0.999, 0.1, 1e-7, 1e-3], f32), True, *grad),
        "adadelta": lambda f, w, g, m, v: f(w, g, m, v, np.array(
            [1.0, 0.95, 1e-7, 1e-3], f32), True, *grad),
        "lion": lambda f, w, g, m, v: f(w, g, m, np.array([1e-3, 0.9, 0.99, 1e-3], f32), True,
                                        *grad),
        "ftrl": lambda f, w, g, m, v: f(w, g, v, m, np.array(
            [0.1, 0.5, 0.01, 0.02, 0.03, 1e-3], f32), True, *grad),
    }
    for name, call in more.items():
        results = []
        for fn in (getattr(optim_more, f"_{name}"), getattr(optim_more, f"_{name}_serial")):
            bufs = [a.copy() for a in (w0, g0, m0, v0)]
            call(fn, *bufs)
            results.append(bufs)
        for got, want in zip(*results):
            np.testing.assert_array_equal(got, want, err_msg=name)
    calls = {
        "sgd": lambda f, w, g, m, v: f(w, g, m, np.float32(0.1), np.float32(0.9), True, True,
                                       np.float32(1e-3), True, *grad),
        "adam": lambda f, w, g, m, v: f(w, g, m, v, np.float32(1e-3), np.float32(0.1),
                                        np.float32(1e-3), np.float32(1e-7), np.float32(1e-3),
                                        True, *grad),
        "rmsprop": lambda f, w, g, m, v: f(w, g, v, m, w, np.float32(1e-3), np.float32(0.9),
                                           np.float32(0.5), np.float32(1e-7), False, True,
                                           np.float32(1e-3), True, *grad),
        "adagrad": lambda f, w, g, m, v: f(w, g, v, np.float32(1e-2), np.float32(1e-7),
                                           np.float32(1e-3), True, *grad),
    }
    for name, call in calls.items():
        results = []
        for fn in (getattr(cpu_optim, f"_{name}"), getattr(cpu_optim, f"_{name}_serial")):
            bufs = [a.copy() for a in (w0, g0, m0, v0)]
            call(fn, *bufs)
            results.append(bufs)
        for got, want in zip(*results):
            np.testing.assert_array_equal(got, want, err_msg=name)


# Decoupled weight decay (Keras 3's base optimizer, every optimizer): w -= w * wd * lr, then
# the optimizer's own step.

WD, LR = 0.3, 0.05


def _decayed(w):
    return w - w * WD * LR


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_weight_decay(device, momentum):
    w0, grads = randn(SHAPE, seed=51), _grads(52)
    w, m = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        w = _decayed(w)
        if momentum:
            m = momentum * m - LR * g
            w = w + m
        else:
            w = w - LR * g
    slots = [np.zeros(SHAPE, np.float32)] if momentum else []

    def update(w_, g_, *rest):
        ops.sgd_update(w_, g_, rest[0] if momentum else None, lr=LR, momentum=momentum,
                       weight_decay=WD, zero_grad=True)

    got_w, _ = _run(device, update, slots, grads, w0)
    assert_close(got_w, w, what="sgd w with weight decay")


def test_rmsprop_weight_decay(device):
    w0, grads = randn(SHAPE, seed=53), _grads(54)
    w, v = w0.astype(np.float64), np.zeros(SHAPE)
    for g in grads:
        w = _decayed(w)
        v = 0.9 * v + 0.1 * g * g
        w = w - LR * g / np.sqrt(v + 1e-7)

    def update(w_, g_, v_, step):
        ops.rmsprop_update(w_, g_, v_, lr=LR, weight_decay=WD, zero_grad=True)

    got_w, _ = _run(device, update, [np.zeros(SHAPE, np.float32)], grads, w0)
    assert_close(got_w, w, rtol=1e-5, atol=2e-5, what="rmsprop w with weight decay")


def test_adagrad_weight_decay(device):
    w0, grads = randn(SHAPE, seed=55), _grads(56)
    w, acc = w0.astype(np.float64), np.full(SHAPE, 0.1)
    for g in grads:
        w = _decayed(w)
        acc = acc + g * g
        w = w - LR * g / np.sqrt(acc + 1e-7)

    def update(w_, g_, acc_, step):
        ops.adagrad_update(w_, g_, acc_, lr=LR, weight_decay=WD, zero_grad=True)

    got_w, _ = _run(device, update, [np.full(SHAPE, 0.1, np.float32)], grads, w0)
    assert_close(got_w, w, what="adagrad w with weight decay")


def test_weight_decay_is_checked():
    z = np.zeros(3, np.float32)
    for call in (lambda: ops.sgd_update(z, z.copy(), lr=0.1, weight_decay=-1.0),
                 lambda: ops.rmsprop_update(z, z.copy(), z.copy(), lr=0.1, weight_decay=-1.0),
                 lambda: ops.adagrad_update(z, z.copy(), z.copy(), lr=0.1, weight_decay=-1.0)):
        with pytest.raises(ValueError, match=r"_update: expected weight_decay >= 0; received -1"):
            call()


def test_nan_gradient_gives_nan_weights(device):
    # NaN in a gradient reaches exactly that weight (and its slots), on every optimizer.
    g0 = randn((5,), seed=57)
    g0[2] = np.nan
    nan = np.isnan(g0)
    for name, make in {
        "sgd": lambda w, g: ops.sgd_update(w, g, on(device, np.zeros(5, np.float32)), lr=0.1,
                                           momentum=0.9, weight_decay=0.1),
        "adam": lambda w, g: ops.adam_update(w, g, *on(device, np.zeros(5, np.float32),
                                                       np.zeros(5, np.float32)), lr=0.1, step=1),
        "rmsprop": lambda w, g: ops.rmsprop_update(w, g, on(device, np.zeros(5, np.float32)),
                                                   lr=0.1),
        "adagrad": lambda w, g: ops.adagrad_update(w, g, on(device, np.full(5, 0.1, np.float32)),
                                                   lr=0.1),
    }.items():
        w, g = on(device, randn((5,), seed=58), g0)
        make(w, g)
        np.testing.assert_array_equal(np.isnan(host(w)), nan, err_msg=name)


# Nadam, Adamax, Adadelta, Lion, Ftrl (kernels_numba.ops.optim_more) against float64
# transcriptions of Keras 3's update_step.


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
