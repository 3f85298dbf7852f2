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


def test_cpu_split_and_serial_runs_agree():
    # Large tensors split the one compiled part across threads; the per-element formula
    # is the same, so both paths must give bit-identical results (with the gradient read
    # through the segment-scale path, the longest one).
    from kernels_numba.cpu import optim as cpu_optim

    n = 4099
    w0, g0, m0, v0 = (randn((n,), seed=s) for s in (41, 42, 43, 44))
    v0 = np.abs(v0) + 0.1
    seg = on("cpu", np.array([[0, 100], [116, n - 7]], np.int64))
    clip = {"grad_scale": np.array([0.5, 2.0], np.float32), "segments": seg}
    calls = {
        "sgd": lambda w, g, m, v: ops.sgd_update(w, g, m, lr=0.1, momentum=0.9, nesterov=True,
                                                 weight_decay=0.01, zero_grad=True, **clip),
        "adam": lambda w, g, m, v: ops.adam_update(w, g, m, v, lr=1e-3, step=3,
                                                   weight_decay=0.1, zero_grad=True, **clip),
        "rmsprop": lambda w, g, m, v: ops.rmsprop_update(w, g, v, m, w.copy(), lr=1e-3,
                                                         momentum=0.5, centered=True,
                                                         zero_grad=True, **clip),
        "adagrad": lambda w, g, m, v: ops.adagrad_update(w, g, v, lr=1e-2, zero_grad=True,
                                                         **clip),
        "nadam": lambda w, g, m, v: ops.nadam_update(w, g, m, v, lr=1e-3, step=2, u_product=0.7,
                                                     weight_decay=0.1, zero_grad=True, **clip),
        "adamax": lambda w, g, m, v: ops.adamax_update(w, g, m, v, lr=1e-3, step=2,
                                                       zero_grad=True, **clip),
        "adadelta": lambda w, g, m, v: ops.adadelta_update(w, g, m, v, lr=1.0, zero_grad=True,
                                                           **clip),
        "lion": lambda w, g, m, v: ops.lion_update(w, g, m, lr=1e-3, weight_decay=0.1,
                                                   zero_grad=True, **clip),
        "ftrl": lambda w, g, m, v: ops.ftrl_update(w, g, v, m, lr=0.1, beta=0.3,
                                                   l1_regularization_strength=0.01,
                                                   zero_grad=True, **clip),
    }
    saved = cpu_optim.PARALLEL_MIN_SIZE
    try:
        for name, call in calls.items():
            results = []
            for threshold in (1 << 62, 1):  # serial, then split (when threads > 1)
                cpu_optim.PARALLEL_MIN_SIZE = threshold
                bufs = [a.copy() for a in (w0, g0, m0, v0)]
                call(*bufs)
                results.append(bufs)
            for got, want in zip(*results):
                np.testing.assert_array_equal(got, want, err_msg=name)
    finally:
        cpu_optim.PARALLEL_MIN_SIZE = saved


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


def test_cpu_plain_and_segmented_parts_agree():
    # The CPU twin reads gradients in two compiled parts: "plain" (no segments: g * scale,
    # clipped when clipping) and "segmented" (grad_at's segment search). One scale for
    # the whole buffer must give the same bits through either, NaN and Inf included; so
    # must the plain mode and a scale of 1.
    n = 37
    w0, g0, m0, v0 = (randn((n,), seed=s) for s in (51, 52, 53, 54))
    g0[:3] = [np.nan, np.inf, -np.inf]
    v0 = np.abs(v0) + 0.1
    calls = {
        "sgd": lambda w, g, m, v, **k: ops.sgd_update(w, g, m, lr=0.1, momentum=0.9,
                                                      weight_decay=0.01, zero_grad=True, **k),
        "adam": lambda w, g, m, v, **k: ops.adam_update(w, g, m, v, lr=1e-3, step=3,
                                                        weight_decay=0.1, zero_grad=True, **k),
        "rmsprop": lambda w, g, m, v, **k: ops.rmsprop_update(w, g, v, m, w.copy(), lr=1e-3,
                                                              momentum=0.5, centered=True,
                                                              zero_grad=True, **k),
        "adagrad": lambda w, g, m, v, **k: ops.adagrad_update(w, g, v, lr=1e-2, zero_grad=True,
                                                              **k),
        "nadam": lambda w, g, m, v, **k: ops.nadam_update(w, g, m, v, lr=1e-3, step=2,
                                                          u_product=0.7, zero_grad=True, **k),
        "adamax": lambda w, g, m, v, **k: ops.adamax_update(w, g, m, v, lr=1e-3, step=2,
                                                            zero_grad=True, **k),
        "adadelta": lambda w, g, m, v, **k: ops.adadelta_update(w, g, m, v, lr=1.0,
                                                                zero_grad=True, **k),
        "lion": lambda w, g, m, v, **k: ops.lion_update(w, g, m, lr=1e-3, zero_grad=True, **k),
        "ftrl": lambda w, g, m, v, **k: ops.ftrl_update(w, g, v, m, lr=0.1, beta=0.3,
                                                        zero_grad=True, **k),
    }
    ways = [
        ({"grad_scale": np.array([0.5], np.float32)},
         {"grad_scale": np.array([0.5, 0.5], np.float32),
          "segments": np.array([[0, 20], [20, n]], np.int64)}),
        ({}, {"grad_scale": np.array([1.0], np.float32)}),
    ]
    for name, call in calls.items():
        for plain, other in ways:
            results = []
            for kwargs in (plain, other):
                bufs = [a.copy() for a in (w0, g0, m0, v0)]
                call(*bufs, **kwargs)
                results.append(bufs)
            for got, want in zip(*results):
                np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32),
                                              err_msg=name)


def test_cpu_division_by_zero_is_ieee():
    # Adam with epsilon=0 on a zero gradient and zero slots: 0 / (sqrt(0) + 0) is NaN (as
    # Keras's torch backend and the CUDA kernel give), not a ZeroDivisionError that a CPU
    # part could only print, leaving w unchanged.
    w = np.ones(5, np.float32)
    g, m, v = (np.zeros(5, np.float32) for _ in range(3))
    g[4] = 1.0
    ops.adam_update(w, g, m, v, lr=1e-3, step=1, epsilon=0.0)
    assert np.isnan(w[:4]).all(), w
    assert np.isfinite(w[4]), w
