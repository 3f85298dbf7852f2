"""Frozen layers (trainable=False): backward computes only dx, the weights never change, and a
frozen BatchNormalization runs in inference mode in training too (Keras 3), updating none of
its four weights. Compared with real Keras 3 (torch backend) where cheap."""

import os

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers

KINDS = {
    # kind: (input shape, layer list factory, indices of that kind: first, middle, last)
    "Dense": ((5,), lambda: [layers.Dense(6), layers.BatchNormalization(), layers.Dense(6, "relu"),
                             layers.BatchNormalization(), layers.Dense(3)], (0, 2, 4)),
    "Conv2D": ((7, 7, 2), lambda: [layers.Conv2D(3, 3), layers.BatchNormalization(),
                                   layers.Conv2D(3, 3, activation="relu"),
                                   layers.BatchNormalization(), layers.Conv2D(2, 3)], (0, 2, 4)),
    "BatchNormalization": ((7, 7, 2), lambda: [
        layers.BatchNormalization(), layers.Conv2D(3, 3, activation="relu"),
        layers.BatchNormalization(), layers.MaxPooling2D(), layers.Flatten(), layers.Dense(4),
        layers.BatchNormalization()], (0, 2, 6)),
}


def _data(input_shape, output_shape, n=8, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, *input_shape)).astype(np.float32)
    y = r.standard_normal((n, *output_shape[1:])).astype(np.float32)
    return x, y


def _fit_two_steps(model, input_shape):
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x, y = _data(input_shape, model.layers[-1].output_shape)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_frozen_layer_keeps_its_weights_and_the_others_train(on_device, kind, position):
    input_shape, make, where = KINDS[kind]
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(input_shape), *make()])
    frozen = model.layers[where[("first", "middle", "last").index(position)]]
    assert type(frozen).__name__ == kind
    frozen.trainable = False
    assert frozen.trainable_weights == [] and len(frozen.non_trainable_weights) == \
        len(frozen.weights)
    before = [layer.get_weights() for layer in model.layers]
    _fit_two_steps(model, input_shape)
    for layer, old in zip(model.layers, before):
        new = layer.get_weights()
        if layer is frozen:
            for a, b in zip(old, new):  # bit-identical, moving statistics included
                np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32),
                                              err_msg=layer.name)
        else:
            for a, b in zip(old, new):
                assert not np.array_equal(a, b), f"{layer.name} did not train"
                assert np.isfinite(b).all()


@pytest.mark.parametrize("kind", ["Dense", "Conv2D", "BatchNormalization"])
def test_frozen_in_the_constructor(on_device, kind):
    make = {"Dense": lambda: layers.Dense(3, trainable=False),
            "Conv2D": lambda: layers.Conv2D(2, 3, trainable=False),
            "BatchNormalization": lambda: layers.BatchNormalization(trainable=False)}[kind]
    model = keras.Sequential([keras.Input((6, 6, 2)), layers.Conv2D(2, 1), make(),
                              layers.Flatten(), layers.Dense(2)])
    before, first = model.layers[1].get_weights(), model.layers[0].get_weights()[0]
    _fit_two_steps(model, (6, 6, 2))
    for a, b in zip(before, model.layers[1].get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(model.layers[0].get_weights()[0], first)  # the rest trains
    assert model.layers[1].get_config()["trainable"] is False


def test_frozen_batchnorm_trains_like_keras():
    # A frozen BN normalizes with its moving statistics in training (Keras 3): same per-batch
    # losses and weights as real Keras from the same weights, and its 4 weights unchanged.
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch", reason="the comparison needs torch (Keras's backend)")
    real = pytest.importorskip("keras", reason="the comparison needs Keras 3")
    r = np.random.default_rng(5)
    x = r.standard_normal((12, 5, 5, 2)).astype(np.float32)
    y = r.integers(0, 3, 12).astype(np.int32)
    ours = keras.Sequential([
        keras.Input((5, 5, 2)), layers.Conv2D(3, 3), layers.BatchNormalization(),
        layers.Flatten(), layers.Dense(3, activation="softmax")])
    theirs = real.Sequential([
        real.Input((5, 5, 2)), real.layers.Conv2D(3, 3), real.layers.BatchNormalization(),
        real.layers.Flatten(), real.layers.Dense(3, activation="softmax")])
    bn = ours.layers[1]
    # Moving statistics far from the batch's, so inference and training modes differ.
    bn.set_weights([r.uniform(0.5, 2, 3).astype(np.float32), r.standard_normal(3).astype(
        np.float32), r.standard_normal(3).astype(np.float32), r.uniform(2, 4, 3).astype(
        np.float32)])
    for a, b in zip(ours.layers, theirs.layers):
        b.set_weights(a.get_weights())
    bn.trainable = False
    theirs.layers[1].trainable = False
    bn_before = bn.get_weights()

    def per_batch(model, lib):
        losses = []

        class Record(lib.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                losses.append(float(logs["loss"]))

        model.compile(optimizer=lib.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[Record()])
        return losses

    got, want = per_batch(ours, keras), per_batch(theirs, real)
    # Keras logs the running mean of the epoch's batch losses: compare those.
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.get_weights(), [np.asarray(w) for w in theirs.get_weights()]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(bn_before, bn.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(bn_before, theirs.layers[1].get_weights()):
        np.testing.assert_array_equal(a, b)  # Keras changes none of them either


def _small_model():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="relu"),
                              layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    return model


def test_model_frozen_after_compile_fits_without_updates():
    """Issue 34: trainable=False after compile made the replayed update fail (`apply() has
    not run yet`); Keras 3 trains nothing and leaves the optimizer at step 0."""
    x, y = _data((3,), (None, 1), n=16)
    model = _small_model()
    before = model.get_weights()
    model.trainable = False
    with pytest.warns(UserWarning, match="does not have any trainable weights"):
        history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    assert len(set(history.history["loss"])) == 1
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert model.optimizer.iterations == 0
    model.trainable = True  # plans made frozen are made again: training resumes
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert model.optimizer.iterations == 4
    assert not np.array_equal(before[0], model.get_weights()[0])


def test_layer_frozen_between_fits_is_replanned():
    x, y = _data((3,), (None, 1), n=16)
    model = _small_model()
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)  # plans cached
    after_first = model.get_weights()
    model.layers[0].trainable = False
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    now = model.get_weights()
    assert np.array_equal(after_first[0], now[0]) and np.array_equal(after_first[1], now[1])
    assert not np.array_equal(after_first[2], now[2])
