"""weight_decay on every optimizer: Keras 3's decoupled form (its base optimizer applies
w -= w * weight_decay * lr before each update), checked step by step against real Keras 3
(torch backend) from the same initial weights and gradients, on both devices."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="the comparison needs torch (Keras's backend)")
real = pytest.importorskip("keras", reason="the comparison needs Keras 3")

import kernels_numba  # noqa: E402
from kerasish import optimizers  # noqa: E402
from kerasish.variables import Variable  # noqa: E402

SHAPE, STEPS = (5, 3), 4
CASES = {
    "sgd": ("SGD", {"learning_rate": 0.05}),
    "sgd_momentum": ("SGD", {"learning_rate": 0.05, "momentum": 0.9, "nesterov": True}),
    "adam": ("Adam", {"learning_rate": 0.01}),
    "adamw": ("AdamW", {"learning_rate": 0.01}),
    "rmsprop": ("RMSprop", {"learning_rate": 0.01}),
    "rmsprop_centered": ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True}),
    "adagrad": ("Adagrad", {"learning_rate": 0.05}),
}


def _data():
    r = np.random.default_rng(3)
    w0 = r.standard_normal(SHAPE).astype(np.float32)
    grads = [r.standard_normal(SHAPE).astype(np.float32) for _ in range(STEPS)]
    return w0, grads


def _keras_trajectory(cls, kwargs, w0, grads):
    opt = getattr(real.optimizers, cls)(**kwargs)
    var = real.Variable(w0.copy())
    out = []
    for g in grads:
        opt.apply_gradients([(real.ops.convert_to_tensor(g), var)])
        out.append(real.ops.convert_to_numpy(var.value).copy())
    return out


def _kerasish_trajectory(cls, kwargs, w0, grads, device):
    opt = getattr(optimizers, cls)(**kwargs)
    var = Variable(w0, "w", device=device, path="w")
    opt.build([var])
    out = []
    for g in grads:
        kernels_numba.copy_from_host(var.grad, g)
        opt.apply([var])
        out.append(var.numpy())
    return out


@pytest.mark.parametrize("weight_decay", [0.1, 0.5])
@pytest.mark.parametrize("case", list(CASES))
def test_trajectory_matches_keras(device, case, weight_decay):
    cls, kwargs = CASES[case]
    kwargs = {**kwargs, "weight_decay": weight_decay}
    w0, grads = _data()
    want = _keras_trajectory(cls, kwargs, w0, grads)
    got = _kerasish_trajectory(cls, kwargs, w0, grads, device)
    for step, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"{case} step {step + 1}")
    # and the decay did something: without it the weights differ
    plain = _kerasish_trajectory(cls, {**kwargs, "weight_decay": None if cls != "AdamW" else 0.0},
                                 w0, grads, device)
    assert np.abs(plain[-1] - got[-1]).max() > 1e-3


def test_weight_decay_with_a_schedule_uses_the_scheduled_rate(device):
    kw = dict(initial_learning_rate=0.1, decay_steps=1, decay_rate=0.5)
    w0, grads = _data()
    want = _keras_trajectory("SGD", {"learning_rate": real.optimizers.schedules.ExponentialDecay(
        **kw), "weight_decay": 0.3}, w0, grads)
    got = _kerasish_trajectory("SGD", {"learning_rate": optimizers.schedules.ExponentialDecay(
        **kw), "weight_decay": 0.3}, w0, grads, device)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.1", True, [0.1]])
def test_bad_weight_decay_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"SGD: expected weight_decay to be None or a finite "
                                         r"float >= 0; received weight_decay="):
        optimizers.SGD(weight_decay=bad)


def test_weight_decay_round_trips_in_the_config():
    opt = optimizers.RMSprop(weight_decay=0.25)
    assert opt.get_config()["weight_decay"] == 0.25
    assert optimizers.RMSprop.from_config(opt.get_config()).weight_decay == 0.25
