"""data_format="channels_first" and BatchNormalization(axis=1) (issue 34): the channels_last
layer between two permute launches, equal to it on transposed data, Keras's configs."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("make, shape", [
    (lambda f: layers.Conv2D(3, 2, strides=2, padding="same", data_format=f), (2, 5, 4)),
    (lambda f: layers.MaxPooling2D(2, data_format=f), (3, 4, 6)),
    (lambda f: layers.AveragePooling2D(3, strides=1, data_format=f), (2, 4, 5)),
    (lambda f: layers.GlobalAveragePooling2D(data_format=f), (3, 4, 4)),
    (lambda f: layers.GlobalMaxPooling2D(data_format=f), (3, 4, 4)),
    (lambda f: layers.Conv1D(2, 3, padding="causal", data_format=f), (3, 6)),
    (lambda f: layers.MaxPooling1D(2, data_format=f), (2, 5)),
    (lambda f: layers.GlobalAveragePooling1D(data_format=f), (2, 5)),
])
def test_equals_channels_last_on_transposed_data(make, shape):
    x = RNG.standard_normal((2, *shape)).astype("float32")
    first, last = make("channels_first"), make("channels_last")
    m_first = keras.Sequential([keras.Input(shape), first])
    m_last = keras.Sequential([keras.Input((*shape[1:], shape[0])), last])
    m_last.set_weights(m_first.get_weights())
    x_last = np.moveaxis(x, 1, -1)
    got, want = m_first.predict(x, verbose=0), m_last.predict(x_last, verbose=0)
    if want.ndim > 2:
        want = np.moveaxis(want, -1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # one SGD step on each: the same weights after it
    for m in (m_first, m_last):
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    if m_first.get_weights():
        m_first.train_on_batch(x, np.ones_like(got))
        m_last.train_on_batch(x_last, np.ones_like(m_last.predict(x_last, verbose=0)))
        for a, b in zip(m_first.get_weights(), m_last.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_batchnorm_axis_1_trains_like_last_axis():
    x = RNG.standard_normal((4, 3, 5)).astype("float32")
    one = keras.Sequential([keras.Input((3, 5)), layers.BatchNormalization(axis=1)])
    last = keras.Sequential([keras.Input((5, 3)), layers.BatchNormalization()])
    for m, data in ((one, x), (last, np.moveaxis(x, 1, -1))):
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        m.train_on_batch(data, np.zeros_like(data))
    for a, b in zip(one.get_weights(), last.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert one.layers[0].get_config()["axis"] == 1


def test_batchnorm_axis_1_of_a_matrix_is_the_last_axis():
    x = RNG.standard_normal((4, 3)).astype("float32")
    one = keras.Sequential([keras.Input((3,)), layers.BatchNormalization(axis=1)])
    last = keras.Sequential([keras.Input((3,)), layers.BatchNormalization()])
    np.testing.assert_allclose(one.predict(x, verbose=0), last.predict(x, verbose=0))


def test_config_round_trip_keeps_channels_first():
    conv = layers.Conv2D(2, 3, data_format="channels_first")
    model = keras.Sequential([keras.Input((1, 5, 5)), conv])
    config = conv.get_config()
    assert config["data_format"] == "channels_first" and type(conv).__name__ == "Conv2D"
    again = layers.Conv2D.from_config(config)
    assert isinstance(again, layers.Conv2D) and again.get_config()["data_format"] == \
        "channels_first"
    clone = keras.Sequential.from_config(model.get_config())
    assert clone.layers[0].output.shape == (None, 2, 3, 3)


def test_rank_errors_still_named():
    with pytest.raises(ValueError, match="Conv2D"):
        layers.Conv2D(2, 3, data_format="channels_first")(keras.Input((4, 4)))


def test_softmax_axis_1_normalizes_the_second_axis():
    x = RNG.standard_normal((2, 4, 3)).astype("float32")
    out = keras.Sequential([keras.Input((4, 3)), layers.Softmax(axis=1)]).predict(x, verbose=0)
    want = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert layers.Softmax(axis=1).get_config()["axis"] == 1


def test_softmax_other_axes_refused():
    with pytest.raises(ValueError, match=r"Softmax: only axis=-1 or axis=1 is supported; "
                                         r"received axis=2"):
        layers.Softmax(axis=2)
