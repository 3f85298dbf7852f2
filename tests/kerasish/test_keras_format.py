"""The .keras format inside kerasish: exact round trips (predictions, optimizer state,
training resumed bit for bit), atomic saves, custom objects, and untrusted archives
(truncated, not zips, huge declared sizes, bombs, traversal and duplicate names, bad
JSON, unknown classes, lambdas): each loads or raises an error naming the file."""

import json
import os
import struct
import tempfile
import warnings
import zipfile

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers
from tests.kerasish.saving_helpers import _cnn, _x
from tests.kerasish.test_functional_interop import build, data, max_diff

CONFIG, WEIGHTS = "config.json", "model.weights.h5"


def _fit_cnn():
    model = _cnn(compile_with=keras.optimizers.Adam(1e-3))
    x, y = _x(12), (np.arange(12) % 3).astype(np.int32)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    return model, x, y


def _opt_state(model):
    return [np.asarray(v.numpy()) for v in model.optimizer.variables]


def test_sequential_round_trip_resumes_bit_for_bit(tmp_path):
    model, x, y = _fit_cnn()
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    assert type(loaded) is keras.Sequential and loaded.name == model.name
    assert np.array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert max_diff(_opt_state(loaded), _opt_state(model)) == 0
    # Same weights, optimizer state and Dropout RNG state: the next epoch is identical.
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    assert max_diff(loaded.get_weights(), model.get_weights()) == 0


def test_functional_round_trip(tmp_path):
    model, (x, y) = build(keras), data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    keras.saving.save_model(model, tmp_path / "f.keras")
    loaded = keras.saving.load_model(tmp_path / "f.keras")
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    assert max_diff(loaded.predict(x, verbose=0), model.predict(x, verbose=0)) == 0
    assert max_diff(_opt_state(loaded), _opt_state(model)) == 0
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)


def test_compile_false_include_optimizer_false_and_load_weights(tmp_path):
    model, x, _ = _fit_cnn()
    model.save(tmp_path / "m.keras")
    bare = keras.models.load_model(tmp_path / "m.keras", compile=False)
    assert bare.optimizer is None
    assert np.array_equal(bare.predict(x, verbose=0), model.predict(x, verbose=0))
    model.save(tmp_path / "noopt.keras", include_optimizer=False)
    fresh = keras.models.load_model(tmp_path / "noopt.keras")
    assert fresh.optimizer is not None and fresh.optimizer.iterations == 0
    other = _cnn(seed=5)
    other.load_weights(tmp_path / "m.keras")
    assert np.array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_atomic_save_and_overwrite(tmp_path, monkeypatch):
    model, _, _ = _fit_cnn()
    path = tmp_path / "m.keras"
    model.save(path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        model.save(path, overwrite=False)

    def boom(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", boom)
    with pytest.raises(OSError, match="simulated"):
        model.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before  # the old checkpoint survives
    assert os.listdir(tmp_path) == ["m.keras"]  # no temporary file left
    with pytest.raises(ValueError, match=r"\.keras"):
        model.save(tmp_path / "m.pt")


def test_model_checkpoint_writes_keras_files(tmp_path):
    model, x, y = _fit_cnn()
    pattern = str(tmp_path / "sub" / "e{epoch}.keras")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(pattern)])
    assert sorted(os.listdir(tmp_path / "sub")) == ["e1.keras", "e2.keras"]
    last = keras.models.load_model(tmp_path / "sub" / "e2.keras")
    assert np.array_equal(last.predict(x, verbose=0), model.predict(x, verbose=0))
    assert last.optimizer.iterations == model.optimizer.iterations == 9


class Doubler(layers.Layer):
    """y = k * x; registered under another name to prove `name=` loads."""

    def __init__(self, k=2.0, **kwargs):
        super().__init__(**kwargs)
        self.k = float(k)

    def get_config(self):
        return {**super().get_config(), "k": self.k}

    def forward(self, y, x, training):
        np.multiply(x, np.float32(self.k), out=y)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            np.multiply(dy, np.float32(self.k), out=dx)


def test_custom_layers_registered_by_name_or_passed(tmp_path):
    keras.saving.register_keras_serializable(package="tests", name="Twice")(Doubler)
    try:
        a = keras.Input((3,))
        model = keras.Model(a, layers.Dense(2)(Doubler(3.0)(a)))
        model.save(tmp_path / "c.keras")
        with zipfile.ZipFile(tmp_path / "c.keras") as zf:
            entry = json.loads(zf.read(CONFIG))["config"]["layers"][1]
        assert (entry["class_name"], entry["registered_name"]) == ("Doubler", "tests>Twice")
        loaded = keras.models.load_model(tmp_path / "c.keras")
        assert type(loaded.layers[1]) is Doubler and loaded.layers[1].k == 3.0
        x = np.ones((2, 3), np.float32)
        assert np.array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    finally:
        keras.saving.get_custom_objects().pop("tests>Twice")
    # Unregistered now: refused, naming the file and the registered name it was saved as;
    # custom_objects under that name (as in Keras) loads it.
    with pytest.raises(ValueError, match=r"c\.keras.*'tests>Twice'"):
        keras.models.load_model(tmp_path / "c.keras")
    loaded = keras.models.load_model(tmp_path / "c.keras",
                                     custom_objects={"tests>Twice": Doubler})
    assert type(loaded.layers[1]) is Doubler


# -- untrusted archives ----------------------------------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The members of a valid .keras file of a small compiled model."""
    layers.reset_names() if hasattr(layers, "reset_names") else None
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3, name="d0"),
                              layers.Dropout(0.2, name="drop"), layers.Dense(2, name="d1")])
    model.compile("adam", "mse")
    x = np.ones((4, 4), np.float32)
    model.fit(x, np.zeros((4, 2), np.float32), epochs=1, verbose=0)
    path = tmp_path_factory.mktemp("src") / "good.keras"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}, path.read_bytes()


def write_zip(path, items, compression=zipfile.ZIP_STORED):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names
        with zipfile.ZipFile(path, "w", compression) as zf:
            for name, blob in items:
                zf.writestr(name, blob)
    return path


def patch_central(blob, member, offset, fmt, value):
    """Rewrite one field of `member`'s central-directory header."""
    blob = bytearray(blob)
    pos = 0
    while True:
        pos = blob.index(b"PK\x01\x02", pos)
        name_len = struct.unpack_from("<H", blob, pos + 28)[0]
        if bytes(blob[pos + 46:pos + 46 + name_len]) == member.encode():
            struct.pack_into(fmt, blob, pos + offset, value)
            return bytes(blob)
        pos += 4


def config_with(members, edit):
    config = json.loads(members[CONFIG])
    edit(config)
    return json.dumps(config).encode()


def _mutants(members, whole):
    items = list(members.items())
    other = [(n, b) for n, b in items if n != CONFIG]
    no_weights = [(n, b) for n, b in items if n != WEIGHTS]

    def evil_layer(c):
        c["config"]["layers"][1].update(module="os", class_name="system", registered_name=None)

    def unknown_layer(c):
        c["config"]["layers"][2]["class_name"] = "Conv9D"

    def lambda_loss(c):
        c["compile_config"]["loss"] = {"class_name": "__lambda__",
                                       "config": {"value": "ZXZpbA=="}}

    def evil_model(c):
        c.update(module="subprocess", class_name="Popen", registered_name=None)

    out = {f"truncated-{k}": whole[:k] for k in (1, 10, 100, len(whole) // 3,
                                                   len(whole) // 2, len(whole) - 30,
                                                   len(whole) - 1)}
    out.update({
        "empty": b"",
        "not-a-zip": b"PK\x03\x04" + os.urandom(300),
        "random": os.urandom(500),
        "huge-config-size": patch_central(whole, CONFIG, 24, "<I", 0xFFFFFFF0),
        "huge-weights-size": patch_central(whole, WEIGHTS, 24, "<I", 0xFFFFFFF0),
        "encrypted": patch_central(whole, CONFIG, 8, "<H", 0x1),
        "unknown-compression": patch_central(whole, CONFIG, 10, "<H", 99),
        "bad-crc": patch_central(whole, CONFIG, 16, "<I", 0x12345678),
        "traversal": ("zip", items + [("../escape.txt", b"x")]),
        "traversal-nested": ("zip", items + [("assets/../../escape.txt", b"x")]),
        "absolute": ("zip", items + [("/etc/evil", b"x")]),
        "windows-drive": ("zip", items + [("C:\\evil", b"x")]),
        "duplicate": ("zip", items + [(CONFIG, members[CONFIG])]),
        "no-config": ("zip", other),
        "no-weights": ("zip", no_weights),
        "bad-json": ("zip", other + [(CONFIG, b"{not json")]),
        "not-utf8": ("zip", other + [(CONFIG, b"\xff\xfe\x00{")]),
        "json-list": ("zip", other + [(CONFIG, b"[1, 2]")]),
        "deep-json": ("zip", other + [(CONFIG, b"[" * 200000 + b"]" * 200000)]),
        "deep-config": ("zip", other + [(CONFIG, b'{"class_name": "Sequential", "config": '
                                         + b'{"a": ' * 5000 + b"1" + b"}" * 5001)]),
        "evil-layer": ("zip", other + [(CONFIG, config_with(members, evil_layer))]),
        "unknown-layer": ("zip", other + [(CONFIG, config_with(members, unknown_layer))]),
        "lambda-loss": ("zip", other + [(CONFIG, config_with(members, lambda_loss))]),
        "evil-model": ("zip", other + [(CONFIG, config_with(members, evil_model))]),
        "weights-garbage": ("zip", no_weights + [(WEIGHTS, os.urandom(2000))]),
        "weights-truncated": ("zip", no_weights + [(WEIGHTS, members[WEIGHTS][:3000])]),
        "bzip2": ("bz2", items),
        "bomb": ("deflate", other + [(CONFIG, b" " * (20 << 20))]),
    })
    rng = np.random.default_rng(0)
    blob = members[WEIGHTS]
    for k in range(12):  # bit flips across the weights file
        flipped = bytearray(blob)
        for pos in rng.integers(0, len(blob), 4):
            flipped[pos] ^= 1 << int(rng.integers(0, 8))
        out[f"weights-flip-{k}"] = ("zip", no_weights + [(WEIGHTS, bytes(flipped))])
    return out


MUST_FAIL = ("truncated", "empty", "not-a-zip", "random", "huge", "encrypted", "unknown",
             "bad-crc", "traversal", "absolute", "windows", "duplicate", "no-", "bad-json",
             "not-utf8", "json-list", "deep", "evil", "lambda", "weights-garbage",
             "weights-truncated", "bzip2", "bomb")


def test_damaged_and_hostile_archives_name_the_file(saved, tmp_path):
    members, whole = saved
    temp_before = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("kerasish-keras")}
    outcomes = {}
    for name, spec in _mutants(members, whole).items():
        path = tmp_path / f"{name}.keras"
        if isinstance(spec, bytes):
            path.write_bytes(spec)
        else:
            kind, items = spec
            compression = {"zip": zipfile.ZIP_STORED, "bz2": zipfile.ZIP_BZIP2,
                           "deflate": zipfile.ZIP_DEFLATED}[kind]
            write_zip(path, items, compression)
        try:
            keras.models.load_model(path)
            outcomes[name] = "loaded"
        except (OSError, ValueError) as e:
            assert str(path) in str(e), f"{name}: {type(e).__name__}: {e}"
            outcomes[name] = f"{type(e).__name__}: {e}"
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()
    must_fail = {n for n in outcomes if n.startswith(MUST_FAIL)}
    assert {n for n in must_fail if outcomes[n] == "loaded"} == set()
    assert "traversal" in outcomes["traversal"] and "appears twice" in outcomes["duplicate"]
    assert "'system'" in outcomes["evil-layer"] and "'Conv9D'" in outcomes["unknown-layer"]
    assert "lambda" in outcomes["lambda-loss"] and "'Popen'" in outcomes["evil-model"]
    assert "bomb" in outcomes["bomb"] and "at most" in outcomes["huge-config-size"]
    assert "member model.weights.h5" in outcomes["weights-garbage"]
    temp_after = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("kerasish-keras")}
    assert temp_after <= temp_before  # every extracted weights file was removed


def test_load_errors_for_missing_and_non_keras_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.keras"):
        keras.models.load_model(tmp_path / "nope.keras")
    (tmp_path / "text.keras").write_text("hello")
    with pytest.raises(ValueError, match=r"text\.keras.*zip archive"):
        keras.models.load_model(tmp_path / "text.keras")
