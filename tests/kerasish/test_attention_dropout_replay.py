"""MultiHeadAttention(dropout > 0) under the CUDA launch plan (simulator): its dropout
reads the step from the device step buffer, so after two equal steps the training step
replays, advance_step() moves the mask on, and the weights equal live steps' bit for
bit (model-level: for the lead's slow mark)."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import config, layers
from kerasish.engine import launch_plan
from kerasish.layers.attention import MultiHeadAttention

# slow: model-level; the kernels run in tests/kernels_numba/test_attention_dropout.py
# (step buffer included) and step-buffer replay in test_launch_plan's dropout model
pytestmark = [pytest.mark.cudasim, pytest.mark.slow]


def _model():
    keras.utils.set_random_seed(5)
    inp = keras.Input((3, 2))  # tiny: the simulator runs every thread in Python
    h = MultiHeadAttention(num_heads=1, key_dim=2, dropout=0.5, seed=3)(inp, inp)
    model = keras.Model(inp, layers.Dense(2)(layers.Flatten()(h)))
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def _train(replay, steps=3):  # two live steps, then one replayed
    before = config.get_device()
    config.set_device("cuda")
    try:
        model = _model()
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(2, 3, 2)).astype(np.float32), np.ones((2, 2), np.float32)
        xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
        ex = model._executor(len(x), "train")
        ex._replay = replay
        for _ in range(steps):
            ex.train_step(xs, ys)
        return model, ex, [w.numpy() for w in model.weights]
    finally:
        config.set_device(before)


def test_dropout_attention_replays_with_the_step_buffer():
    model, ex, replayed = _train(replay=True)
    assert launch_plan.replayable(ex, ex.step(2), "train") is not None
    mha = model.layers[1]
    assert mha.step_buffer and mha._step == 3
    _, _, live = _train(replay=False)
    for a, b in zip(replayed, live):  # the same masks each step: the same weights
        np.testing.assert_array_equal(a, b)
