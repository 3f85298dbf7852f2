"""Issue 34: the saving hooks Keras 3 calls (save_assets/load_assets with the archive's
`assets/<inner path>/` folders, get_build_config/build_from_config) and metric functions
in compile (traced, saved by their registered name), with files crossing to real Keras."""

import os
import zipfile

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops
from tests.kerasish.keras3 import real_keras


class Vocab(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.vocab = ["a", "b"]

    def call(self, x):
        return x

    def save_assets(self, dir_path):
        os.makedirs(os.path.join(dir_path, "sub"))
        with open(os.path.join(dir_path, "sub", "vocab.txt"), "w") as f:
            f.write("\n".join(self.vocab))

    def load_assets(self, dir_path):
        with open(os.path.join(dir_path, "sub", "vocab.txt")) as f:
            self.vocab = f.read().split("\n")


class Holder(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = Vocab()

    def call(self, x):
        return self.inner(x)


def _model():
    inputs = keras.Input((3,))
    return keras.Model(inputs, Holder(name="holder")(Vocab(name="top")(inputs)))


def test_assets_are_stored_under_keras_paths_and_reloaded(tmp_path):
    model = _model()
    model.get_layer("top").vocab = ["x", "y", "z"]
    model.get_layer("holder").inner.vocab = ["inner"]
    path = str(tmp_path / "m.keras")
    model.save(path)
    names = zipfile.ZipFile(path).namelist()
    assert "assets/layers/top/sub/vocab.txt" in names
    assert "assets/layers/holder/inner/sub/vocab.txt" in names
    objects = {"Vocab": Vocab, "Holder": Holder}
    loaded = keras.saving.load_model(path, custom_objects=objects)
    assert loaded.get_layer("top").vocab == ["x", "y", "z"]
    assert loaded.get_layer("holder").inner.vocab == ["inner"]


def test_build_from_config_runs_once_and_the_call_does_not_build_again(tmp_path):
    built = []

    class Built(layers.Layer):
        def build(self, input_shape):
            built.append(tuple(input_shape))
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

        def call(self, x):
            return x * self.w

        def get_build_config(self):
            return {"input_shape": [None, 4]}

        def build_from_config(self, config):
            self.build(config["input_shape"])

    inputs = keras.Input((4,))
    model = keras.Model(inputs, Built(name="built")(inputs))
    built.clear()
    clone = keras.Model.from_config(model.get_config(), custom_objects={"Built": Built})
    assert built == [(None, 4)] and len(clone.weights) == 1


def test_metric_function_is_traced_and_named_like_keras(tmp_path):
    @keras.saving.register_keras_serializable(package="hooks_test")
    def max_error(y_true, y_pred):
        return ops.max(ops.abs(y_true - y_pred), axis=-1)

    model = keras.Sequential([keras.Input((2,)), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse", metrics=[max_error])
    x = np.random.default_rng(0).standard_normal((6, 2)).astype("float32")
    y = np.zeros((6, 2), "float32")
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    assert np.isclose(logs["max_error"], np.abs(pred).max(axis=-1).mean(), rtol=1e-5)
    path = str(tmp_path / "m.keras")
    model.save(path)
    again = keras.saving.load_model(path).evaluate(x, y, verbose=0, return_dict=True)
    assert np.isclose(again["max_error"], logs["max_error"])
    import json

    saved = json.loads(zipfile.ZipFile(path).read("config.json"))
    assert saved["compile_config"]["metrics"] == [  # Keras 3's form of a function
        {"module": "builtins", "class_name": "function", "config": "hooks_test>max_error",
         "registered_name": "function"}]
    real_keras().saving.load_model(path, compile=False)  # the file reads in Keras


def test_metric_function_with_integer_labels_is_refused_by_name():
    def hits(y_true, y_pred):
        return y_pred

    model = keras.Sequential([keras.Input((2,)), layers.Dense(3)])
    with pytest.raises(ValueError, match="metric function 'hits': integer labels"):
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                      metrics=[hits])
        model.fit(np.ones((2, 2), "float32"), np.zeros((2,), "int32"), verbose=0)
