"""Regularizers and constraints in training (engine/regularization.py), side by side with
real Keras 3 on the same weights: the logged loss includes the weight and activity
penalties, the gradients include theirs, constraints project after each update, and
evaluate's loss includes the penalties too."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch (pip install torch==2.13.0)")
real = pytest.importorskip("keras", reason="interop tests need Keras 3 (pip install keras)")

import kerasish  # noqa: E402


def _build(lib, conv):
    L = lib.layers
    if conv:
        body = [lib.Input((5, 5, 2)),
                L.Conv2D(3, 3, activation="relu",
                         kernel_regularizer=lib.regularizers.L2(0.03),
                         activity_regularizer=lib.regularizers.L1(0.01),
                         kernel_constraint=lib.constraints.NonNeg()),
                L.Flatten(),
                L.Dense(4, activation="softmax", bias_regularizer=lib.regularizers.L1(0.02),
                        kernel_constraint=lib.constraints.UnitNorm(axis=0))]
    else:
        body = [lib.Input((4,)),
                L.Dense(6, activation="tanh",
                        kernel_regularizer=lib.regularizers.L1L2(l1=0.01, l2=0.02),
                        bias_regularizer="l2",
                        activity_regularizer=lib.regularizers.L2(0.05)),
                L.Dense(3, kernel_constraint=lib.constraints.MaxNorm(0.4),
                        bias_constraint=lib.constraints.MinMaxNorm(0.1, 0.3, axis=0))]
    return lib.Sequential(body)


@pytest.mark.parametrize("conv", [False, True], ids=["dense", "conv"])
def test_training_and_evaluate_match_keras(conv):
    rng = np.random.default_rng(0)
    if conv:
        x = rng.standard_normal((6, 5, 5, 2)).astype(np.float32)
        y, loss = rng.integers(0, 4, 6), "sparse_categorical_crossentropy"
    else:
        x = rng.standard_normal((6, 4)).astype(np.float32)
        y, loss = rng.standard_normal((6, 3)).astype(np.float32), "mean_squared_error"
    ours, theirs = _build(kerasish, conv), _build(real, conv)
    theirs.set_weights([w + 0.1 for w in ours.get_weights()])  # positive: NonNeg is active
    ours.set_weights(theirs.get_weights())
    ours.compile(kerasish.optimizers.SGD(0.1), loss)
    theirs.compile(real.optimizers.SGD(0.1), loss)
    h_ours = ours.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0).history
    h_theirs = theirs.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0).history
    np.testing.assert_allclose(h_ours["loss"], h_theirs["loss"], rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours.evaluate(x, y, verbose=0) == pytest.approx(
        theirs.evaluate(x, y, verbose=0), rel=1e-5)


def test_no_regularizer_means_no_penalty_work():
    model = kerasish.Sequential([kerasish.Input((3,)), kerasish.layers.Dense(2)])
    model.compile("sgd", "mse")
    assert not model._executor(4, "train").penalties.active
