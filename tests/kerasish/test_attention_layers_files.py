"""MultiHeadAttention files crossing with real Keras 3: legacy .h5 and .weights.h5 of
a model, Transformer blocks (.keras both ways, native weights, Keras's subgroups), the
Functional config's call nodes."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")

import kerasish  # noqa: E402
from kerasish.layers.attention import MultiHeadAttention  # noqa: E402
from tests.kerasish.test_attention_layers import TOL, _data, _pair  # noqa: E402


@pytest.mark.parametrize("fmt", ["h5", "weights.h5"])
def test_weight_files_cross_with_keras(tmp_path, fmt):
    """Keras writes (legacy .h5: model.save; native: save_weights), kerasish reads and
    writes back, a fresh Keras model reads that: same outputs all along."""
    q, v, mask = _data()
    theirs = _pair(real, 5, 7, 6, "mask")
    ours = _pair(kerasish, 5, 7, 6, "mask")
    x = [q, v, mask]
    path = str(tmp_path / f"theirs.{fmt}")
    theirs.save(path) if fmt == "h5" else theirs.save_weights(path)
    ours.load_weights(path)
    want = real.ops.convert_to_numpy(theirs(x))
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    back = str(tmp_path / f"ours.{fmt}")
    ours.save_weights(back)
    fresh = _pair(real, 5, 7, 6, "mask")
    fresh.load_weights(back)
    np.testing.assert_allclose(real.ops.convert_to_numpy(fresh(x)), want, rtol=TOL,
                               atol=TOL)


def _block(lib, t=5, d=6, name="block"):
    """A functional Transformer block: masked causal self-attention, residual and
    LayerNorm, a feed-forward pair, residual and LayerNorm; a causal Attention on top."""
    L = lib.layers
    x_in, m_in = lib.Input((t, d), name="x"), lib.Input((t, t), name="m")
    mha = (L.MultiHeadAttention if lib is real else MultiHeadAttention)(
        num_heads=2, key_dim=3, name="mha")
    h = mha(x_in, x_in, attention_mask=m_in, use_causal_mask=True)
    h = L.LayerNormalization(epsilon=1e-6, name="ln1")(L.Add(name="add1")([x_in, h]))
    f = L.Dense(d, name="ff2")(L.Dense(8, activation="relu", name="ff1")(h))
    h = L.LayerNormalization(epsilon=1e-6, name="ln2")(L.Add(name="add2")([h, f]))
    att = real.layers.Attention if lib is real else __import__(
        "kerasish.layers.attention", fromlist=["Attention"]).Attention
    out = att(name="dot")([h, x_in], use_causal_mask=True)
    return lib.Model([x_in, m_in], out, name=name)


def _block_data(n=3, t=5, d=6):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(n, t, d)).astype(np.float32)
    m = (rng.random((n, t, t)) > 0.3).astype(np.float32)
    m[1, 3] = 0.0  # a fully masked row
    return [x, m]


def _randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(scale=0.5, size=np.shape(w)).astype(np.float32)
                       for w in model.get_weights()])


def test_transformer_block_keras_file_from_keras(tmp_path):
    """A .keras file of the block written by Keras loads in kerasish (no custom_objects):
    same predictions (1e-5), the mask and causal call arguments kept."""
    x = _block_data()
    theirs = _block(real)
    _randomize(theirs, 1)
    want = real.ops.convert_to_numpy(theirs(x))
    theirs.save(tmp_path / "theirs.keras")
    ours = kerasish.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    assert ours.get_layer("mha")._options == (False, True, True, False)
    assert ours.get_layer("dot")._causal is True


def test_transformer_block_keras_file_to_keras(tmp_path):
    """kerasish's .keras file of the block loads in Keras without custom_objects: same
    predictions (1e-5)."""
    x = _block_data()
    mine = _block(kerasish)
    _randomize(mine, 2)
    mine_out = mine.predict(x, verbose=0)
    mine.save(tmp_path / "ours.keras")
    back = real.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(real.ops.convert_to_numpy(back(x)), mine_out, rtol=TOL,
                               atol=TOL)


def test_transformer_block_native_weights_cross_both_ways(tmp_path):
    x = _block_data()
    theirs, ours = _block(real), _block(kerasish)
    _randomize(theirs, 3)
    want = real.ops.convert_to_numpy(theirs(x))
    theirs.save_weights(tmp_path / "theirs.weights.h5")
    ours.load_weights(tmp_path / "theirs.weights.h5")
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    _randomize(ours, 4)
    mine_out = ours.predict(x, verbose=0)
    ours.save_weights(tmp_path / "ours.weights.h5")
    fresh = _block(real)
    fresh.load_weights(tmp_path / "ours.weights.h5")
    np.testing.assert_allclose(real.ops.convert_to_numpy(fresh(x)), mine_out, rtol=TOL,
                               atol=TOL)


def test_native_weights_file_has_keras_subgroups(tmp_path):
    import h5py

    ours = _block(kerasish)
    ours.save_weights(tmp_path / "o.weights.h5")
    with h5py.File(tmp_path / "o.weights.h5", "r") as f:
        groups = sorted(f["layers/multi_head_attention"])
        shapes = [f[f"layers/multi_head_attention/query_dense/vars/{i}"].shape
                  for i in range(2)]
    assert {"key_dense", "output_dense", "query_dense", "value_dense"} <= set(groups)
    assert shapes == [(6, 2, 3), (2, 3)]


def test_functional_config_nodes_equal_keras_and_round_trip(tmp_path):
    """The config's inbound nodes are Keras 3's (args and kwargs, tensors serialized),
    and a kerasish save/load keeps the mask and causal call arguments."""
    ours, theirs = _block(kerasish), _block(real)
    import json

    def nodes(model, name):  # as the config.json holds them (tuples are lists)
        return json.loads(json.dumps(next(e["inbound_nodes"] for e in
                                          model.get_config()["layers"] if e["name"] == name)))

    for name in ("mha", "dot", "add1"):
        assert nodes(ours, name) == nodes(theirs, name), name
    assert nodes(ours, "mha")[0]["kwargs"]["use_causal_mask"] is True
    x = _block_data()
    _randomize(ours, 5)
    want = ours.predict(x, verbose=0)
    ours.save(tmp_path / "o.keras")
    back = kerasish.models.load_model(tmp_path / "o.keras")
    assert back.get_layer("mha")._options == (False, True, True, False)
    assert back.get_layer("dot")._causal is True
    np.testing.assert_allclose(back.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    assert back.get_config() == ours.get_config()


def test_config_node_refusals_name_the_layer():
    cfg = _block(kerasish).get_config()
    for entry in cfg["layers"]:
        if entry["name"] == "ff1":  # a one-input layer given a tensor kwarg
            node = entry["inbound_nodes"][0]
            node["kwargs"] = {"extra": node["args"][0]}
    with pytest.raises(ValueError, match="layer 'ff1' .*takes one input"):
        kerasish.Model.from_config(cfg)


@pytest.mark.parametrize("kind", ["key", "mask", "scores"])
def test_keras_config_with_call_kwargs_loads(kind):
    """Keras 3's config of a model calling MHA with key=, attention_mask= or
    return_attention_scores=True: kerasish's from_config gives the same outputs, and
    its own config of the result is Keras's again."""
    import json

    q, v, mask = _data()
    k = np.random.default_rng(13).normal(size=(3, 7, 4)).astype(np.float32)
    qi, vi = real.Input((5, 6), name="q"), real.Input((7, 6), name="v")
    mha = real.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
    if kind == "key":
        ki = real.Input((7, 4), name="k")
        ins, x, out = [qi, vi, ki], [q, v, k], mha(qi, vi, key=ki)
    elif kind == "mask":
        mi = real.Input((5, 7), name="mk")
        ins, x, out = [qi, vi, mi], [q, v, mask], mha(query=qi, value=vi, attention_mask=mi)
    else:
        ins, x, out = [qi, vi], [q, v], list(mha(qi, vi, return_attention_scores=True))
    theirs = real.Model(ins, out)
    _randomize(theirs, 6)
    want = theirs(x)
    want = [real.ops.convert_to_numpy(w) for w in (want if isinstance(want, list) else [want])]
    cfg = json.loads(json.dumps(theirs.get_config()))
    ours = kerasish.Model.from_config(cfg)
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    got = ours.predict(x, verbose=0)
    for a, b in zip(got if isinstance(got, list) else [got], want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    if kind != "mask":  # Keras keeps query=/value= as kwargs; ours writes them positionally
        mine = json.loads(json.dumps(ours.get_config()))
        assert [e["inbound_nodes"] for e in mine["layers"]] == \
            [e["inbound_nodes"] for e in cfg["layers"]]
