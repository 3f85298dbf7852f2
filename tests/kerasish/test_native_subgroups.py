"""Recurrent layers and wrappers keep their weights in Keras 3's named subgroups of the
native layout (`cell`, `forward_layer`/`backward_layer`, `layer`), so .weights.h5 and
.keras files with them cross both ways with real Keras 3."""

import os

import h5py
import numpy as np
import pytest

import kerasish

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="needs torch for real Keras")
real = pytest.importorskip("keras", reason="needs Keras 3")


def build(lib):
    L = lib.layers
    return lib.Sequential([lib.Input((5, 3)), L.LSTM(4, return_sequences=True),
                           L.Bidirectional(L.GRU(2, return_sequences=True)),
                           L.TimeDistributed(L.Dense(2)), L.SimpleRNN(3)])


def groups(path):
    with h5py.File(path) as f:
        names = []
        f.visit(names.append)
    return sorted(n for n in names if not n.split("/")[-1].isdigit() and
                  not n.startswith("kerasish_state"))  # our extra state (RNG seeds)


@pytest.mark.parametrize("suffix", [".weights.h5", ".keras"])
def test_rnn_and_wrapper_weights_cross_with_keras(tmp_path, suffix):
    x = np.random.default_rng(0).random((4, 5, 3)).astype(np.float32)
    theirs, ours = build(real), build(kerasish)
    if suffix == ".keras":
        theirs.compile("adam", "mean_squared_error")
        ours.compile("adam", "mean_squared_error")
    theirs.save(tmp_path / f"k{suffix}") if suffix == ".keras" else \
        theirs.save_weights(tmp_path / f"k{suffix}")
    ours.load_weights(tmp_path / f"k{suffix}")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    mine = build(kerasish)
    fresh = build(real)
    if suffix == ".keras":
        mine.compile("adam", "mean_squared_error")
        mine.save(tmp_path / f"o{suffix}")
        loaded = real.models.load_model(tmp_path / f"o{suffix}")
    else:
        mine.save_weights(tmp_path / f"o{suffix}")
        fresh.load_weights(tmp_path / f"o{suffix}")
        loaded = fresh
        assert groups(tmp_path / f"o{suffix}") == groups(tmp_path / f"k{suffix}")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), mine.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
