"""ops.zeros/ones/full with a None batch size inside a traced call() (issue 34)."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


class _Filled(layers.Layer):
    def __init__(self, make, **kwargs):
        super().__init__(**kwargs)
        self.make = make

    def call(self, x):
        return self.make(ops.shape(x)[0]) + ops.sum(x, axis=1, keepdims=True)


@pytest.mark.parametrize("make, value", [
    (lambda b: ops.zeros((b, 3)), 0.0),
    (lambda b: ops.ones((b, 3)), 1.0),
    (lambda b: ops.full((b, 3), -2.5), -2.5),
])
def test_batch_sized_fill(make, value):
    inputs = keras.Input((2,))
    model = keras.Model(inputs, _Filled(make)(inputs))
    x = np.array([[1, 2], [3, 4], [0, 1]], np.float32)
    out = model.predict(x, verbose=0)
    np.testing.assert_array_equal(out, value + x.sum(1, keepdims=True) + np.zeros((3, 3)))


def test_batch_sized_fill_trains_inputs_gradient_unchanged():
    inputs = keras.Input((2,))
    hidden = layers.Dense(2)(inputs)
    model = keras.Model(inputs, _Filled(lambda b: ops.zeros((b, 3)))(hidden))
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((4, 2), np.float32)
    before = model.get_weights()
    model.train_on_batch(x, np.zeros((4, 3), np.float32))
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_none_batch_outside_a_trace_refused():
    with pytest.raises(ValueError, match=r"ops.zeros: expected a concrete shape, or a None "
                                         r"batch .*received \(None, 4\)"):
        ops.zeros((None, 4))


def test_none_past_the_batch_refused():
    inputs = keras.Input((2,))
    with pytest.raises(ValueError, match=r"ops.ones: expected a concrete shape.*\(None, None\)"):
        keras.Model(inputs, _Filled(lambda b: ops.ones((b, None)))(inputs))
