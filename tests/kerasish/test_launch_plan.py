"""The launch plan (engine/launch_plan.py): on CUDA a step's layer launches are captured
and, after two equal steps, replayed. Replay must be invisible: the same weights bit
for bit as running every layer's Python each step, and a step whose launches change
(a by-value argument) keeps running live. The CPU's plan: tests/kerasish/test_cpu_replay.py."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import config, layers
from kerasish.engine import launch_plan

pytestmark = pytest.mark.cudasim


@pytest.fixture
def on_cuda():
    before = config.get_device()
    config.set_device("cuda")
    yield
    config.set_device(before)


def _cnn(extra=()):
    keras.utils.set_random_seed(5)
    model = keras.Sequential([  # small: the simulator runs every thread in Python
        keras.Input((3, 3, 2)), layers.Flatten(), layers.Dense(5, activation="relu"), *extra,
        layers.Dense(4, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.random((10, 3, 3, 2), dtype=np.float32), rng.integers(0, 4, 10)


def _train(model, replay, steps=4):
    x, y = _data()
    xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
    ex = model._executor(len(x), "train")
    ex._replay = replay
    for _ in range(steps):
        ex.train_step(xs, ys)
    return ex, [w.numpy() for w in model.weights]


@pytest.fixture(scope="module")
def trained():
    """(replaying executor and its model, weights after 4 replayed-from-step-3 steps,
    weights after 4 live steps): one pair of runs shared by the tests (simulator time)."""
    before = config.get_device()
    config.set_device("cuda")
    try:
        model = _cnn()
        ex, replayed = _train(model, replay=True)
        _, live = _train(_cnn(), replay=False)
    finally:
        config.set_device(before)
    return ex, model, replayed, live


def test_replay_trains_bit_identically_to_live_steps(trained):
    ex, _, replayed, live = trained
    assert launch_plan.replayable(ex, ex.step(10), "train") is not None  # steps 3, 4 replayed
    for a, b in zip(replayed, live):
        np.testing.assert_array_equal(a, b)


def test_evaluate_replays_and_matches(on_cuda):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = np.linspace(0, 1, 12, dtype=np.float32).reshape(4, 3), np.array([0, 1, 1, 0])
    results = [model.evaluate(x, y, batch_size=4, verbose=0) for _ in range(4)]
    assert results[0] == results[1] == results[2] == results[3]
    ex = model._executor(4, "test")
    assert launch_plan.replayable(ex, ex.step(4), "test") is not None


def test_a_repacked_parameter_block_is_captured_again(trained):
    ex, model, _, _ = trained
    step = ex.step(10)
    assert launch_plan.replayable(ex, step, "train") is not None
    block = model._parameter_block
    model._parameter_block = block[:]  # a new block object: the captured plan is stale
    try:
        assert launch_plan.replayable(ex, step, "train") is None
    finally:
        model._parameter_block = block


def test_changing_launch_arguments_keep_the_step_live(on_cuda):
    model = _cnn()
    x, y = _data()
    xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
    ex = model._executor(len(x), "train")
    step = ex.step(10)
    ex.load(step, xs, ys)
    lists = [launch_plan.captured(ex, lambda: ex.forward(step, True)) for _ in range(2)]
    assert lists[0].same_as(lists[1])
    # the same kernel on other memory is a different launch
    other = launch_plan.captured(ex, lambda: ex.forward(ex.step(5), True))
    assert not other.same_as(lists[0])


def test_a_dropout_model_replays_with_the_step_from_a_device_buffer(on_cuda):
    dropout = [layers.Dropout(0.4, seed=3)]
    model = _cnn(dropout)
    ex, replayed = _train(model, replay=True)
    assert launch_plan.replayable(ex, ex.step(10), "train") is not None
    assert model.layers[2].step_buffer and model.layers[2]._step == 4
    before = config.get_device()
    config.set_device("cuda")
    live_model = _cnn([layers.Dropout(0.4, seed=3)])
    config.set_device(before)
    _, live = _train(live_model, replay=False)
    for a, b in zip(replayed, live):  # the same masks each step: the same weights
        np.testing.assert_array_equal(a, b)


def test_cuda_graphs_are_off_by_default_and_on_the_simulator():
    from kernels_numba import _cuda

    assert not _cuda.CUDA_GRAPHS  # KERASISH_CUDA_GRAPHS=1 opts in on a real GPU only
