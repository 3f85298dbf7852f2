"""keras.random on kerasish: the seed contract eager and traced, the traced draw as a
graph op (fresh per step unless the seed is an int), gradients through a sampling layer,
and errors naming the function."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


def test_seed_contract_eager():
    np.testing.assert_array_equal(keras.random.uniform((4, 3), seed=3),
                                  keras.random.uniform((4, 3), seed=3))
    keras.utils.set_random_seed(5)
    a = keras.random.normal((6,))
    keras.utils.set_random_seed(5)
    np.testing.assert_array_equal(a, keras.random.normal((6,)))
    assert not np.array_equal(keras.random.normal((6,)), keras.random.normal((6,)))
    g, h = keras.random.SeedGenerator(1), keras.random.SeedGenerator(1)
    first = keras.random.truncated_normal((5,), seed=g)
    assert not np.array_equal(first, keras.random.truncated_normal((5,), seed=g))
    np.testing.assert_array_equal(first, keras.random.truncated_normal((5,), seed=h))
    assert g.state.tolist() == [1, 2]


def _noise_model(seed):
    class Noisy(layers.Layer):
        def call(self, x):
            return x + keras.random.uniform(ops.shape(x), seed=seed)

    inputs = keras.Input((3,))
    return keras.Model(inputs, Noisy()(inputs))


def test_traced_int_seed_repeats_generator_advances():
    x = np.zeros((4, 3), np.float32)
    fixed = _noise_model(7)
    a, b = fixed.predict(x, verbose=0), fixed.predict(x, verbose=0)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], keras.random.uniform((4, 3), seed=7)[0])
    moving = _noise_model(keras.random.SeedGenerator(2))
    c, d = moving.predict(x, verbose=0), moving.predict(x, verbose=0)
    assert not np.array_equal(c, d) and (c >= 0).all() and (c < 1).all()
    # batch sizes follow the data (the draw's batch axis is None)
    assert moving.predict(np.zeros((5, 3), np.float32), verbose=0).shape == (5, 3)


def test_traced_dropout_masks_and_gradient():
    class Drop(layers.Layer):
        def call(self, x):
            return keras.random.dropout(x, 0.5, seed=keras.random.SeedGenerator(3))

    inputs = keras.Input((50,))
    h = layers.Dense(50, use_bias=False, kernel_initializer="ones")(inputs)
    model = keras.Model(inputs, layers.Dense(1)(Drop()(h)))
    out = keras.Model(inputs, model.layers[2].output).predict(np.ones((2, 50), np.float32),
                                                              verbose=0)
    assert set(np.unique(out).tolist()) <= {0.0, 100.0} and 0 < (out > 0).mean() < 1
    model.compile(keras.optimizers.SGD(0.01), "mse")
    before = model.layers[1].get_weights()[0].copy()
    model.fit(np.ones((4, 50), np.float32), np.ones((4, 1), np.float32), verbose=0)
    assert np.abs(model.layers[1].get_weights()[0] - before).max() > 0


def test_integer_draws_are_eager_only():
    class Bad(layers.Layer):
        def call(self, x):
            return x + keras.random.randint((2, 3), 0, 4)

    with pytest.raises(NotImplementedError, match="keras.random.randint inside a traced"):
        Bad()(keras.Input((3,)))


def test_errors_name_the_function():
    with pytest.raises(ValueError, match=r"keras.random.normal: expected seed to be an int"):
        keras.random.normal((2,), seed="x")
    with pytest.raises(ValueError, match=r"keras.random.uniform: expected a floating dtype"):
        keras.random.uniform((2,), dtype="int32")
    with pytest.raises(ValueError, match=r"keras.random.normal: expected a concrete shape"):
        keras.random.normal((2, None))
    with pytest.raises(ValueError, match=r"keras.random.randint: expected maxval > minval"):
        keras.random.randint((2,), 3, 3)
    with pytest.raises(ValueError, match=r"keras.random.dropout: expected rate in \[0, 1\)"):
        keras.random.dropout(np.ones(3), 1.0)
    with pytest.raises(ValueError, match=r"keras.random.categorical: expected logits of shape"):
        keras.random.categorical(np.ones(3), 2)
    with pytest.raises(ValueError, match=r"SeedGenerator: expected an integer seed"):
        keras.random.SeedGenerator(1.5)
