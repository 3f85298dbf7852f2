"""Issue 40 items 3, 4, 6 and the attribute half of 10, on HDF5 files crafted here:
groups shared by hard links (a DAG 30 levels deep: read as a tree, 2**30 visits) are
refused after one visit each; repeated names in a legacy name list are refused before
references are built; a variable-length name list whose items all point at one large
heap object is refused before it is read; an attribute over the limit is refused
before it is opened. Counted (groups reached, attributes opened), not timed."""

import os
import re
import struct

import h5py
import numpy as np
import pytest

import kerasish
from kerasish.saving import h5_format, h5_safety, load_limits, weights_io


def _model():
    layers = kerasish.layers
    return kerasish.Sequential([layers.Input((3,)), layers.Dense(2, name="d0"),
                                layers.Dense(1, name="d1")], name="m")


@pytest.fixture
def reached(monkeypatch):
    calls = []
    real = h5_safety.reach_once

    def counting(group, source):
        calls.append(group.name)
        return real(group, source)

    monkeypatch.setattr(h5_safety, "reach_once", counting)
    return calls


def test_hard_linked_dag_is_refused_after_one_visit_each(tmp_path, reached):
    path = str(tmp_path / "dag.weights.h5")
    _model().save_weights(path)
    with h5py.File(path, "a") as f:
        node = f["layers"]["dense"].create_group("deep")
        for _ in range(30):  # each level: two links to the same next group
            nxt = node.create_group("a")
            node["b"] = nxt
            node = nxt
    model = _model()
    with pytest.raises(ValueError, match="same HDF5 object") as e:
        model.load_weights(path)
    assert path in str(e.value)
    assert len(reached) < 40  # a tree walk of this DAG would reach 2**31 groups


def test_tree_files_still_load(tmp_path, reached):
    path = str(tmp_path / "ok.weights.h5")
    source = _model()
    source.save_weights(path)
    model = _model()
    model.load_weights(path)
    for a, b in zip(source.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert len(reached) == len(set(reached))


def test_repeated_layer_names_are_refused_before_building_references(tmp_path, reached):
    path = str(tmp_path / "dup.h5")
    _model().save_weights(path)  # legacy weights-only layout
    with h5py.File(path, "a") as f:
        f.attrs["layer_names"] = np.array([b"d0"] * 5000)
    with pytest.raises(ValueError, match="more than once") as e:
        _model().load_weights(path)
    assert path in str(e.value) and "layer_names" in str(e.value)
    assert reached == []  # no layer group was read


def test_repeated_weight_names_are_refused(tmp_path):
    path = str(tmp_path / "dupw.h5")
    _model().save_weights(path)
    with h5py.File(path, "a") as f:
        first = f["d0"].attrs["weight_names"][0]
        first = first if isinstance(first, bytes) else str(first).encode()
        f["d0"].attrs["weight_names"] = np.array([first] * 3000)
    with pytest.raises(ValueError, match="'weight_names' of '/d0' lists"):
        _model().load_weights(path)


def _heap_reuse_file(path, items):
    """A legacy weights file whose layer_names is a variable-length list of `items`
    entries (16-byte descriptors: 3900 fill a compact attribute), every one patched
    to point at the same 256 KB global heap object."""
    big = "x" * (256 << 10)
    with h5py.File(path, "w") as f:  # v1 object headers: no checksums to patch
        h5_format.write_model_weights(f, weights_io.legacy_layers(_model()))
        f.attrs.create("big", big, dtype=h5py.string_dtype())
        f.attrs.create("layer_names", ["q"] * items, dtype=h5py.string_dtype())
    raw = bytearray(open(path, "rb").read())

    def descriptor(at):  # length, then a global heap id: collection address, index
        addr = struct.unpack("<Q", raw[at + 4:at + 12])[0]
        return 0 < addr < len(raw) - 4 and raw[addr:addr + 4] == b"GCOL"

    big_desc = [m.start() for m in re.finditer(re.escape(struct.pack("<I", len(big))), raw)
                if descriptor(m.start())]
    run = re.search(rb"(?:\x01\x00\x00\x00.{12}){%d}" % items, bytes(raw), re.DOTALL)
    assert big_desc and run, "the test could not find the vlen descriptors to patch"
    desc = bytes(raw[big_desc[0]:big_desc[0] + 16])
    raw[run.start():run.start() + 16 * items] = desc * items
    open(path, "wb").write(bytes(raw))
    return path


def test_variable_length_heap_reuse_is_refused_before_reading(tmp_path):
    path = _heap_reuse_file(str(tmp_path / "heap.h5"), 3900)
    with h5py.File(path, "r") as f:  # the patch worked: one item is the big string
        assert h5py.h5a.open(f.id, b"layer_names").shape == (3900,)
    with pytest.raises(ValueError, match="variable-length list of 3900 items") as e:
        _model().load_weights(path)
    assert path in str(e.value)


def test_attribute_bytes_read_are_budgeted(tmp_path, monkeypatch):
    path = str(tmp_path / "ok.h5")
    _model().save(path)
    monkeypatch.setattr(load_limits.LIMITS, "max_attr_read_bytes", 200)
    with pytest.raises(ValueError, match="max_attr_read_bytes") as e:
        kerasish.saving.load_model(path)
    assert path in str(e.value)
    monkeypatch.setattr(load_limits.LIMITS, "max_attr_read_bytes", 1 << 30)
    kerasish.saving.load_model(path)


def test_oversize_attribute_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    path = str(tmp_path / "bigattr.h5")
    model = _model()
    with h5py.File(path, "w", libver="latest") as f:  # dense storage: a 3 MiB attribute
        h5_format.write_model_file(f, kerasish.saving.serialization.model_config(model),
                                   weights_io.legacy_layers(model))
        f.attrs["padding"] = np.zeros(3 << 20, np.uint8)
    kerasish.saving.load_model(path)  # within the default limit
    monkeypatch.setattr(load_limits.LIMITS, "max_attr_bytes", 1 << 20)
    opened = []
    real = h5py.h5a.open

    def recording(loc, name, *args, **kwargs):
        opened.append(name)
        return real(loc, name, *args, **kwargs)

    monkeypatch.setattr(h5py.h5a, "open", recording)
    with pytest.raises(ValueError, match="max_attr_bytes") as e:
        kerasish.saving.load_model(path)
    assert path in str(e.value) and opened == []


def test_depth_limit_is_configurable(tmp_path, monkeypatch):
    path = str(tmp_path / "deep.weights.h5")
    _model().save_weights(path)
    with h5py.File(path, "a") as f:
        node = f["layers"]["dense"]
        for _ in range(6):
            node = node.create_group("g")
    monkeypatch.setattr(load_limits.LIMITS, "max_depth", 4)
    with pytest.raises(ValueError, match="max_depth"):
        _model().load_weights(path)
    assert h5_format.load_limits is load_limits


def test_vlen_lengths_are_read_from_the_object_header(tmp_path):
    """h5_header sums the lengths each stored item declares (what a read allocates),
    through continuation blocks; headers it cannot read answer None."""
    from kerasish.saving import h5_header

    path = str(tmp_path / "names.h5")
    with h5py.File(path, "w") as f:
        for i in range(40):  # enough attributes to need header continuation blocks
            f.attrs[f"pad{i}"] = np.arange(50)
        f.attrs.create("names", [f"layer_{i}" for i in range(240)], dtype=h5py.string_dtype())
        f.attrs.create("seqs", [np.arange(3, dtype="f4"), np.arange(5, dtype="f4")],
                       dtype=h5py.vlen_dtype("f4"))
        address = h5py.h5o.get_info(f.id).addr
    expected = sum(len(f"layer_{i}") for i in range(240))
    assert h5_header.vlen_attribute_bytes(path, address, "names") == expected
    assert h5_header.vlen_attribute_bytes(path, address, "seqs") == 8 * 4
    assert h5_header.vlen_attribute_bytes(path, address, "pad0") is None  # not vlen
    assert h5_header.vlen_attribute_bytes(path, address, "absent") is None
    assert h5_header.vlen_attribute_bytes(path, 10 ** 9, "names") is None  # outside
    latest = str(tmp_path / "latest.h5")
    with h5py.File(latest, "w", libver="latest") as f:  # version-2 header: not read here
        f.attrs.create("names", ["a", "b"], dtype=h5py.string_dtype())
        address = h5py.h5o.get_info(f.id).addr
    assert h5_header.vlen_attribute_bytes(latest, address, "names") is None


def test_many_layer_names_in_a_large_file_load(tmp_path):
    """A real file's long vlen name list (Keras writes layer_names that way) next to
    megabytes of weights is not refused: its stored lengths are small (the bound used
    to be items x file size: 240 layers in a 16 MB EfficientNet file were refused)."""
    model = kerasish.Sequential([kerasish.Input((4,))] + [
        kerasish.layers.Dense(4, name=f"d{i}") for i in range(239)] + [
        kerasish.layers.Dense(1 << 19, name="wide")])
    path = str(tmp_path / "many.h5")
    model.save_weights(path)
    with h5py.File(path, "a") as f:  # Keras 3's legacy writer stores these as vlen strings
        names = [n.decode() if isinstance(n, bytes) else n for n in f.attrs["layer_names"]]
        del f.attrs["layer_names"]
        f.attrs.create("layer_names", names, dtype=h5py.string_dtype())
    assert os.path.getsize(path) > 5 << 20  # 240 items x 5 MiB: over the 1 GiB budget
    kerasish.utils.clear_session()
    model.load_weights(path)
