"""Untrusted .h5 / .weights.h5 files (issue 14, items 4, 7, 8, 9): shapes checked
against the model before any data is read, compressed chunks inflated with a cap,
optimizer state validated all-or-nothing, stale temporary files of killed saves
removed, clear errors naming the file. CPU only (no kernels involved)."""

import logging
import os
import resource
import subprocess
import sys
import zlib

import h5py
import numpy as np
import pytest

import kerasish
from kerasish.saving import atomic


def _model():
    layers = kerasish.layers
    m = kerasish.Sequential([layers.Input((3,)), layers.Dense(2, name="dense"),
                             layers.Dropout(0.5, name="drop")], name="seq")
    m.compile(optimizer="adam", loss="mse")
    m.optimizer.build(m.trainable_weights)
    return m


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _replace(f, path, shape, dtype="f4", chunks=None, compression="gzip"):
    """Swap a dataset for one declaring `shape`, with (almost) nothing stored."""
    del f[path]
    f.create_dataset(path, shape=shape, dtype=dtype, chunks=chunks or True,
                     compression=compression)


KERNEL = "model_weights/dense/seq/dense/kernel"


def test_small_file_declaring_a_4gb_kernel_is_refused_before_reading(tmp_path):
    p = str(tmp_path / "bomb.h5")
    _model().save(p)
    with h5py.File(p, "a") as f:
        _replace(f, KERNEL, (1000, 1000000))
    assert os.path.getsize(p) < 100_000
    before = _peak_mb()
    with pytest.raises(ValueError, match=r"expects shape \(3, 2\).*\(1000, 1000000\)") as e:
        kerasish.saving.load_model(p)
    assert p in str(e.value) and _peak_mb() - before < 200


def test_huge_optimizer_datasets_are_not_read(tmp_path, caplog):
    p = str(tmp_path / "opt.h5")
    _model().save(p)
    with h5py.File(p, "a") as f:
        for name in f["optimizer_weights"].attrs["weight_names"][2:]:
            _replace(f, f"optimizer_weights/{name}", (1 << 30,))  # 4 GiB each
    before = _peak_mb()
    with caplog.at_level(logging.WARNING, logger="kerasish"):
        m = kerasish.saving.load_model(p)
    assert _peak_mb() - before < 200
    assert "freshly initialized optimizer" in caplog.text and p in caplog.text
    assert int(m.optimizer.iterations) == 0


def test_weights_h5_bomb_is_refused(tmp_path):
    p = str(tmp_path / "w.weights.h5")
    m = _model()
    m.save_weights(p)
    with h5py.File(p, "a") as f:
        _replace(f, "layers/dense/vars/0", (100000, 100000))  # 40 GB declared
    with pytest.raises(ValueError, match=p):
        m.load_weights(p)


def test_gzip_chunk_inflating_past_its_size_is_refused(tmp_path):
    """The declared shape fits the model, but the chunk's deflate stream holds 64 MB
    (HDF5's own filter would inflate all of it): refused from the stored chunk size,
    or, for a stream that fits it, when inflating passes the chunk's 24 bytes."""
    p = str(tmp_path / "chunk.h5")
    m = _model()
    m.save(p)
    with h5py.File(p, "a") as f:
        _replace(f, KERNEL, (3, 2), chunks=(3, 2))
        f[KERNEL].id.write_direct_chunk((0, 0), zlib.compress(bytes(64 << 20), 9))
    before = _peak_mb()
    with pytest.raises(OSError, match="a stored chunk of") as e:
        kerasish.saving.load_model(p)
    assert p in str(e.value) and _peak_mb() - before < 50
    with h5py.File(p, "a") as f:
        f[KERNEL].id.write_direct_chunk((0, 0), zlib.compress(bytes(4000), 9))  # 20 bytes
    with pytest.raises(ValueError, match="inflates past its 24 bytes") as e:
        kerasish.saving.load_model(p)
    assert p in str(e.value)


def test_compressed_weights_load_exactly(tmp_path):
    p = str(tmp_path / "gz.h5")
    m = _model()
    m.layers[0].kernel.assign(np.arange(6, dtype=np.float32).reshape(3, 2))
    m.save(p)
    with h5py.File(p, "a") as f:
        value = f[KERNEL][()]
        del f[KERNEL]
        f.create_dataset(KERNEL, data=value, chunks=(2, 1), compression="gzip",
                         shuffle=True, fletcher32=True)
    got = kerasish.saving.load_model(p)
    np.testing.assert_array_equal(got.layers[0].kernel.numpy(), value)


@pytest.mark.parametrize("slot, value, msg", [
    ("adam/iteration", -5, "integer >= 0"),
    ("adam/iteration", 2.5, "integer >= 0"),
    ("adam/learning_rate", np.nan, "finite number >= 0"),
])
def test_impossible_optimizer_values_are_refused(tmp_path, slot, value, msg):
    p = str(tmp_path / "o.h5")
    _model().save(p)
    with h5py.File(p, "a") as f:
        del f[f"optimizer_weights/{slot}"]
        f[f"optimizer_weights/{slot}"] = np.float64(value)
    with pytest.raises(ValueError, match=msg) as e:
        kerasish.saving.load_model(p)
    assert p in str(e.value) and slot in str(e.value)


def test_missing_optimizer_slot_restores_nothing(tmp_path, caplog):
    p = str(tmp_path / "o.h5")
    src = _model()
    for v in src.optimizer.variables[2:]:
        v.assign(np.ones(v.shape, np.float32))
    src.save(p)
    with h5py.File(p, "a") as f:
        g = f["optimizer_weights"]
        names = list(g.attrs["weight_names"])
        del g[names[-1]]
        g.attrs["weight_names"] = names[:-1]
    with caplog.at_level(logging.WARNING, logger="kerasish"):
        m = kerasish.saving.load_model(p)
    assert "freshly initialized optimizer" in caplog.text and p in caplog.text
    assert all(not np.any(v.numpy()) for v in m.optimizer.variables[2:])  # none assigned


def test_corrupt_layer_state_is_refused(tmp_path):
    p = str(tmp_path / "s.h5")
    m = _model()
    m.save(p)
    with h5py.File(p, "a") as f:
        del f["kerasish_state/drop/step"]
        f["kerasish_state/drop/step"] = np.float64(np.nan)
    with pytest.raises(ValueError, match="finite integers") as e:
        kerasish.saving.load_model(p)
    assert p in str(e.value)


def test_saving_under_a_regular_file_names_the_path(tmp_path):
    f = tmp_path / "plain"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file, not a directory") as e:
        _model().save(str(f / "x.h5"))
    assert str(f) in str(e.value)


def test_stale_temp_files_of_dead_writers_are_removed(tmp_path):
    target = tmp_path / "ckpt.h5"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)  # exited: its pid is (almost surely) free
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".ckpt.h5.kerasish-tmp-{dead_pid}-0badc0de"
        alive = tmp_path / f".ckpt.h5.kerasish-tmp-{live.pid}-12345678"
        other = tmp_path / f".other.h5.kerasish-tmp-{dead_pid}-0badc0de"
        for p in (stale, alive, other):
            p.write_bytes(b"half a checkpoint")
        _model().save(str(target))
        assert not stale.exists()  # its writer is gone
        assert alive.exists() and other.exists()  # a live writer's, another target's
        assert sorted(os.listdir(tmp_path)) == sorted([alive.name, other.name, "ckpt.h5"])
        assert atomic.remove_stale_temps(str(target)) == []
    finally:
        live.kill()
        live.wait()
