"""Sequence layers beside real Keras 3 (torch backend): same weights -> same outputs to
1e-5, and .h5 files with them cross both ways (predictions to 1e-6)."""

import os
import re

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")
if not real.__version__.startswith("3."):
    pytest.skip(f"interop tests need Keras 3; found {real.__version__}", allow_module_level=True)

import kerasish  # noqa: E402

T, VOCAB = 7, 11


def _ids(n=5, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(n, T)).astype(np.float32)
    ids[0, 4:] = 0  # padding (masked with mask_zero)
    ids[2, 5:] = 0
    return ids


STACKS = {
    "lstm-mask": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4, mask_zero=True),
                            L.LSTM(5, return_sequences=True), L.LSTM(3, go_backwards=True),
                            L.Dense(2)],
    "gru-simple": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4),
                             L.GRU(6, return_sequences=True, go_backwards=True),
                             L.SimpleRNN(3, activation="relu"), L.Dense(2)],
    "gru-reset-before": lambda L: [
        L.Input((T,)), L.Embedding(VOCAB, 4),
        L.GRU(6, reset_after=False, return_sequences=True, go_backwards=True),
        L.GRU(3, reset_after=False, use_bias=False, recurrent_activation="hard_sigmoid"),
        L.Dense(2)],
    "gru-reset-before-mask": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4, mask_zero=True),
                                        L.GRU(5, reset_after=False), L.Dense(2)],
    "bidirectional-gru-reset-before": lambda L: [
        L.Input((T,)), L.Embedding(VOCAB, 4),
        L.Bidirectional(L.GRU(3, reset_after=False), merge_mode="ave"), L.Dense(2)],
    "bidirectional": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4, mask_zero=True),
                                L.Bidirectional(L.LSTM(3, return_sequences=True)),
                                L.Bidirectional(L.GRU(2), merge_mode="sum"), L.Dense(2)],
    "conv1d": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4),
                         L.Conv1D(5, 3, padding="causal", dilation_rate=2, activation="relu"),
                         L.Conv1D(4, 2, strides=2, padding="same"), L.UpSampling1D(2),
                         L.MaxPooling1D(2, padding="same"), L.AveragePooling1D(2),
                         L.TimeDistributed(L.Dense(3)), L.GlobalAveragePooling1D(),
                         L.Dense(2)],
    "global-max": lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4), L.Conv1D(3, 3),
                             L.GlobalMaxPooling1D(), L.Dense(2)],
}
# Mask-aware stacks run in kerasish only where masks flow through the engine.
MASKED = ("lstm-mask", "bidirectional", "gru-reset-before-mask")


def _ours_forward_with_masks(model, x):
    """Layer-by-layer forward passing the Embedding's mask, as the mask-aware engine will."""
    h, mask = x, None
    for layer in model.layers:
        y = np.empty((x.shape[0], *layer.output_shape[1:]), np.float32)
        layer.scratch = {k: np.empty(s, d) for k, (s, d) in
                         layer.scratch_shapes(x.shape[0]).items()}
        if getattr(layer, "supports_masking", False):
            layer.forward(y, h, False, mask=mask)
        else:
            layer.forward(y, h, False)
        if getattr(layer, "produces_mask", False):
            mask = np.empty((x.shape[0], x.shape[1]), np.float32)
            layer.write_mask(mask, h)
        elif not getattr(layer, "propagates_mask", False):
            mask = None
        h = y
    return h


@pytest.mark.parametrize("name", sorted(STACKS))
def test_same_weights_same_outputs(name):
    x = _ids()
    real.utils.set_random_seed(0)
    theirs = real.Sequential(STACKS[name](real.layers))
    ours = kerasish.Sequential(STACKS[name](kerasish.layers))
    ours.build((None, T))
    weights = theirs.get_weights()
    rng = np.random.default_rng(1)
    weights = [w + rng.normal(scale=0.1, size=w.shape).astype(np.float32) for w in weights]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    expected = theirs.predict(x, verbose=0)
    got = _ours_forward_with_masks(ours, x) if name in MASKED else ours.predict(x, verbose=0)
    assert np.abs(got - expected).max() <= 1e-5


@pytest.mark.parametrize("name", ["gru-simple", "gru-reset-before", "conv1d", "global-max"])
def test_h5_crosses_both_ways(name, tmp_path):
    x = _ids()
    real.utils.set_random_seed(3)
    theirs = real.Sequential(STACKS[name](real.layers))
    theirs.compile("adam", "mean_squared_error")
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert np.abs(ours.predict(x, verbose=0) - theirs.predict(x, verbose=0)).max() <= 1e-6
    kerasish.utils.set_random_seed(4)
    mine = kerasish.Sequential(STACKS[name](kerasish.layers))
    mine.compile("adam", "mean_squared_error")
    mine.save(tmp_path / "ours.h5")
    back = real.models.load_model(tmp_path / "ours.h5")
    assert [type(a).__name__ for a in back.layers] == [type(b).__name__ for b in mine.layers]
    assert np.abs(back.predict(x, verbose=0) - mine.predict(x, verbose=0)).max() <= 1e-6


def test_bidirectional_h5_weights_cross(tmp_path):
    x = _ids()
    stack = lambda L: [L.Input((T,)), L.Embedding(VOCAB, 4),  # noqa: E731
                       L.Bidirectional(L.LSTM(3)), L.Dense(2)]
    real.utils.set_random_seed(5)
    theirs = real.Sequential(stack(real.layers))
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert re.search(r"bidirectional(_\d+)?/forward_lstm(_\d+)?/lstm_cell/kernel$",
                     ours.layers[1].weights[0].path)
    assert np.abs(ours.predict(x, verbose=0) - theirs.predict(x, verbose=0)).max() <= 1e-6
    ours.save(tmp_path / "ours.h5")
    back = real.models.load_model(tmp_path / "ours.h5")
    assert np.abs(back.predict(x, verbose=0) - ours.predict(x, verbose=0)).max() <= 1e-6


def test_gru_reset_before_weights_h5_cross(tmp_path):
    """.weights.h5 of GRU(reset_after=False) (bias (3U,)) both ways."""
    x = _ids()
    real.utils.set_random_seed(6)
    theirs = real.Sequential(STACKS["gru-reset-before"](real.layers))
    ours = kerasish.Sequential(STACKS["gru-reset-before"](kerasish.layers))
    ours.build((None, T))
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    theirs.save_weights(tmp_path / "theirs.weights.h5")
    ours.load_weights(tmp_path / "theirs.weights.h5")
    assert np.abs(ours.predict(x, verbose=0) - theirs.predict(x, verbose=0)).max() <= 1e-6
    rng = np.random.default_rng(7)
    ours.set_weights([w + rng.normal(scale=0.1, size=w.shape).astype(np.float32)
                      for w in ours.get_weights()])
    ours.save_weights(tmp_path / "ours.weights.h5")
    theirs.load_weights(tmp_path / "ours.weights.h5")
    assert np.abs(theirs.predict(x, verbose=0) - ours.predict(x, verbose=0)).max() <= 1e-6
