"""Masks flow through the graph (Embedding(mask_zero) / Masking -> recurrent layers) and
multi-output layers (return_state) train through fit, as in Keras 3."""

import os

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


def padded_ids(n=12, t=7, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 20, (n, t)).astype(np.float32)
    x[:, 5:] = 0
    x[:3, 2:] = 0
    return x


def test_masked_steps_carry_the_state_through_fit_and_predict():
    x = padded_ids()
    model = keras.Sequential([keras.Input((7,)), layers.Embedding(20, 8, mask_zero=True),
                              layers.LSTM(6), layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    graph = model._flat_graph()
    assert [(c.mask_in, c.mask_out) for c in graph.calls] == [(None, 0), (0, None),
                                                              (None, None)]
    model.fit(x, np.arange(12) % 2, epochs=2, batch_size=4, verbose=0)
    short = keras.Sequential([keras.Input((5,)), layers.Embedding(20, 8, mask_zero=True),
                              layers.LSTM(6), layers.Dense(2, activation="softmax")])
    short.set_weights(model.get_weights())
    # the trailing steps are masked: dropping them changes nothing
    np.testing.assert_array_equal(short.predict(x[:, :5], verbose=0),
                                  model.predict(x, verbose=0))


def test_return_state_outputs_train_through_fit():
    inputs = keras.Input((7,))
    seq, h, c = layers.LSTM(6, return_sequences=True, return_state=True)(
        layers.Embedding(20, 8, mask_zero=True)(inputs))
    model = keras.Model(inputs, [layers.Dense(2)(layers.Concatenate()([h, c])),
                                 layers.Dense(1)(seq)])
    model.compile("adam", ["mean_squared_error", "mean_squared_error"])
    before = model.get_weights()
    history = model.fit(padded_ids(), [np.zeros((12, 2)), np.zeros((12, 7, 1))], epochs=2,
                        verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(np.any(a != b) for a, b in zip(before, model.get_weights()))


def test_masked_model_matches_real_keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch", reason="needs torch for real Keras")
    real = pytest.importorskip("keras", reason="needs Keras 3")

    def build(lib):
        return lib.Sequential([lib.Input((7,)), lib.layers.Embedding(20, 8, mask_zero=True),
                               lib.layers.Bidirectional(lib.layers.GRU(5)),
                               lib.layers.Dense(3)])

    ours, theirs = build(keras), build(real)
    theirs.set_weights(ours.get_weights())
    x = padded_ids()
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
