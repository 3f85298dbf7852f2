"""ops.image.resize / extract_patches and ops.tensordot: NumPy references, gradients
through the traced ops, and errors naming the op."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


def test_extract_patches_matches_numpy_and_trains():
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 2)).astype(np.float32)
    got = ops.image.extract_patches(x, (2, 3))
    want = np.stack([np.stack([x[:, 2 * i:2 * i + 2, 3 * j:3 * j + 3].reshape(2, -1)
                               for j in range(2)], 1) for i in range(2)], 1)
    np.testing.assert_array_equal(got, want)

    class Patches(layers.Layer):
        def call(self, images):
            return ops.image.extract_patches(ops.image.resize(images, (4, 4)), 2)

    inputs = keras.Input((4, 6, 2))
    h = layers.Conv2D(2, 1, use_bias=False, kernel_initializer="ones")(inputs)
    model = keras.Model(inputs, layers.Dense(1)(layers.Flatten()(Patches()(h))))
    model.compile(keras.optimizers.SGD(0.01), "mse")
    before = model.layers[1].get_weights()[0].copy()
    model.fit(x, np.ones((2, 1), np.float32), verbose=0)
    assert np.abs(model.layers[1].get_weights()[0] - before).max() > 0  # through both ops


def test_resize_identity_and_constant():
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(ops.image.resize(x, (3, 5)), x, atol=1e-6)
    np.testing.assert_allclose(ops.image.resize(np.full((4, 4, 1), 2.0), (7, 3)), 2.0)


def test_tensordot_reads_weights_each_run():
    class Contract(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1], 2), name="w")

        def call(self, x):
            return ops.tensordot(x, self.w, axes=1)

    inputs = keras.Input((3, 4))
    layer = Contract()
    model = keras.Model(inputs, layer(inputs))
    x = np.ones((2, 3, 4), np.float32)
    model.predict(x, verbose=0)
    w = np.arange(8, dtype=np.float32).reshape(4, 2)
    layer.set_weights([w])
    np.testing.assert_allclose(model.predict(x, verbose=0), np.tensordot(x, w, 1))


def test_errors_name_the_op():
    x = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(ValueError, match=r"ops.image.resize: expected interpolation in"):
        ops.image.resize(x, (2, 2), interpolation="bicubic")
    with pytest.raises(ValueError, match=r"ops.image.resize: antialias=True is not supported"):
        ops.image.resize(x, (2, 2), antialias=True)
    with pytest.raises(ValueError, match=r"only data_format='channels_last'"):
        ops.image.resize(x, (2, 2), data_format="channels_first")
    with pytest.raises(ValueError, match=r"ops.image.extract_patches: expected size"):
        ops.image.extract_patches(x, (0, 2))
    with pytest.raises(ValueError, match=r"ops.image.extract_patches: patches of size"):
        ops.image.extract_patches(x, 5)
    with pytest.raises(ValueError, match=r"expected images of rank 3 .* or 4"):
        ops.image.resize(np.zeros((4, 4)), (2, 2))
    with pytest.raises(ValueError, match=r"ops.tensordot: the contracted axes must have equal"):
        ops.tensordot(np.zeros((2, 3)), np.zeros((4, 2)), axes=1)
    with pytest.raises(ValueError, match=r"ops.tensordot: expected axes in \[0, 2\]"):
        ops.tensordot(np.zeros((2, 3)), np.zeros((3, 2)), axes=3)
