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


def test_sample_weights_reach_the_override_as_a_column():
    seen = []

    class Weighted2(Weighted):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            seen.append(None if sample_weight is None else tuple(sample_weight.shape))
            per_sample = ops.mean(ops.square(y - y_pred), axis=-1, keepdims=True)
            if sample_weight is None:
                return ops.mean(per_sample)
            return ops.mean(per_sample * sample_weight)

    model = Weighted2()
    model.compile(optimizer="sgd")
    x, y = _data()
    w = np.linspace(0.0, 2.0, 8).astype("float32")
    weighted = model.evaluate(x, y, sample_weight=w, batch_size=8, verbose=0)
    plain = model.evaluate(x, y, batch_size=8, verbose=0)
    pred = model.predict(x, verbose=0)
    per_sample = ((y - pred) ** 2).mean(axis=-1)
    assert np.isclose(weighted, (per_sample * w).mean(), rtol=1e-5)  # weighted once
    assert np.isclose(plain, per_sample.mean(), rtol=1e-5)
    assert seen == [(None, 1), None]
    model.fit(x, y, class_weight=None, sample_weight=w, batch_size=4, verbose=0)


def test_super_compute_loss_is_the_compiled_loss_and_refused_without_one():
    class CallsSuper(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            return super().compute_loss(x, y, y_pred, sample_weight) * 2.0

        def call(self, x):
            return self.dense(x)

    x, y = _data()
    model = CallsSuper()
    model.compile(optimizer="sgd", loss="mae")
    value = model.evaluate(x, y, batch_size=8, verbose=0)
    assert np.isclose(value, 2.0 * np.abs(y - model.predict(x, verbose=0)).mean(), rtol=1e-5)
    bare = CallsSuper()
    bare.compile(optimizer="sgd")  # no compiled loss for super() to give
    with pytest.raises(ValueError, match="without one compiled loss"):
        bare.fit(x, y, verbose=0)
    with pytest.raises(ValueError, match="outside a traced override"):
        model.compute_loss(x, y, model.predict(x, verbose=0))


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
