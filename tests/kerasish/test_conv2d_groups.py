"""Conv2D(groups=g) (issue 34): each group is the convolution of its channel slice with
its kernel columns; trains like separate convolutions; bad groups refused by name."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("activation", ["linear", "relu", "elu"])
def test_groups_equal_separate_convolutions(activation):
    x = RNG.standard_normal((3, 6, 5, 4)).astype("float32")
    kernel = RNG.standard_normal((3, 3, 2, 6)).astype("float32")
    bias = RNG.standard_normal(6).astype("float32")
    grouped = keras.Sequential([keras.Input((6, 5, 4)),
                                layers.Conv2D(6, 3, strides=(2, 1), padding="same", groups=2,
                                              activation=activation)])
    grouped.set_weights([kernel, bias])
    parts = []
    for k in range(2):
        one = keras.Sequential([keras.Input((6, 5, 2)),
                                layers.Conv2D(3, 3, strides=(2, 1), padding="same",
                                              activation=activation)])
        one.set_weights([kernel[..., 3 * k:3 * k + 3], bias[3 * k:3 * k + 3]])
        parts.append(one.predict(x[..., 2 * k:2 * k + 2], verbose=0))
    np.testing.assert_allclose(grouped.predict(x, verbose=0), np.concatenate(parts, -1),
                               rtol=1e-5, atol=1e-5)


class _Channels(layers.Layer):
    def __init__(self, start, stop, **kwargs):
        super().__init__(**kwargs)
        self.start, self.stop = start, stop

    def call(self, x):
        return x[..., self.start:self.stop]


def test_grouped_gradients_match_separate_convolutions():
    x = RNG.standard_normal((2, 5, 5, 6)).astype("float32")
    y = RNG.standard_normal((2, 4, 4, 3)).astype("float32")
    inputs = keras.Input((5, 5, 6))
    hidden = layers.Dense(6)(inputs)  # so the conv's input gradient is used
    grouped = keras.Model(inputs, layers.Conv2D(3, 2, groups=3, activation="tanh")(hidden))
    w = grouped.get_weights()
    grouped.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    grouped.train_on_batch(x, y)
    # the same model with the grouped conv written as three convolutions and a concat
    inputs = keras.Input((5, 5, 6))
    hidden = layers.Dense(6)(inputs)
    pieces = [layers.Conv2D(1, 2, activation="tanh")(_Channels(2 * k, 2 * k + 2)(hidden))
              for k in range(3)]
    split = keras.Model(inputs, layers.Concatenate()(pieces))
    split.set_weights(w[:2] + [a for k in range(3) for a in (w[2][..., k:k + 1],
                                                           w[3][k:k + 1])])
    split.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    split.train_on_batch(x, y)
    got, want = grouped.get_weights(), split.get_weights()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)  # the Dense: dx
    np.testing.assert_allclose(got[2], np.concatenate(want[2::2], -1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], np.concatenate(want[3::2]), rtol=1e-5, atol=1e-6)


def test_groups_must_divide_filters():
    with pytest.raises(ValueError, match=r"Conv2D: expected `groups` to be a positive integer "
                                         r"dividing filters=4; received groups=3"):
        layers.Conv2D(4, 3, groups=3)


def test_groups_must_divide_channels():
    with pytest.raises(ValueError, match=r"input channels must be divisible by groups; "
                                         r"received input channels 5, groups=2"):
        layers.Conv2D(4, 3, groups=2)(keras.Input((6, 6, 5)))


def test_config_keeps_groups():
    conv = layers.Conv2D(4, 3, groups=2)
    conv(keras.Input((6, 6, 4)))
    assert conv.kernel.shape == (3, 3, 2, 4)
    assert layers.Conv2D.from_config(conv.get_config()).groups == 2
