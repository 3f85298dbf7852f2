"""sample_weight and class_weight in fit/evaluate/*_on_batch and from data batches, with
Keras 3's weighting (loss = sum(w * l) / rows; metrics unweighted), checked against real
Keras 3 side by side."""

import os

import numpy as np
import pytest

import kernels_numba
import kerasish
from kerasish import config

os.environ.setdefault("KERAS_BACKEND", "torch")


def data():
    rng = np.random.default_rng(0)
    x = rng.random((16, 3)).astype(np.float32)
    return x, np.array([0, 1] * 8), (rng.random(16) * 2).astype(np.float32)


def build(lib):
    lib.utils.set_random_seed(0)
    model = lib.Sequential([lib.Input((3,)), lib.layers.Dense(4, activation="tanh"),
                            lib.layers.Dense(2, activation="softmax")])
    model.compile(lib.optimizers.SGD(0.1), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def test_sample_and_class_weights_match_real_keras():
    real = pytest.importorskip("keras", reason="needs Keras 3 (torch backend)")
    pytest.importorskip("torch")
    x, y, w = data()
    theirs, ours = build(real), build(kerasish)
    ours.set_weights([v.numpy() for v in theirs.weights])
    np.testing.assert_allclose(ours.evaluate(x, y, sample_weight=w, verbose=0),
                               theirs.evaluate(x, y, sample_weight=w, verbose=0), rtol=1e-6)
    for kwargs in ({"sample_weight": w}, {"class_weight": {0: 1.0, 1: 3.0}}):
        h_theirs = theirs.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0,
                              **kwargs).history
        h_ours = ours.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0,
                          **kwargs).history
        np.testing.assert_allclose(h_ours["loss"], h_theirs["loss"], rtol=1e-5)
        assert h_ours["accuracy"] == h_theirs["accuracy"]  # metrics are unweighted
        for a, b in zip(theirs.weights, ours.get_weights()):
            np.testing.assert_allclose(b, a.numpy(), rtol=1e-5, atol=1e-6)


def test_weights_from_batches_validation_and_on_batch():
    x, y, w = data()
    model = build(kerasish)
    start = model.get_weights()
    model.fit(x, y, sample_weight=w, batch_size=16, epochs=1, shuffle=False, verbose=0)
    by_array = model.get_weights()
    model.set_weights(start)
    model.train_on_batch(x, y, sample_weight=w)
    for a, b in zip(by_array, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    zero = model.test_on_batch(x, y, sample_weight=np.zeros(16, np.float32))
    assert zero[0] == 0.0
    h = model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y, np.zeros(16)))
    assert h.history["val_loss"] == [0.0]
    with pytest.raises(ValueError, match="sample_weight must be finite, one value"):
        model.fit(x, y, sample_weight=np.ones(3), verbose=0)
    with pytest.raises(ValueError, match="class_weight must be a dict"):
        model.fit(x, y, class_weight=[1, 2], verbose=0)
    with pytest.raises(ValueError, match="at the same time"):
        model.fit(x, y, class_weight={0: 1.0}, sample_weight=w, verbose=0)


@pytest.mark.cudasim
def test_weighted_fit_is_the_same_on_cuda():
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x, y, w = data()
    results = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            model = build(kerasish)
            if results:
                model.set_weights(results[0][0])
            start = model.get_weights()
            h = model.fit(x, y, sample_weight=w, epochs=1, batch_size=8, shuffle=False,
                          verbose=0)
            results.append((start, model.get_weights(), h.history["loss"]))
        finally:
            config.set_device("cpu")
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
