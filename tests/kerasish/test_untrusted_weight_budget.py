"""Issue 40 item 5: a file whose config declares weights the file does not hold
(Input(4) -> Dense(2**26) -> Dense(4) in a few-KB `.keras`: 1 GiB of kernel) is
refused while the model is built, before the big weight is allocated (tracemalloc's
peak stays small), naming the file; the total limit (a fraction of the available
memory by default) also caps model_from_json."""

import json
import tracemalloc
import zipfile

import h5py
import pytest

import kerasish
from kerasish.saving import load_limits


def _model(units=8):
    layers = kerasish.layers
    return kerasish.Sequential([layers.Input((4,)), layers.Dense(units, name="wide"),
                                layers.Dense(4, name="out")], name="m")


def _widen(config, units):
    for entry in config["config"]["layers"]:
        if entry["config"].get("name") == "wide":
            entry["config"]["units"] = units
    return config


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_keras_archive_declaring_weights_it_lacks_is_refused_before_allocating(tmp_path):
    small, crafted = str(tmp_path / "small.keras"), str(tmp_path / "crafted.keras")
    _model().save(small)
    with zipfile.ZipFile(small) as src, zipfile.ZipFile(crafted, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "config.json":
                data = json.dumps(_widen(json.loads(data), 2 ** 26)).encode()
            dst.writestr(name, data)
    errors = []

    def load():
        try:
            kerasish.saving.load_model(crafted)
        except ValueError as e:
            errors.append(str(e))

    peak = _peak(load)
    assert errors and crafted in errors[0] and "holds" in errors[0], errors
    assert peak < 64 << 20, f"{peak:,} bytes allocated before the refusal"
    assert kerasish.saving.load_model(small).count_params() == _model().count_params()


def test_legacy_h5_declaring_weights_it_lacks_is_refused(tmp_path):
    path = str(tmp_path / "crafted.h5")
    _model().save(path)
    with h5py.File(path, "a") as f:
        config = json.loads(f.attrs["model_config"])
        f.attrs["model_config"] = json.dumps(_widen(config, 2 ** 26)).encode()
    with pytest.raises(ValueError, match="holds") as e:
        kerasish.saving.load_model(path)
    assert path in str(e.value)


def test_total_limit_caps_model_from_json(monkeypatch):
    text = _model(1000).to_json()
    monkeypatch.setattr(load_limits.LIMITS, "max_weight_bytes", 10_000)
    with pytest.raises(ValueError, match="max_weight_bytes"):
        kerasish.models.model_from_json(text)
    monkeypatch.setattr(load_limits.LIMITS, "max_weight_bytes", None)  # memory fraction
    limit, why = load_limits.weight_limit()
    assert limit > 0 and "available memory" in why
    assert kerasish.models.model_from_json(text).count_params() == _model(1000).count_params()


def test_no_budget_outside_loading():
    assert _model(4096).count_params() > 4096 * 4  # building by hand is never capped
