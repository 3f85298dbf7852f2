"""The new activations against freshly computed real Keras 3 (torch backend) values:
the functions on arrays, Dense/Conv2D/Activation forward and one SGD step (the backward)
on both devices, names, aliases and configs; unknown callables refused by name."""

import numpy as np
import pytest

import kerasish
from kerasish import activations
from tests.kerasish.keras3 import real_keras

NEW = ["silu", "swish", "selu", "relu6", "hard_sigmoid", "hard_silu", "hard_swish", "mish",
       "exponential", "softsign", "log_softmax"]


def _close(got, want, what, rtol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("name", NEW)
def test_functions_match_keras(name):
    keras = real_keras()
    x = np.concatenate([np.random.default_rng(0).standard_normal((4, 7)) * 4,
                        [[-30, -6, -3, 0, 3, 6, 30]]]).astype(np.float32)
    want = keras.ops.convert_to_numpy(getattr(keras.activations, name)(x))
    _close(getattr(activations, name)(x), want, name)


def _pair(keras, name, device):
    r = np.random.default_rng(1)
    x = r.standard_normal((6, 5)).astype(np.float32)
    y = r.standard_normal((6, 4)).astype(np.float32)
    ours = kerasish.Sequential([kerasish.Input((5,)), kerasish.layers.Dense(4, activation=name)])
    theirs = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation=name)])
    theirs.set_weights([w * 2 for w in ours.get_weights()])
    ours.set_weights(theirs.get_weights())
    return ours, theirs, x, y


@pytest.mark.parametrize("name", NEW)
def test_dense_forward_and_sgd_step_match_keras(on_device, name):
    keras = real_keras()
    ours, theirs, x, y = _pair(keras, name, on_device)
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), f"{name} predict")
    ours.compile(optimizer=kerasish.optimizers.SGD(0.1), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ours.train_on_batch(x, y)
    theirs.train_on_batch(x, y)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b, f"{name} weights after one step", rtol=1e-4)
    assert ours.layers[-1].get_config()["activation"] == \
        theirs.layers[-1].get_config()["activation"]


@pytest.mark.parametrize("name", ["selu", "hard_silu", "mish", "softsign"])
def test_conv2d_and_activation_layer_match_keras(on_device, name):
    keras = real_keras()
    r = np.random.default_rng(2)
    x = r.standard_normal((2, 5, 5, 3)).astype(np.float32)
    ours = kerasish.Sequential([kerasish.Input((5, 5, 3)),
                                kerasish.layers.Conv2D(4, 3, activation=name),
                                kerasish.layers.Flatten(), kerasish.layers.Dense(3),
                                kerasish.layers.Activation(name)])
    theirs = keras.Sequential([keras.Input((5, 5, 3)), keras.layers.Conv2D(4, 3, activation=name),
                               keras.layers.Flatten(), keras.layers.Dense(3),
                               keras.layers.Activation(name)])
    theirs.set_weights(ours.get_weights())
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), f"{name} conv")
    y = r.standard_normal((2, 3)).astype(np.float32)
    ours.compile(optimizer=kerasish.optimizers.SGD(0.05), loss="mse")
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    ours.train_on_batch(x, y)
    theirs.train_on_batch(x, y)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b, f"{name} conv weights after one step", rtol=1e-4)


def test_names_aliases_and_refusals():
    keras = real_keras()
    assert activations.get("swish") == "silu" and activations.get("hard_swish") == "hard_silu"
    assert activations.get(activations.swish) == "silu"
    assert activations.get(keras.activations.mish) == "mish"  # a Keras function by name
    # any other callable runs through kerasish.ops (tests/kerasish/test_custom_activation.py)
    assert activations.get(lambda v: v * 2) == "custom"
    with pytest.raises(ValueError, match="Unknown activation: 'sparsemax'"):
        activations.get("sparsemax")
