"""Issue 34: a Model subclass's compute_loss override (traced into its own plan, output
0's loss), its label kinds, and what is refused by name."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


class Weighted(keras.Model):
    """compute_loss on regression targets shaped like the output, reading x too."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(2)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        return ops.mean(ops.square(y - y_pred)) + 0.1 * ops.mean(ops.abs(x))

    def call(self, x):
        return self.dense(x)


def _data():
    r = np.random.default_rng(0)
    return r.standard_normal((8, 3)).astype("float32"), r.standard_normal((8, 2)).astype("f")


def test_override_reads_x_y_and_y_pred():
    model = Weighted()
    model.compile(optimizer=keras.optimizers.SGD(0.1))
    x, y = _data()
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    pred = model.predict(x, verbose=0)
    expected = ((y - pred) ** 2).mean() + 0.1 * np.abs(x).mean()
    assert np.isclose(model.evaluate(x, y, batch_size=8, verbose=0), expected, rtol=1e-5)
    before = model.get_weights()
    model.train_on_batch(x, y)
    assert not np.array_equal(before[0], model.get_weights()[0])


def test_sample_weight_with_an_override_is_refused():
    model = Weighted()
    model.compile(optimizer="sgd")
    x, y = _data()
    with pytest.raises(ValueError, match="sample_weight and class_weight with a compute_loss"):
        model.fit(x, y, sample_weight=np.ones(8), verbose=0)


def test_super_compute_loss_is_refused_by_name():
    class CallsSuper(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            return super().compute_loss(x, y, y_pred, sample_weight)

        def call(self, x):
            return self.dense(x)

    model = CallsSuper()
    model.compile(optimizer="sgd", loss="mse")
    x, y = _data()
    with pytest.raises(ValueError, match="super\\(\\).compute_loss\\(\\) from an override"):
        model.fit(x, y, verbose=0)


def test_several_outputs_are_refused_by_name():
    class TwoHeads(keras.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = layers.Dense(1), layers.Dense(1)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            return ops.mean(y_pred[0])

        def call(self, x):
            return [self.a(x), self.b(x)]

    model = TwoHeads()
    model.compile(optimizer="sgd")
    x, _ = _data()
    with pytest.raises(ValueError, match="compute_loss override with several outputs"):
        model.fit(x, [np.ones((8, 1)), np.ones((8, 1))], verbose=0)
