"""Conv1DTranspose (issue 34): equal to Conv2DTranspose on a height-1 image, Keras's kernel
layout and output lengths, arguments kerasish refuses named."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


@pytest.mark.parametrize("padding, strides, steps", [("valid", 1, 7), ("same", 2, 10),
                                                     ("valid", 3, 15)])
def test_equals_conv2d_transpose_on_one_row(padding, strides, steps):
    rng = np.random.default_rng(strides)
    x = rng.standard_normal((2, 5, 3)).astype("float32")
    one = keras.Sequential([keras.Input((5, 3)),
                            layers.Conv1DTranspose(4, 3, strides=strides, padding=padding)])
    two = keras.Sequential([keras.Input((1, 5, 3)),
                            layers.Conv2DTranspose(4, (1, 3), strides=(1, strides),
                                                   padding=padding)])
    kernel = rng.standard_normal((3, 4, 3)).astype("float32")
    bias = rng.standard_normal(4).astype("float32")
    one.set_weights([kernel, bias])
    two.set_weights([kernel[None], bias])
    got = one.predict(x, verbose=0)
    assert got.shape == (2, steps, 4)
    np.testing.assert_allclose(got, two.predict(x[:, None], verbose=0)[:, 0], rtol=1e-5,
                               atol=1e-6)
    for m in (one, two):
        m.compile(optimizer="sgd", loss="mse")
    one.train_on_batch(x, np.zeros((2, steps, 4), "float32"))
    two.train_on_batch(x[:, None], np.zeros((2, 1, steps, 4), "float32"))
    np.testing.assert_allclose(one.get_weights()[0], two.get_weights()[0][0], rtol=1e-5,
                               atol=1e-6)


def test_config_round_trip():
    layer = layers.Conv1DTranspose(2, (3,), strides=(2,), padding="same", activation="relu")
    layer(keras.Input((4, 1)))
    config = layer.get_config()
    assert config["kernel_size"] == (3,) and config["strides"] == (2,)
    again = layers.Conv1DTranspose.from_config(config)
    assert again.get_config() == config


@pytest.mark.parametrize("kwargs, message", [
    ({"output_padding": 1}, "only output_padding=None"),
    ({"dilation_rate": 2}, "only dilation_rate=1"),
    ({"data_format": "channels_first"}, "only data_format='channels_last'"),
    ({"kernel_size": (2, 2)}, "expected `kernel_size` to be an int or a 1-tuple"),
])
def test_refused_arguments_named(kwargs, message):
    args = {"filters": 2, "kernel_size": 3, **kwargs}
    with pytest.raises(ValueError, match=f"Conv1DTranspose: {message}"):
        layers.Conv1DTranspose(**args)


def test_rank_checked():
    with pytest.raises(ValueError, match=r"Conv1DTranspose .*expected input of rank 3"):
        layers.Conv1DTranspose(2, 3)(keras.Input((4, 4, 1)))
