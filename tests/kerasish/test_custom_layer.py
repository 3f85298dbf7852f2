"""The documented custom-layer contract: forward/backward, check_gradients, training."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, models
from kerasish.testing import check_gradients


class Scale(layers.Layer):
    """y = x * alpha, one trainable alpha per feature (the example in docs/custom_layers.md)."""

    def build(self, input_shape):
        self.alpha = self.add_weight("alpha", (input_shape[-1],), "ones")

    def forward(self, y, x, training):
        np.multiply(x, self.alpha.value, out=y)

    def backward(self, dx, dy, x, y):
        self.alpha.grad += (dy * x).sum(axis=0)
        if dx is not None:
            np.multiply(dy, self.alpha.value, out=dx)


class WrongScale(Scale):
    def backward(self, dx, dy, x, y):
        self.alpha.grad += (dy * x).sum(axis=0) * 2  # wrong on purpose
        if dx is not None:
            np.multiply(dy, self.alpha.value, out=dx)


def test_check_gradients_accepts_correct_and_rejects_wrong():
    errors = check_gradients(Scale(), input_shape=(3, 5))
    assert set(errors) == {"input", "alpha"}
    with pytest.raises(AssertionError, match="gradient of alpha"):
        check_gradients(WrongScale(), input_shape=(3, 5))


def test_custom_layer_trains_and_roundtrips_config():
    layers.register(Scale)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    t = x * np.array([2.0, -1.0, 0.5, 3.0], np.float32)
    model = models.Sequential([keras.Input((4,)), Scale()])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.fit(x, t, epochs=40, batch_size=16, verbose=0)
    np.testing.assert_allclose(model.layers[0].alpha.numpy(), [2, -1, 0.5, 3], atol=0.05)
    clone = models.Sequential.from_config(model.get_config())
    assert type(clone.layers[0]) is Scale
