"""activation=<any callable>: the layer's kernels, then the function through kerasish.ops."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


@keras.saving.register_keras_serializable(package="tests")
def x_sigmoid_x(x):
    return x * ops.sigmoid(x)


def _np_swish(z):
    return z / (1.0 + np.exp(-z))


def _mlp(activation, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((5,)), layers.Dense(7, activation=activation),
                             layers.Activation(activation), layers.Dense(3)])


def test_forward_matches_numpy_for_dense_activation_and_a_lambda():
    model = keras.Sequential([keras.Input((5,)), layers.Dense(7, activation=x_sigmoid_x),
                              layers.Activation(x_sigmoid_x),
                              layers.Dense(3, activation=lambda t: ops.tanh(t) * 2.0)])
    x = np.random.default_rng(0).random((9, 5), dtype=np.float32)
    k1, b1, k2, b2 = (v.numpy().astype(np.float64) for v in model.weights)
    ref = np.tanh(_np_swish(_np_swish(x @ k1 + b1)) @ k2 + b2) * 2.0
    np.testing.assert_allclose(model.predict(x, verbose=0), ref, rtol=1e-5, atol=1e-6)


def test_training_equals_the_builtin_kernel_of_the_same_function():
    # x * sigmoid(x) is Keras's silu: the traced path must train like the fused kernel.
    rng = np.random.default_rng(1)
    x, y = rng.random((16, 5), dtype=np.float32), rng.random((16, 3), dtype=np.float32)
    custom, builtin = _mlp(x_sigmoid_x), _mlp("silu")
    for model in (custom, builtin):
        model.compile(keras.optimizers.SGD(0.1), "mse")
        model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    for a, b in zip(custom.weights, builtin.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_conv2d_with_a_custom_activation_trains_like_its_builtin_twin():
    rng = np.random.default_rng(2)
    x, y = rng.random((4, 6, 6, 2), dtype=np.float32), rng.integers(0, 3, 4)
    models = []
    for act in (x_sigmoid_x, "silu"):
        keras.utils.set_random_seed(3)
        m = keras.Sequential([keras.Input((6, 6, 2)), layers.Conv2D(3, 3, activation=act),
                              layers.Flatten(), layers.Dense(3, activation="softmax")])
        m.compile("adam", "sparse_categorical_crossentropy")
        m.fit(x, y, epochs=2, verbose=0)
        models.append(m)
    for a, b in zip(*(m.weights for m in models)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_frozen_layer_with_custom_activation_passes_gradients_only():
    model = _mlp(x_sigmoid_x)
    model.layers[0].trainable = False
    before = model.layers[0].kernel.numpy().copy()
    model.compile("sgd", "mse")
    model.fit(np.ones((4, 5), np.float32), np.zeros((4, 3), np.float32), verbose=0)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), before)


def test_config_names_the_function_as_keras_does_and_reloads(tmp_path):
    model = _mlp(x_sigmoid_x)
    entry = model.get_config()["layers"][1]["config"]["activation"]
    assert entry == {"module": "builtins", "class_name": "function",
                     "config": "tests>x_sigmoid_x", "registered_name": "function"}
    path = str(tmp_path / "m.keras")
    model.save(path)
    back = keras.models.load_model(path)
    x = np.random.default_rng(4).random((3, 5), dtype=np.float32)
    np.testing.assert_allclose(back.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_unregistered_function_loads_with_custom_objects(tmp_path):
    def doubled(x):
        return x * 2.0

    model = keras.Sequential([keras.Input((2,)), layers.Dense(2, activation=doubled)])
    path = str(tmp_path / "m.h5")
    model.save(path)
    with pytest.raises(ValueError, match="Unknown activation function 'doubled'"):
        keras.models.load_model(path)
    back = keras.models.load_model(path, custom_objects={"doubled": doubled})
    x = np.ones((1, 2), np.float32)
    np.testing.assert_allclose(back.predict(x, verbose=0), model.predict(x, verbose=0))


def test_lambda_activation_refuses_to_save_a_config_by_name(tmp_path):
    model = keras.Sequential([keras.Input((2,)),
                              layers.Dense(2, activation=lambda t: t, name="lam")])
    with pytest.raises(ValueError, match="Layer 'lam'.*lambda"):
        model.save(str(tmp_path / "m.keras"))
    model.save_weights(str(tmp_path / "w.weights.h5"))  # weights alone still save


def test_recurrent_layers_refuse_a_custom_activation_by_name():
    with pytest.raises(ValueError, match="activation="):
        layers.LSTM(3, activation=x_sigmoid_x)


_KERAS_SIDE = r"""
import json, sys
import numpy as np
import keras

@keras.saving.register_keras_serializable(package="tests")
def x_sigmoid_x(x):
    return x * keras.ops.sigmoid(x)

mode, path = sys.argv[1], sys.argv[2]
x = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
if mode == "save":
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation=x_sigmoid_x)])
    m.save(path)
else:
    m = keras.models.load_model(path)
print(json.dumps(m.predict(x, verbose=0).tolist()))
"""


def _keras(mode, path):
    env = dict(os.environ, KERAS_BACKEND="torch")
    out = subprocess.run([sys.executable, "-c", _KERAS_SIDE, mode, path], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return np.array(json.loads(out.stdout.strip().splitlines()[-1]), np.float32)


def test_keras_files_with_a_registered_activation_cross_both_ways(tmp_path):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch", reason="interop tests need torch (pip install torch==2.13.0)")
    pytest.importorskip("keras", reason="interop tests need Keras 3 (pip install keras)")
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)
    theirs = str(tmp_path / "keras.keras")
    expected = _keras("save", theirs)
    ours = keras.models.load_model(theirs)
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    mine = str(tmp_path / "kerasish.keras")
    ours.save(mine)
    np.testing.assert_allclose(_keras("load", mine), expected, rtol=1e-5, atol=1e-6)
