"""engine/conv_pool.py: a Conv2D(relu) whose output goes only to a MaxPooling2D trains
through one backward op for the pair (ops.conv2d_relu_maxpool_backward), and its forward
leaves bias + ReLU to the pool, with the separate ops' results; any other use of the
conv's output keeps the separate ops."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers
from kerasish.engine import conv_pool


def _cnn(seed=0, first_trainable=True, use_bias=True, padding="valid"):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((13, 12, 1)),
        layers.Conv2D(6, 3, activation="relu", trainable=first_trainable),
        layers.MaxPooling2D(2),
        layers.Conv2D(9, 3, activation="relu", padding=padding, use_bias=use_bias),
        layers.MaxPooling2D(2, strides=(2, 1), padding="same"),
        layers.Flatten(), layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _fit(make, fused, monkeypatch, **kwargs):
    monkeypatch.setattr(conv_pool, "ENABLED", fused)
    model = make(**kwargs)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 13, 12, 1)).astype(np.float32)  # a partial last batch
    y = rng.integers(0, 10, 37)
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    ex = model._executor(16, "train")
    return model, history.history, (ex.pooled, ex.pooled_forward)


@pytest.mark.parametrize("kwargs", [{}, {"first_trainable": False},
                                    {"use_bias": False, "padding": "same"}],
                         ids=["trainable", "first-frozen", "no-bias-same"])
def test_fused_training_equals_the_separate_ops(monkeypatch, kwargs):
    fused, hist_f, (pooled, forward) = _fit(_cnn, True, monkeypatch, **kwargs)
    separate, hist_s, none = _fit(_cnn, False, monkeypatch, **kwargs)
    # conv call index -> its pool's; a frozen first conv runs no backward at all, and a
    # conv without bias keeps its ReLU epilogue
    assert pooled == ({2: 3} if kwargs.get("first_trainable") is False else {0: 1, 2: 3})
    assert forward == ({0: 1} if kwargs.get("use_bias") is False else {0: 1, 2: 3})
    assert none == ({}, {})
    for a, b in zip(fused.get_weights(), separate.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hist_f["loss"], hist_s["loss"], rtol=1e-6)


def _functional(kind):
    keras.utils.set_random_seed(0)
    inp = keras.Input((10, 10, 2))
    act = "tanh" if kind == "tanh" else "relu"
    reg = keras.regularizers.L2(0.01) if kind == "activity" else None
    z = layers.Conv2D(4, 3, activation=act, activity_regularizer=reg)(inp)
    pool = layers.AveragePooling2D(2) if kind == "average" else layers.MaxPooling2D(2)
    p = layers.Flatten()(pool(z))
    if kind == "two readers":  # the conv output also feeds another layer
        p = layers.Concatenate()([p, layers.GlobalAveragePooling2D()(z)])
    outputs = [layers.Dense(3)(p)]
    if kind == "model output":
        outputs.append(z)
    model = keras.Model(inp, outputs)
    model.compile("sgd", ["mse"] * len(outputs))
    return model


@pytest.mark.parametrize("kind", ["plain", "two readers", "model output", "tanh", "average",
                                  "activity"])
def test_only_a_conv_read_by_its_pool_alone_is_fused(kind):
    model = _functional(kind)
    x = np.random.default_rng(1).standard_normal((5, 10, 10, 2)).astype(np.float32)
    targets = [np.zeros((5, 3), np.float32)]
    if kind == "model output":
        targets.append(np.zeros((5, 8, 8, 4), np.float32))
    model.fit(x, targets, batch_size=5, epochs=1, verbose=0)
    pooled = model._executor(5, "train").pooled
    assert pooled == ({0: 1} if kind == "plain" else {}), kind  # Input makes no call


def test_fused_forward_predicts_and_evaluates_the_same_bits(monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((21, 13, 12, 1)).astype(np.float32)
    x[3, 4, 5, 0] = np.nan
    y = rng.integers(0, 10, 21)
    out = {}
    for fused in (True, False):
        monkeypatch.setattr(conv_pool, "ENABLED", fused)
        model = _cnn()
        out[fused] = (model.predict(x, batch_size=8, verbose=0),
                      model.evaluate(x[4:], y[4:], batch_size=8, verbose=0))
        assert model._executor(8, "predict").pooled_forward == ({0: 1, 2: 3} if fused else {})
    np.testing.assert_array_equal(out[True][0], out[False][0])
    assert np.isnan(out[True][0][3]).all() and not np.isnan(out[True][0][4:]).any()
    assert out[True][1] == out[False][1]
