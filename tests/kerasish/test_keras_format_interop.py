""".keras files cross both ways with real Keras 3 (torch CPU backend): a Sequential CNN
and a two-input, two-output functional model with a shared layer and a nested
Sequential, compiled with Adam; predictions agree to 1e-6, the optimizer state is
restored and training resumes; config.json and model.weights.h5 have Keras's layout."""

import json
import os
import zipfile

import h5py
import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch (pip install torch==2.13.0)")
real = pytest.importorskip("keras", reason="interop tests need Keras 3 (pip install keras)")
if not real.__version__.startswith("3."):
    pytest.skip(f"interop tests need Keras 3; found keras {real.__version__}",
                allow_module_level=True)

import kerasish  # noqa: E402
from tests.kerasish.test_functional_interop import (  # noqa: E402
    TOL,
    build,
    data,
    max_diff,
    same_optimizer_state,
)


def cnn(lib):
    L = lib.layers
    model = lib.Sequential([lib.Input((7, 6, 2)), L.Conv2D(4, 3, padding="same", activation="relu"),
                            L.BatchNormalization(), L.MaxPooling2D(2), L.Flatten(),
                            L.Dropout(0.25), L.Dense(3, activation="softmax")])
    model.compile(lib.optimizers.Adam(1e-3), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def cnn_data(n=16):
    rng = np.random.default_rng(3)
    return rng.normal(size=(n, 7, 6, 2)).astype(np.float32), rng.integers(0, 3, n).astype(np.int32)


def members(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: i for i in zf.infolist()}, json.loads(zf.read("config.json")), \
            zf.read("model.weights.h5")


def h5_tree(blob, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(blob)
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, o: out.__setitem__(k, getattr(o, "shape", "group")))
    return out


def entry_shape(entry):
    """The parts of a config entry whose form both sides must agree on."""
    keys = {k: entry[k] for k in ("module", "class_name", "registered_name")}
    keys["build_config"] = entry.get("build_config")
    keys["config_keys"] = sorted(entry["config"])
    return keys


@pytest.mark.parametrize("make", [cnn, build], ids=["cnn", "functional"])
def test_layout_matches_keras(tmp_path, make):
    x, y = (cnn_data() if make is cnn else data())
    ours, theirs = make(kerasish), make(real)
    ours.fit(x, y, batch_size=8, epochs=1, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)
    ours.save(tmp_path / "o.keras")
    theirs.save(tmp_path / "t.keras")
    (om, oc, ow), (tm, tc, tw) = members(tmp_path / "o.keras"), members(tmp_path / "t.keras")
    assert list(om) == list(tm) == ["metadata.json", "config.json", "model.weights.h5"]
    assert all(i.compress_type == zipfile.ZIP_STORED for i in om.values())
    assert sorted(oc) == sorted(tc)
    assert oc["module"] == tc["module"] and oc["class_name"] == tc["class_name"]
    assert oc["registered_name"] == tc["registered_name"]
    assert oc["build_config"] == tc["build_config"]
    assert sorted(oc["compile_config"]) == sorted(tc["compile_config"])
    assert oc["compile_config"]["optimizer"]["class_name"] == "Adam"
    for ours_e, theirs_e in zip(oc["config"]["layers"], tc["config"]["layers"]):
        a, b = entry_shape(ours_e), entry_shape(theirs_e)
        # Keras's configs carry options kerasish refuses (regularizers, constraints...)
        # at their off values; every key kerasish writes is one Keras writes.
        assert set(a.pop("config_keys")) <= set(b.pop("config_keys")), ours_e["class_name"]
        if ours_e["class_name"] == "Sequential":
            a["build_config"] = b["build_config"]  # compared through the nested entries
        assert a == b
        assert ours_e.get("inbound_nodes", []).__len__() == len(theirs_e.get("inbound_nodes", []))
    # Same H5 groups and dataset shapes (kerasish adds only its own kerasish_state group).
    ot = {k: v for k, v in h5_tree(ow, tmp_path, "o.h5").items()
          if not k.startswith("kerasish_state")}
    assert ot == h5_tree(tw, tmp_path, "t.h5")


def test_kerasish_cnn_loads_in_keras(tmp_path):
    x, y = cnn_data()
    ours = cnn(kerasish)
    ours.fit(x, y, batch_size=8, epochs=2, verbose=0)
    kerasish.saving.save_model(ours, tmp_path / "cnn.keras")
    theirs = real.saving.load_model(tmp_path / "cnn.keras")
    assert max_diff([theirs.predict(x, verbose=0)], [ours.predict(x, verbose=0)]) <= TOL
    same_optimizer_state(ours, theirs)
    history = theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)  # Keras resumes
    assert int(theirs.optimizer.iterations.numpy()) == 6
    assert np.isfinite(history.history["loss"][0])


def test_keras_cnn_loads_in_kerasish_and_resumes(tmp_path):
    x, y = cnn_data()
    theirs = cnn(real)
    theirs.fit(x, y, batch_size=8, epochs=2, verbose=0)
    real.saving.save_model(theirs, tmp_path / "cnn.keras")
    ours = kerasish.models.load_model(tmp_path / "cnn.keras")
    assert max_diff([ours.predict(x, verbose=0)], [theirs.predict(x, verbose=0)]) <= TOL
    same_optimizer_state(theirs, ours)
    loss, acc = ours.evaluate(x, y, verbose=0)
    keras_loss, keras_acc = theirs.evaluate(x, y, verbose=0)
    assert abs(loss - keras_loss) <= 1e-5 and acc == pytest.approx(keras_acc)
    ours.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert ours.optimizer.iterations == 6


def test_functional_crosses_both_ways_and_resumes(tmp_path):
    x, y = data()
    ours = build(kerasish)
    ours.fit(x, y, batch_size=8, epochs=2, verbose=0)
    ours.save(tmp_path / "ours.keras")
    theirs = real.models.load_model(tmp_path / "ours.keras")
    assert max_diff(theirs.predict(x, verbose=0), ours.predict(x, verbose=0)) <= TOL
    same_optimizer_state(ours, theirs)
    # Keras continues kerasish's run exactly as kerasish does (no dropout here).
    ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    assert max_diff(ours.get_weights(), [w.numpy() for w in theirs.weights]) <= 1e-5
    # ... and back: Keras's file after that epoch, loaded by kerasish.
    theirs.save(tmp_path / "theirs.keras")
    back = kerasish.saving.load_model(tmp_path / "theirs.keras")
    assert max_diff(back.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL
    same_optimizer_state(theirs, back)
    assert [l.name for l in back.layers] == [l.name for l in theirs.layers]
    assert back.get_layer("inner").get_layer("d6").units == 6


def test_model_checkpoint_keras_files_load_in_keras(tmp_path):
    x, y = data()
    ours = build(kerasish)
    pattern = str(tmp_path / "ckpt-{epoch:02d}.keras")
    ours.fit(x, y, batch_size=8, epochs=2, verbose=0,
             callbacks=[kerasish.callbacks.ModelCheckpoint(pattern)])
    assert sorted(os.listdir(tmp_path)) == ["ckpt-01.keras", "ckpt-02.keras"]
    theirs = real.models.load_model(tmp_path / "ckpt-02.keras")
    assert max_diff(theirs.predict(x, verbose=0), ours.predict(x, verbose=0)) <= TOL
    assert int(theirs.optimizer.iterations.numpy()) == 4


def test_keras_weights_load_from_keras_file(tmp_path):
    x, _ = data()
    theirs = build(real)
    theirs.save(tmp_path / "t.keras")
    ours = build(kerasish)
    ours.load_weights(tmp_path / "t.keras")
    assert max_diff(ours.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL
