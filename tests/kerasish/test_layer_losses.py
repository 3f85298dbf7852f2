"""Issue 34: `layer.losses` / `model.losses` (Keras 3: the last call's add_loss values,
nested layers too, then the regularizers' penalties at the current weights), and the
logged loss when add_loss terms and regularizers train together."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class AddMean(layers.Layer):
    def call(self, inputs):
        self.add_loss(ops.mean(inputs))
        return inputs


class Outer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.inner = AddMean()

    def call(self, inputs):
        return self.inner(inputs)


def test_losses_follow_the_last_call():
    layer = Outer()
    assert layer.losses == []
    layer(np.ones((2, 3), "float32"))
    assert [float(v) for v in layer.losses] == [1.0]
    layer(np.full((2, 3), 4.0, "float32"))
    assert [float(v) for v in layer.losses] == [4.0]  # reset, not appended
    assert [float(v) for v in layer.inner.losses] == [4.0]


def test_model_losses_regularizers_then_predict_batches():
    inputs = keras.Input((3,))
    dense = layers.Dense(2, kernel_regularizer=keras.regularizers.l2(0.5))
    model = keras.Model(inputs, Outer()(dense(inputs)))
    kernel = np.arange(6, dtype="float32").reshape(3, 2)
    dense.set_weights([kernel, np.zeros(2, "float32")])
    assert np.allclose([float(v) for v in model.losses], [0.5 * (kernel ** 2).sum()])
    x = np.ones((5, 3), "float32")
    model.predict(x, batch_size=2, verbose=0)  # the last batch (one row) is the last call
    expected = (x[:1] @ kernel).mean()
    values = [float(v) for v in model.losses]
    assert len(values) == 2 and np.isclose(values[0], expected)
    dense.trainable = False  # Keras counts the penalties of trainable weights only
    assert len(model.losses) == 1


def test_logged_loss_counts_add_loss_and_penalty_once():
    inputs = keras.Input((3,))
    dense = layers.Dense(1, kernel_regularizer=keras.regularizers.l2(0.1), use_bias=False)
    model = keras.Model(inputs, Outer()(dense(inputs)))
    kernel = np.array([[1.0], [2.0], [-1.0]], "float32")
    dense.set_weights([kernel])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).standard_normal((8, 3)).astype("float32")
    y = np.zeros((8, 1), "float32")
    pred = x @ kernel
    expected = float((pred ** 2).mean() + pred.mean() + 0.1 * (kernel ** 2).sum())
    assert np.isclose(model.evaluate(x, y, batch_size=8, verbose=0), expected, rtol=1e-5)
