"""The launch plan on the CPU (engine/launch_plan.py): after two equal training steps the
op calls of a step are replayed (kernels_numba.dispatch keeps each CPU implementation's
call). Replay must be invisible: the same weights bit for bit as running every layer's
Python each step. A plan with a user layer's own NumPy forward/backward, or a user
optimizer class, never replays (the replay would skip their work)."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import config, layers, ops
from kerasish.engine import launch_plan
from tests.kerasish.test_custom_layer import Scale as HostScale  # NumPy forward/backward


@pytest.fixture(autouse=True)
def on_cpu():
    before = config.get_device()
    config.set_device("cpu")
    yield
    config.set_device(before)


class Doubled(layers.Layer):
    """A call() layer: traced into kerasish ops, so its work is captured too."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, inputs):
        return ops.relu(inputs * self.w) + inputs


def _model(extra=(), optimizer="adam"):
    keras.utils.set_random_seed(5)
    model = keras.Sequential([
        keras.Input((7, 7, 3)), layers.Conv2D(4, 3, activation="relu"),
        layers.BatchNormalization(), layers.MaxPooling2D(2), layers.Flatten(),
        layers.Dense(6, activation="relu"), layers.Dropout(0.3, seed=2), *extra,
        layers.Dense(3, activation="softmax")])
    model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _data(n=9):
    rng = np.random.default_rng(0)
    return rng.random((n, 7, 7, 3), dtype=np.float32), rng.integers(0, 3, n)


def _train(model, replay, steps=5):
    x, y = _data()
    xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
    ex = model._executor(len(x), "train")
    ex._replay = ex._replay and replay
    for _ in range(steps):
        ex.train_step(xs, ys)
    return ex, [w.numpy() for w in model.weights]


@pytest.mark.parametrize("extra", [(), (Doubled(),)], ids=["built-in", "call-layer"])
def test_cpu_replay_trains_bit_identically_to_live_steps(extra):
    model = _model(extra)
    ex, replayed = _train(model, replay=True)
    assert ex._replay
    assert launch_plan.replayable(ex, ex.step(9), "train") is not None  # steps 3-5 replayed
    assert model.layers[5].step_buffer and model.layers[5]._step == 5  # Dropout drew 5 masks
    _, live = _train(_model(tuple(type(layer)() for layer in extra)), replay=False)
    for a, b in zip(replayed, live):
        np.testing.assert_array_equal(a, b)


def test_cpu_fit_and_evaluate_replay_and_match_live(monkeypatch):
    x, y = _data(18)
    results = {}
    for replay in (True, False):
        monkeypatch.setattr(launch_plan, "REPLAY", replay)
        model = _model()
        history = model.fit(x, y, batch_size=9, epochs=3, verbose=0)
        results[replay] = (history.history, [model.evaluate(x, y, batch_size=9, verbose=0)
                                              for _ in range(3)],
                           [w.numpy() for w in model.weights])
        if replay:
            ex = model._executor(9, "test")
            assert launch_plan.replayable(ex, ex.step(9), "test") is not None
    assert results[True][0] == results[False][0]
    assert results[True][1] == results[False][1]
    for a, b in zip(results[True][2], results[False][2]):
        np.testing.assert_array_equal(a, b)


def test_a_host_numpy_layer_or_a_user_optimizer_keeps_the_cpu_plan_live():
    assert not _model((HostScale(),))._executor(9, "train")._replay

    class MyAdam(keras.optimizers.Adam):
        pass

    assert not _model(optimizer=MyAdam())._executor(9, "train")._replay
    # held by a built-in wrapper, and inside a nested model
    wrapped = keras.Sequential([keras.Input((4, 3)), layers.TimeDistributed(HostScale()),
                                layers.Flatten(), layers.Dense(2)])
    wrapped.compile("sgd", "mse")
    assert not wrapped._executor(5, "train")._replay
    inner = keras.Sequential([keras.Input((3,)), HostScale()])
    outer = keras.Sequential([keras.Input((3,)), inner, layers.Dense(2)])
    outer.compile("sgd", "mse")
    assert not outer._executor(5, "train")._replay
    assert _model()._executor(9, "train")._replay
    # that such a model trains (every step live) is test_custom_layer's
    # test_custom_layer_trains_and_roundtrips_config, the same layer and recipe


@pytest.mark.parametrize("replay", [True, False])
def test_freezing_a_layer_between_fits_takes_effect(monkeypatch, replay):
    # as Keras on torch: a layer frozen after a fit stays fixed in the next fit; a
    # trainable flip drops the replayed plan (the frozen layer's backward launches less)
    monkeypatch.setattr(launch_plan, "REPLAY", replay)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2)])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).random((32, 4), dtype=np.float32)
    model.fit(x, 2 * x[:, :2], batch_size=8, epochs=2, verbose=0)
    frozen, last = model.layers[0].kernel.numpy(), model.layers[1].kernel.numpy()
    model.layers[0].trainable = False
    model.fit(x, 2 * x[:, :2], batch_size=8, epochs=2, verbose=0)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), frozen)
    assert not np.array_equal(model.layers[1].kernel.numpy(), last)
