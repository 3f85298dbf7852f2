"""kerasish.activations (the functions Keras users pass as `activation=` or call on
arrays) and the activation layers ReLU, LeakyReLU, Softmax."""

import math

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


def _reference_activation(name, x):
    """float64 NumPy versions of Keras's activations (softmax over the last axis)."""
    if name == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    erf = np.vectorize(math.erf)
    return {"linear": x, "relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)),
            "tanh": np.tanh(x), "leaky_relu": np.where(x > 0, x, 0.2 * x),
            "elu": np.where(x > 0, x, np.expm1(x)), "gelu": 0.5 * x * (1 + erf(x / np.sqrt(2))),
            "softplus": np.log1p(np.exp(x))}[name]


# The activations added later are checked against real Keras 3 in test_activations_keras.py.
@pytest.mark.parametrize("name", ["linear", "relu", "sigmoid", "tanh", "softmax", "leaky_relu",
                                  "elu", "gelu", "softplus"])
def test_activation_functions_compute_and_resolve_by_name(name):
    function = getattr(keras.activations, name)
    x = np.random.default_rng(1).normal(size=(3, 7)) * 3
    np.testing.assert_allclose(function(x), _reference_activation(name, x), rtol=2e-6, atol=1e-6)
    assert function(x).dtype == np.float32 and function(x[:1]).shape == (1, 7)
    layer = layers.Dense(4, activation=function)  # a Keras idiom: the function itself
    assert layer.get_config()["activation"] == name


def test_activation_function_errors():
    with pytest.raises(TypeError, match="activations.relu: expected numeric"):
        keras.activations.relu("abc")
    with pytest.raises(ValueError, match="at least 1 dimension for softmax"):
        keras.activations.softmax(1.0)


@pytest.mark.parametrize("make,name,reference", [
    (lambda: layers.ReLU(), "relu", lambda x: np.maximum(x, 0)),
    (lambda: layers.ReLU(negative_slope=0.1), "leaky_relu", lambda x: np.where(x > 0, x, 0.1 * x)),
    (lambda: layers.LeakyReLU(), "leaky_relu", lambda x: np.where(x > 0, x, 0.3 * x)),
    (lambda: layers.LeakyReLU(alpha=0.05), "leaky_relu", lambda x: np.where(x > 0, x, 0.05 * x)),
    (lambda: layers.Softmax(), "softmax", lambda x: _reference_activation("softmax", x)),
])
def test_activation_layers_compute_and_roundtrip(make, name, reference):
    layer = make()
    model = keras.Sequential([keras.Input((3, 5)), layer])
    x = np.random.default_rng(2).normal(size=(4, 3, 5))
    np.testing.assert_allclose(model(x.astype(np.float32)), reference(x), rtol=1e-6, atol=1e-7)
    clone = layers.deserialize(layers.serialize(layer))
    assert type(clone) is type(layer) and clone.get_config() == {**layer.get_config(),
                                                                 "name": clone.name}
    assert clone.activation == name and "activation" not in layer.get_config()


@pytest.mark.parametrize("make,match", [
    (lambda: layers.ReLU(max_value=5.0), "max_value and threshold are not supported"),
    (lambda: layers.ReLU(threshold=1.0), "max_value and threshold are not supported"),
    (lambda: layers.ReLU(negative_slope=-1), "negative_slope >= 0"),
    (lambda: layers.LeakyReLU(negative_slope=-0.1), "negative_slope >= 0"),
    (lambda: layers.Softmax(axis=2), "only axis=-1 or axis=1"),
])
def test_activation_layer_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()

