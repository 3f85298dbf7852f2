"""clipvalue, clipnorm and global_clipnorm on every optimizer, as Keras 3 clips (its base
optimizer, before weight decay and the update): trajectories against real Keras 3 (torch
backend) step by step, on both devices, per variable and through the one-launch parameter
block (per-variable norms over the block's segments, scales read on the device); NaN/Inf
gradients; a fit matching Keras; arguments checked by name."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="the comparison needs torch (Keras's backend)")
real = pytest.importorskip("keras", reason="the comparison needs Keras 3")

import kernels_numba  # noqa: E402
import kerasish  # noqa: E402
from kerasish import optimizers  # noqa: E402
from tests.kerasish.test_optimizers_keras import (  # noqa: E402
    assert_same, data, keras_trajectory, kerasish_trajectory)

OPTIMIZERS = {
    "SGD": {"learning_rate": 0.05, "momentum": 0.9},
    "Adam": {"learning_rate": 0.01},
    "AdamW": {"learning_rate": 0.01},
    "RMSprop": {"learning_rate": 0.01},
    "Adagrad": {"learning_rate": 0.05},
    "Nadam": {"learning_rate": 0.01},
    "Adamax": {"learning_rate": 0.01},
    "Adadelta": {"learning_rate": 1.0},
    "Lion": {"learning_rate": 0.01},
    "Ftrl": {"learning_rate": 0.1},
}
# Gradients ~ N(0, 3^2): each variable's norm (about 11 and 8) and the global one (about
# 14) exceed these, so every step is clipped; clipvalue cuts about half the elements.
CLIPS = {"clipvalue": 2.0, "clipnorm": 5.0, "global_clipnorm": 9.0}


@pytest.mark.parametrize("block", [False, True], ids=["per_variable", "block"])
@pytest.mark.parametrize("clip", list(CLIPS))
@pytest.mark.parametrize("cls", list(OPTIMIZERS))
def test_clipped_trajectory_matches_keras(device, cls, clip, block):
    kwargs = {**OPTIMIZERS[cls], clip: CLIPS[clip]}
    w0, grads = data(seed=11, scale=3.0)
    want, _ = keras_trajectory(cls, kwargs, w0, grads)
    got, _ = kerasish_trajectory(cls, kwargs, w0, grads, device, block)
    assert_same(got, want, f"{cls} {clip}")
    if cls != "Lion":  # Lion steps by sign(...): a scaled gradient can leave w unchanged
        unclipped, _ = kerasish_trajectory(cls, OPTIMIZERS[cls], w0, grads, device, block)
        assert np.abs(unclipped[-1][0] - got[-1][0]).max() > 1e-4  # the clip did something


@pytest.mark.parametrize("clip", list(CLIPS))
def test_small_gradients_are_left_alone(device, clip):
    w0, grads = data(seed=12, scale=0.01)
    kwargs = {"learning_rate": 0.1, clip: CLIPS[clip]}
    got, _ = kerasish_trajectory("SGD", kwargs, w0, grads, device, block=True)
    plain, _ = kerasish_trajectory("SGD", {"learning_rate": 0.1}, w0, grads, device, block=True)
    assert_same(got, plain, clip)


@pytest.mark.parametrize("block", [False, True], ids=["per_variable", "block"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("clip", list(CLIPS))
def test_nan_and_inf_gradients_as_keras(device, clip, bad, block):
    # Keras: clipnorm gives NaN for a NaN norm and scales by 0 for an infinite one (inf*0
    # = NaN at the infinite element); global_clipnorm makes every gradient NaN for either.
    w0, grads = data(seed=13)
    grads = grads[:1]
    grads[0][0] = grads[0][0].copy()
    grads[0][0][1, 2] = bad
    kwargs = {"learning_rate": 0.1, clip: CLIPS[clip]}
    want, _ = keras_trajectory("SGD", kwargs, w0, grads)
    got, _ = kerasish_trajectory("SGD", kwargs, w0, grads, device, block)
    for a, b in zip(got[0], want[0]):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        ok = np.isfinite(b)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-5, atol=1e-6)


def _model(lib):
    lib.utils.set_random_seed(4)
    return lib.Sequential([lib.Input((6,)), lib.layers.Dense(8, activation="relu"),
                           lib.layers.Dense(3, activation="softmax")])


@pytest.mark.parametrize("clip", list(CLIPS))
def test_fit_with_clipping_matches_keras(clip):
    r = np.random.default_rng(1)
    x = (5 * r.standard_normal((32, 6))).astype(np.float32)
    y = r.integers(0, 3, 32).astype(np.int32)
    small = {"clipvalue": 0.05, "clipnorm": 0.1, "global_clipnorm": 0.1}[clip]
    theirs = _model(real)
    ours = kerasish.Sequential(_model(kerasish).layers)
    ours.set_weights(theirs.get_weights())
    theirs.compile(real.optimizers.Adam(0.01, **{clip: small}), "sparse_categorical_crossentropy")
    ours.compile(optimizers.Adam(0.01, **{clip: small}), "sparse_categorical_crossentropy")
    for model in (theirs, ours):
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours.optimizer.get_config()[clip] == small


def test_clipping_arguments_follow_keras():
    with pytest.raises(ValueError, match="Adam: only one of `clipnorm`, `clipvalue` and "
                                         "`global_clipnorm` can be set"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)
    for key in CLIPS:
        for bad in (-1.0, float("nan"), float("inf"), "1", True):
            with pytest.raises(ValueError, match=f"SGD: expected {key} to be None or a finite "
                                                 f"float >= 0; received {key}="):
                optimizers.SGD(**{key: bad})
        opt = optimizers.Lion(**{key: 0.5})
        assert opt.get_config()[key] == 0.5
        assert optimizers.Lion.from_config(opt.get_config()).get_config()[key] == 0.5
    # 0 clips nothing, as in Keras
    w0, grads = data(seed=14, scale=3.0)
    got, _ = kerasish_trajectory("SGD", {"learning_rate": 0.1, "clipnorm": 0.0}, w0, grads,
                                 kernels_numba.CPU)
    want, _ = keras_trajectory("SGD", {"learning_rate": 0.1, "clipnorm": 0.0}, w0, grads)
    assert_same(got, want, "clipnorm=0")
