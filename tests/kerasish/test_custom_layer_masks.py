"""Masks and custom layers (issue 34): Keras's compute_mask signature on Embedding and
Masking, eager results carrying _keras_mask, traced layers passing masks on, and the
mask uses kerasish refuses by name."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


def test_embedding_compute_mask_keras_signature():
    e = layers.Embedding(5, 2, mask_zero=True)
    ids = np.array([[1, 0, 3]])
    np.testing.assert_array_equal(e.compute_mask(ids), [[True, False, True]])
    np.testing.assert_array_equal(e.compute_mask(ids, mask=None), [[True, False, True]])
    assert layers.Embedding(5, 2).compute_mask(ids) is None


def test_eager_call_attaches_mask():
    out = layers.Embedding(5, 2, mask_zero=True)(np.array([[0, 4]]))
    np.testing.assert_array_equal(out._keras_mask, [[False, True]])
    assert not hasattr(layers.Embedding(5, 2)(np.array([[0, 4]])), "_keras_mask")


def test_compute_mask_of_a_symbolic_tensor_refused():
    with pytest.raises(TypeError, match="Embedding .*compute_mask of a symbolic tensor"):
        layers.Embedding(5, 2, mask_zero=True).compute_mask(keras.Input((3,)))


def _masked_model(custom):
    inputs = keras.Input((4,))
    x = layers.Embedding(6, 3, mask_zero=True)(inputs)
    return keras.Model(inputs, layers.LSTM(2)(custom(x)))


class _NewMask(layers.Layer):
    def call(self, inputs):
        return inputs * 1.0

    def compute_mask(self, inputs, mask=None):
        return ops.logical_and(mask, mask)


class _ReadsMask(layers.Layer):
    def call(self, inputs, mask=None):
        return inputs * 1.0


class _Plain(layers.Layer):
    def call(self, inputs):
        return inputs * 1.0


def test_mask_computed_by_an_override_refused():
    model = _masked_model(_NewMask())
    with pytest.raises(NotImplementedError, match=r"_new_mask.*compute_mask override that "
                                                  r"computes a new mask is not supported"):
        model.predict(np.ones((1, 4)), verbose=0)


def test_mask_read_in_call_refused():
    model = _masked_model(_ReadsMask())
    with pytest.raises(NotImplementedError, match=r"call\(\) takes `mask`: reading the mask "
                                                  r"inside a custom layer's call\(mask=\)"):
        model.predict(np.ones((1, 4)), verbose=0)


def test_layer_without_masking_support_drops_the_mask():
    # Keras: a layer that does not support masking destroys the mask (with a warning)
    ids = np.array([[1, 2, 0, 0]], np.float32)
    plain = _masked_model(_Plain())
    unmasked = keras.Sequential([keras.Input((4,)), layers.Embedding(6, 3), layers.LSTM(2)])
    unmasked.set_weights(plain.get_weights())
    np.testing.assert_allclose(plain.predict(ids, verbose=0), unmasked.predict(ids, verbose=0),
                               rtol=1e-6)


def _pooled(length):
    inputs = keras.Input((length,))
    x = layers.Embedding(9, 3, mask_zero=True)(inputs)
    return keras.Model(inputs, layers.Dense(1)(layers.GlobalAveragePooling1D()(x)))


def test_masked_global_average_equals_the_unpadded_sequence():
    padded, short = _pooled(5), _pooled(3)
    short.set_weights(padded.get_weights())
    ids = np.array([[4, 2, 7, 0, 0]], np.float32)
    np.testing.assert_allclose(padded.predict(ids, verbose=0),
                               short.predict(ids[:, :3], verbose=0), rtol=1e-6)
    for m, x in ((padded, ids), (short, ids[:, :3])):
        m.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
        m.train_on_batch(x, np.ones((1, 1), np.float32))
    for a, b in zip(padded.get_weights(), short.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_masked_global_average_of_no_kept_step_is_nan():
    out = _pooled(3).predict(np.array([[0, 0, 0], [1, 0, 0]], np.float32), verbose=0)
    assert np.isnan(out[0, 0]) and np.isfinite(out[1, 0])
