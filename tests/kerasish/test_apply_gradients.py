"""optimizer.apply_gradients / apply / build outside fit, against real Keras 3 (torch
backend) step by step: variables of two models in one optimizer, gradients given as
NumPy arrays, the one-launch parameter block of a compiled model, None gradients, and
Keras's refusals (unknown variable, apply(grads) before build)."""

import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="the comparison needs torch (Keras's backend)")
real = pytest.importorskip("keras", reason="the comparison needs Keras 3")

import kerasish  # noqa: E402
from kerasish import layers, optimizers  # noqa: E402

CASES = {
    "sgd_momentum": ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    "adam": ("Adam", {"learning_rate": 0.01}),
    "adamw_clipnorm": ("AdamW", {"learning_rate": 0.02, "clipnorm": 0.5}),
    "rmsprop_global_clip": ("RMSprop", {"learning_rate": 0.01, "global_clipnorm": 1.0}),
}
STEPS = 4


def two_models(lib, w):
    a = lib.Sequential([lib.Input((3,)), lib.layers.Dense(2)])
    b = lib.Sequential([lib.Input((2,)), lib.layers.Dense(1)])
    a.set_weights(w[:2])
    b.set_weights(w[2:])
    return a, b


def weights_and_grads(seed=0):
    r = np.random.default_rng(seed)
    shapes = [(3, 2), (2,), (2, 1), (1,)]
    w = [r.standard_normal(s).astype(np.float32) for s in shapes]
    g = [[r.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(STEPS)]
    return w, g


@pytest.mark.parametrize("case", list(CASES))
def test_two_models_one_optimizer_matches_keras(case):
    cls, kw = CASES[case]
    w, grads = weights_and_grads()
    ka, kb = two_models(real, w)
    kopt = getattr(real.optimizers, cls)(**kw)
    ours_a, ours_b = two_models(kerasish, w)
    opt = getattr(optimizers, cls)(**kw)
    kvars = ka.trainable_weights + kb.trainable_weights
    ovars = ours_a.trainable_weights + ours_b.trainable_weights
    opt.build(ovars)
    for step, g in enumerate(grads):
        kopt.apply_gradients(zip([real.ops.convert_to_tensor(x) for x in g], kvars))
        if step % 2:
            opt.apply(g)  # Keras 3: grads matching the built variables one to one
        else:
            it = opt.apply_gradients(zip(g, ovars))
            assert int(it.numpy()) == step + 1
        for k, (v, kv) in enumerate(zip(ovars, kvars)):
            np.testing.assert_allclose(v.numpy(), real.ops.convert_to_numpy(kv), rtol=1e-5,
                                       atol=1e-6, err_msg=f"{case}: step {step}, var {k}")
    assert opt.iterations == STEPS == int(kopt.iterations.numpy())


def test_compiled_model_block_and_fit_after():
    """A compiled (packed) model: apply_gradients on its whole trainable set takes the
    one-launch path; fit afterwards continues from the same slots."""
    w, grads = weights_and_grads(1)
    ka, _ = two_models(real, w)
    ours, _ = two_models(kerasish, w)
    ka.compile(optimizer=real.optimizers.Adam(0.01), loss="mse")
    ours.compile(optimizer=optimizers.Adam(0.01), loss="mse")
    x = np.random.default_rng(2).standard_normal((8, 3)).astype(np.float32)
    y = np.zeros((8, 2), np.float32)
    for g in grads:
        ka.optimizer.apply_gradients(zip([real.ops.convert_to_tensor(t) for t in g[:2]],
                                         ka.trainable_weights))
        ours.optimizer.apply_gradients(zip(g[:2], ours.trainable_weights))
    ka.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    ours.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    for a, b in zip(ours.get_weights(), ka.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours.optimizer.iterations == int(ka.optimizer.iterations.numpy()) == STEPS + 2


def test_none_gradient_skipped_with_warning():
    w, grads = weights_and_grads()
    a, _ = two_models(kerasish, w)
    opt = optimizers.SGD(0.1)
    kernel, bias = a.trainable_weights
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.apply_gradients([(grads[0][0], kernel), (None, bias)])
    assert any("Gradients do not exist" in str(c.message) for c in caught)
    np.testing.assert_allclose(kernel.numpy(), w[0] - 0.1 * grads[0][0], rtol=1e-6)
    np.testing.assert_array_equal(bias.numpy(), w[1])
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, kernel)])


def test_refusals():
    w, grads = weights_and_grads()
    a, b = two_models(kerasish, w)
    opt = optimizers.Adam()
    with pytest.raises(ValueError, match="must already be built"):
        opt.apply(grads[0][:2])
    opt.apply_gradients(zip(grads[0][:2], a.trainable_weights))
    with pytest.raises(ValueError, match="Unknown variable"):
        opt.apply_gradients(zip(grads[0][2:], b.trainable_weights))
    with pytest.raises(ValueError, match="expected a gradient of shape \\(3, 2\\)"):
        opt.apply_gradients([(np.zeros((2, 3)), a.trainable_weights[0])])
    with pytest.raises(ValueError, match="one gradient per variable"):
        opt.apply(grads[0][:1])
    opt.apply([])  # Keras: a no-op
    assert opt.iterations == 1
