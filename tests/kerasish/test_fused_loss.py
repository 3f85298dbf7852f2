"""engine/fused_loss.py: a Dense(softmax) output with sparse categorical cross-entropy
trains through one fused launch (softmax, loss, its sum, the accuracy count and the
logits' gradient), with the unfused chain's values; the reference CNN's CUDA training
step is then 20 launches (issue 17's target), counted with kernels stubbed."""

import collections

import numpy as np
import pytest

import kerasish as keras
import kernels_numba
from kerasish import config, layers


def _cnn(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _mlp(seed=0):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="relu"),
                              layers.Dense(4, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _train(model, fused, x, y, steps=3):
    ex = model._executor(len(x), "train")
    assert bool(ex.fused) is True  # the plan found the softmax + sparse CE output
    if not fused:
        ex.fused = {}
    xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
    for _ in range(steps):
        ex.train_step(xs, ys)
    logs = {m.name: m.result() for m in model._loss_trackers + model._metrics}
    return [w.numpy() for w in model.weights], logs


def test_fused_training_equals_the_unfused_chain():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((9, 6)).astype(np.float32), rng.integers(0, 4, 9)
    (wf, lf), (wu, lu) = _train(_mlp(), True, x, y), _train(_mlp(), False, x, y)
    for a, b in zip(wf, wu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert lf.keys() == lu.keys()
    for k in lf:
        assert lf[k] == pytest.approx(lu[k], rel=1e-5), k


def _logits_mlp(seed=0, from_logits=True):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="relu"),
                              layers.Dense(4)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits),
                  metrics=["accuracy"])
    return model


def test_a_logits_head_with_from_logits_trains_fused_as_the_unfused_chain():
    # Keras's usual classifier head: a linear Dense and from_logits=True. The output stays
    # the logits (predict, evaluate and the test plan are unfused as before).
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((9, 6)).astype(np.float32), rng.integers(0, 4, 9)
    (wf, lf), (wu, lu) = _train(_logits_mlp(), True, x, y), _train(_logits_mlp(), False, x, y)
    for a, b in zip(wf, wu):  # the same gradient formula: the same weights bit for bit
        np.testing.assert_array_equal(a, b)
    assert lf.keys() == lu.keys() and lf["accuracy"] == lu["accuracy"]
    assert lf["loss"] == pytest.approx(lu["loss"], rel=1e-6)
    model = _logits_mlp()
    model.fit(x, y, batch_size=9, epochs=1, verbose=0)
    out = model.predict(x, verbose=0)
    assert out.shape == (9, 4) and not np.allclose(out.sum(axis=1), 1.0)  # logits, not probs
    assert not _logits_mlp(from_logits=False)._executor(9, "train").fused  # not probabilities


def test_not_fused_when_weighted_logits_or_a_second_consumer():
    model = _mlp()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert not model._executor(4, "train").fused
    inp = keras.Input((6,))
    probs = layers.Dense(4, activation="softmax")(inp)
    other = layers.Dense(2)(probs)  # the probabilities also feed another layer
    two = keras.Model(inp, [probs, other])
    two.compile("sgd", ["sparse_categorical_crossentropy", "mse"])
    assert not two._executor(4, "train").fused


def test_fit_logs_match_with_the_fused_loss():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((20, 6)).astype(np.float32), rng.integers(0, 4, 20)
    model = _mlp()
    history = model.fit(x, y, batch_size=7, epochs=2, verbose=0)
    loss, acc = model.evaluate(x, y, verbose=0)  # the unfused test plan
    assert np.isfinite(history.history["loss"]).all()
    assert 0.0 <= history.history["accuracy"][-1] <= 1.0
    assert np.isfinite(loss) and 0.0 <= acc <= 1.0


@pytest.mark.cudasim
def test_reference_cnn_cuda_step_is_twenty_launches():
    before = config.get_device()
    config.set_device("cuda")
    try:
        model = _cnn()
        rng = np.random.default_rng(0)
        x = rng.random((64, 28, 28, 1), dtype=np.float32)
        xs, ys = model._check_x(x, "x"), model._check_y(rng.integers(0, 10, 64), "y")
        ex = model._executor(64, "train")
        counts = []
        with kernels_numba.record_launches(execute=False) as calls:
            for _ in range(4):  # live, live, then replayed
                start = len(calls)
                ex.train_step(xs, ys)
                counts.append(len(calls) - start)
        names = collections.Counter(c.name for c in calls[-counts[-1]:])
    finally:
        config.set_device(before)
    assert counts == [20, 20, 20, 20], (counts, names)
    assert names["_softmax_sparse_ce_train_kernel"] == 1 and names["_adam_kernel"] == 1
