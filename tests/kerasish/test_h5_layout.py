"""kerasish.saving's h5 files: the Keras layouts (attribute chunking, legacy and native
weights, a tf.keras 2 file), atomic saves surviving SIGKILL, and untrusted or damaged files.

Model and weights round trips are in test_saving.py.
"""

import json
import multiprocessing
import os
import signal
import time

import h5py
import numpy as np
import pytest

import kerasish as keras
from kerasish.saving import atomic, h5_format, h5_safety

from .saving_helpers import _cnn

# -- layouts on plain data --------------------------------------------------------------

def test_attribute_chunking_matches_keras_and_roundtrips(tmp_path):
    names = [f"sequential/layer_{i:05d}/kernel_with_a_long_name" for i in range(3000)]
    with h5py.File(tmp_path / "a.h5", "w") as f:
        h5_format.save_attributes(f, "weight_names", names)
        h5_format.save_attributes(f, "small", ["a", "bb"])
        h5_format.save_attributes(f, "empty", [])
    with h5py.File(tmp_path / "a.h5", "r") as f:
        chunks = sorted(k for k in f.attrs if k.startswith("weight_names"))
        assert "weight_names" not in f.attrs and len(chunks) >= 2
        assert all(f.attrs[k].nbytes <= h5_format.HDF5_OBJECT_HEADER_LIMIT for k in chunks)
        assert h5_format.load_attributes(f, "weight_names", "a.h5") == names
        assert h5_format.load_attributes(f, "small", "a.h5") == ["a", "bb"]
        assert f.attrs["empty"].dtype == np.float64  # Keras's empty weight_names
        assert h5_format.load_attributes(f, "empty", "a.h5") == []
        assert h5_format.load_attributes(f, "missing", "a.h5") == []
    with h5py.File(tmp_path / "b.h5", "w") as f:  # str and bytes items (h5py 3 vs 2)
        f.attrs["layer_names"] = np.array(["dense", "dense_1"], dtype=h5py.string_dtype())
        f.attrs["weight_names"] = [b"dense/kernel:0"]
        assert h5_format.load_attributes(f, "layer_names", "b") == ["dense", "dense_1"]
        assert h5_format.load_attributes(f, "weight_names", "b") == ["dense/kernel:0"]
        with pytest.raises(ValueError, match="longer than 64512"):
            h5_format.save_attributes(f, "big", ["x" * 70000])


def test_legacy_model_file_layout(tmp_path):
    k = np.arange(12, dtype=np.float32).reshape(4, 3)
    layer_list = [("dense", [("sequential/dense/kernel", k), ("sequential/dense/bias", k[0])]),
                  ("dropout", []),
                  ("bn", [("sequential/bn/gamma", k[1]), ("sequential/bn/moving_mean", k[2])])]
    opt = [("adam/iteration", np.int32(7)), ("adam/learning_rate", np.float32(0.01)),
           ("adam/sequential_dense_kernel_momentum", k * 2)]
    with h5py.File(tmp_path / "m.h5", "w") as f:
        h5_format.write_model_file(f, {"class_name": "Sequential", "config": {"layers": []}},
                                   layer_list, {"loss": "mse"}, opt)
    with h5py.File(tmp_path / "m.h5", "r") as f:
        assert f.attrs["keras_version"] == h5_format.KERAS_VERSION
        assert json.loads(f.attrs["model_config"])["class_name"] == "Sequential"
        mw = f["model_weights"]
        # Same storage as Keras 3.15 + h5py 3: vlen strings, read back as str.
        assert list(mw.attrs["layer_names"]) == ["dense", "dropout", "bn"]
        assert mw.attrs.get_id("layer_names").get_type().is_variable_str()
        assert mw.attrs["backend"] == "kerasish"
        assert list(mw["dense"].attrs["weight_names"]) == ["sequential/dense/kernel",
                                                           "sequential/dense/bias"]
        np.testing.assert_array_equal(mw["dense/sequential/dense/kernel"], k)
        assert mw["dropout"].attrs["weight_names"].shape == (0,)
        assert mw["top_level_model_weights"].attrs["weight_names"].shape == (0,)
        assert f["optimizer_weights/adam/iteration"].dtype == np.int32
        assert f["optimizer_weights/adam/iteration"].shape == ()
        data = h5_format.read_model_file(f, "m.h5")
    assert data["training_config"] == {"loss": "mse"}
    assert [n for n, _ in data["weights"]["layers"]] == ["dense", "dropout", "bn"]
    np.testing.assert_array_equal(data["weights"]["layers"][2][1][1][1], k[2])
    assert [n for n, _ in data["optimizer_weights"]] == [n for n, _ in opt]
    assert int(data["optimizer_weights"][0][1]) == 7


def test_native_weights_layout(tmp_path):
    assert h5_format.native_layer_keys(["Dense", "MaxPooling2D", "Dense", "Conv2D",
                                        "BatchNormalization", "Dense"]) == [
        "dense", "max_pooling2d", "dense_1", "conv2d", "batch_normalization", "dense_2"]
    a, b = np.ones((2, 3), np.float32), np.zeros(3, np.float32)
    with h5py.File(tmp_path / "w.weights.h5", "w") as f:
        h5_format.write_native_weights(f, "seq", [("Dense", "d0", [a, b], None),
                                                  ("Flatten", "f", [], None),
                                                  ("Dense", "d1", [b], None)],
                                       optimizer=("adam", [np.int32(3), b]))
    with h5py.File(tmp_path / "w.weights.h5", "r") as f:
        assert f["layers/dense_1/vars"].attrs["name"] == "d1"
        assert sorted(f["layers/dense/vars"].keys()) == ["0", "1"]
        assert len(f["layers/flatten/vars"]) == 0 and f["vars"].attrs["name"] == "seq"
        assert h5_format.is_native_layout(f)
        data = h5_format.read_native_weights(f, "w")
    assert data["layers"]["dense"][0] == "d0"
    np.testing.assert_array_equal(data["layers"]["dense"][1][0], a)
    assert data["optimizer"][0] == "adam" and int(data["optimizer"][1][0]) == 3


def test_tf_keras2_style_file_loads(tmp_path):
    """A hand-written file in the tf.keras 2.15 layout (keras-reference.md §2.5)."""
    rng = np.random.default_rng(0)
    k0, b0 = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    k1, b1 = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=2).astype(np.float32)

    def dense(name, units, act):
        return {"class_name": "Dense", "config": {
            "name": name, "trainable": True, "dtype": "float32", "units": units,
            "activation": act, "use_bias": True,
            "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
            "bias_initializer": {"class_name": "Zeros", "config": {}},
            "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
            "kernel_constraint": None, "bias_constraint": None}}

    config = {"class_name": "Sequential", "config": {"name": "sequential", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 4],
                                                "dtype": "float32", "sparse": False,
                                                "ragged": False, "name": "dense_input"}},
        dense("dense", 3, "relu"), dense("dense_1", 2, "softmax")]}}
    training = {"loss": "sparse_categorical_crossentropy", "metrics": [[{
        "class_name": "MeanMetricWrapper", "config": {
            "name": "accuracy", "dtype": "float32", "fn": "sparse_categorical_accuracy"}}]],
        "weighted_metrics": None, "loss_weights": None, "optimizer_config": {
            "class_name": "Adam", "config": {"name": "Adam", "learning_rate": 0.002,
                                             "decay": 0.0, "beta_1": 0.9, "beta_2": 0.999,
                                             "epsilon": 1e-07, "amsgrad": False,
                                             "is_legacy_optimizer": False}}}
    with h5py.File(tmp_path / "tf2.h5", "w") as f:
        f.attrs["keras_version"] = b"2.15.0"
        f.attrs["backend"] = b"tensorflow"
        f.attrs["model_config"] = json.dumps(config).encode()
        f.attrs["training_config"] = json.dumps(training).encode()
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = [b"dense", b"dense_1"]
        for name, (k, b) in (("dense", (k0, b0)), ("dense_1", (k1, b1))):
            mw.create_group(name).attrs["weight_names"] = [f"{name}/kernel:0".encode(),
                                                           f"{name}/bias:0".encode()]
            mw[f"{name}/{name}/kernel:0"] = k
            mw[f"{name}/{name}/bias:0"] = b
    model = keras.models.load_model(tmp_path / "tf2.h5")
    x = rng.normal(size=(5, 4)).astype(np.float32)
    h = np.maximum(x @ k0 + b0, 0) @ k1 + b1
    ref = np.exp(h - h.max(1, keepdims=True))
    np.testing.assert_allclose(model.predict(x, verbose=0), ref / ref.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    assert model.optimizer.learning_rate == pytest.approx(0.002)


# -- atomic saves ----------------------------------------------------------------------

def test_failed_save_keeps_previous_file_and_cleans_up(tmp_path):
    target = tmp_path / "ckpt.h5"
    with atomic.atomic_h5(target) as f:
        f["x"] = np.arange(3)
    with pytest.raises(RuntimeError, match="boom"):
        with atomic.atomic_h5(target) as f:
            f["x"] = np.arange(5)
            raise RuntimeError("boom")
    with h5py.File(target, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(3))
    assert os.listdir(tmp_path) == ["ckpt.h5"]
    with pytest.raises(FileExistsError, match="overwrite=False"):
        with atomic.atomic_h5(target, overwrite=False):
            pass
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~umask
    os.chmod(target, 0o640)
    os.symlink(target, tmp_path / "latest.h5")
    with atomic.atomic_h5(tmp_path / "latest.h5") as f:  # writes through the link
        f["x"] = np.arange(7)
    assert os.path.islink(tmp_path / "latest.h5")
    assert os.stat(target).st_mode & 0o777 == 0o640
    with h5py.File(target, "r") as f:
        assert f["x"].shape == (7,)


def _save_forever(target, ready):
    """Child process: save ever-increasing versions of a 16 MB checkpoint."""
    v = 1
    while True:
        arr = np.full((1024, 1024), v, np.float32)
        layer_list = [(f"l{i}", [(f"s/l{i}/kernel", arr)]) for i in range(4)]
        with atomic.atomic_h5(target) as f:
            h5_format.write_model_file(f, {"class_name": "Sequential", "config": {"v": v}},
                                       layer_list)
        ready.set()
        v += 1


def test_sigkill_during_saves_leaves_a_readable_checkpoint(tmp_path):
    ctx = multiprocessing.get_context("fork")
    target = str(tmp_path / "ckpt.h5")
    rng = np.random.default_rng(0)
    mid_save = 0
    for attempt in range(6):
        ready = ctx.Event()
        child = ctx.Process(target=_save_forever, args=(target, ready), daemon=True)
        child.start()
        assert ready.wait(60)
        if attempt % 2:  # kill at a random moment
            time.sleep(rng.uniform(0.01, 0.3))
        else:  # kill while a temporary file is being written
            deadline = time.monotonic() + 10
            while len(os.listdir(tmp_path)) < 2 and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.01))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        with h5_safety.open_for_read(target) as f:  # always the last complete save
            data = h5_format.read_model_file(f, target)
        v = data["model_config"]["config"]["v"]
        for _, weights in data["weights"]["layers"]:
            assert np.all(weights[0][1] == v)
        stale = [p for p in os.listdir(tmp_path) if p != "ckpt.h5"]
        mid_save += bool(stale)
        for p in stale:
            os.unlink(tmp_path / p)
    assert mid_save >= 2  # kills really landed inside saves


# -- untrusted files ---------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    model = _cnn(compile_with="adam")
    path = tmp_path / "good.h5"
    model.save(path)
    return model, path


@pytest.mark.parametrize("content", [b"", b"not an hdf5 file at all", b'{"class_name": 1}',
                                     b"PK\x03\x04zipzipzip", b"\x89HDF\r\n\x1a\n" + b"\0" * 40])
def test_garbage_files_raise_naming_the_file(tmp_path, content):
    path = tmp_path / "bad.h5"
    path.write_bytes(content)
    for load in (keras.models.load_model, _cnn().load_weights):
        with pytest.raises((ValueError, OSError), match="bad.h5"):
            load(path)


def test_truncated_missing_and_directory_paths(tmp_path, saved):
    _, path = saved
    blob = path.read_bytes()
    for cut in (len(blob) // 2, len(blob) - 100, 600):
        (tmp_path / "cut.h5").write_bytes(blob[:cut])
        with pytest.raises((ValueError, OSError), match="cut.h5"):
            keras.models.load_model(tmp_path / "cut.h5")
    with pytest.raises(FileNotFoundError, match="nope.h5"):
        keras.models.load_model(tmp_path / "nope.h5")
    with pytest.raises(IsADirectoryError):
        keras.models.load_model(tmp_path)


def test_random_corruption_never_crashes(tmp_path, saved):
    _, path = saved
    blob = bytearray(path.read_bytes())
    rng = np.random.default_rng(3)
    for i in range(25):
        bad = bytearray(blob)
        for pos in rng.integers(0, len(bad), 8):
            bad[pos] ^= int(rng.integers(1, 256))
        (tmp_path / "fuzz.h5").write_bytes(bad)
        try:
            keras.models.load_model(tmp_path / "fuzz.h5")
        except (ValueError, OSError) as e:
            assert "fuzz.h5" in str(e)


def _edit(path, fn):
    with h5py.File(path, "a") as f:
        fn(f)


@pytest.mark.parametrize("edit, message", [
    (lambda f: f["model_weights/dense"].__setitem__("alias", h5py.SoftLink("/model_weights")),
     "soft link"),
    (lambda f: f["model_weights"].__setitem__("ext", h5py.ExternalLink("other.h5", "/x")),
     "external link"),
    (lambda f: f.create_dataset("ext_data", (4,), "f4", external=[("raw.bin", 0, 16)]),
     "external file"),
    (lambda f: f.attrs.__delitem__("model_config"), "No model config"),
    (lambda f: f.attrs.__setitem__("model_config", b"{not json"), "JSON"),
    (lambda f: f.attrs.__setitem__("model_config", json.dumps(
        {"class_name": "Functional", "config": {"layers": []}})), "Functional"),
    (lambda f: f["model_weights/dense"].attrs.__setitem__(
        "weight_names", [b"sequential/dense/kernel", b"sequential/dense/missing"]), "missing"),
    (lambda f: (f.__delitem__("model_weights/dense/sequential/dense/bias"),
                f.create_dataset("model_weights/dense/sequential/dense/bias", data=["a", "b"])),
     "numeric"),
    (lambda f: (f.__delitem__("model_weights/dense/sequential/dense/bias"),
                f.create_dataset("model_weights/dense/sequential/dense/bias", dtype="f4",
                                 shape=(2**20, 2**13), chunks=(64, 64), compression="gzip")),
     "shape bomb"),
])
def test_hostile_or_inconsistent_files_are_refused(saved, edit, message):
    _, path = saved
    _edit(path, edit)
    with pytest.raises(ValueError, match=message) as info:
        keras.models.load_model(path)
    assert "good.h5" in str(info.value)


def test_virtual_datasets_and_link_cycles(tmp_path, saved):
    _, path = saved
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f["data"] = np.arange(3.0)
    layout = h5py.VirtualLayout(shape=(3,), dtype="f8")
    layout[:] = h5py.VirtualSource(str(tmp_path / "src.h5"), "data", shape=(3,))
    _edit(path, lambda f: f.create_virtual_dataset("virtual", layout))
    with pytest.raises(ValueError, match="virtual dataset"):
        keras.models.load_model(path)
    with h5py.File(path, "a") as f:
        del f["virtual"]
        f["model_weights/dense/loop"] = f["model_weights"]  # a hard-link cycle
    keras.models.load_model(path)  # walks the cycle once and loads
