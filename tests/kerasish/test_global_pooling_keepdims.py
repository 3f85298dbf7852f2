"""Global pooling with keepdims=True (issue 34): the pooled axes kept as size 1, values and
gradients those of keepdims=False."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


@pytest.mark.parametrize("cls, shape, kept", [
    (layers.GlobalAveragePooling2D, (4, 3, 2), (1, 1, 2)),
    (layers.GlobalMaxPooling2D, (4, 3, 2), (1, 1, 2)),
    (layers.GlobalAveragePooling1D, (5, 3), (1, 3)),
    (layers.GlobalMaxPooling1D, (5, 3), (1, 3)),
])
def test_keepdims_is_the_reshaped_pooling(cls, shape, kept):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, *shape)).astype("float32")
    models = []
    for keep in (True, False):
        inputs = keras.Input(shape)
        hidden = layers.Dense(shape[-1])(inputs)
        pooled = cls(keepdims=keep)(hidden)
        assert pooled.shape == ((None, *kept) if keep else (None, shape[-1]))
        model = keras.Model(inputs, layers.Dense(1)(layers.Flatten()(pooled) if keep else pooled))
        models.append(model)
    models[1].set_weights(models[0].get_weights())
    np.testing.assert_allclose(models[0].predict(x, verbose=0), models[1].predict(x, verbose=0),
                               rtol=1e-6)
    for m in models:
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        m.train_on_batch(x, np.ones((3, 1), "float32"))
    for a, b in zip(*(m.get_weights() for m in models)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert cls(keepdims=True).get_config()["keepdims"] is True
