"""Small parts of Keras's surface: keras.device, backend.backend(), utils.plot_model
without pydot (Keras's ImportError) and its DOT graph."""

import sys

import numpy as np
import pytest

import kerasish as keras
from kerasish.utils.model_visualization import model_to_dot_source


def test_device_scope_sets_and_restores():
    before = keras.config.get_device()
    with keras.device("cpu:0") as kind:
        assert kind == "cpu" and keras.config.get_device() == "cpu"
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        assert model.predict(np.zeros((1, 2), np.float32), verbose=0).shape == (1, 1)
    assert keras.config.get_device() == before
    with pytest.raises(ValueError, match=r"keras.device: expected 'cpu', 'cpu:0', 'gpu'"):
        with keras.device("tpu"):
            pass
    with pytest.raises(ValueError, match=r"keras.device: expected a string"):
        with keras.device(0):
            pass


def test_backend_name():
    assert keras.backend.backend() == "numpy"
    assert keras.backend.floatx() == "float32" and keras.backend.epsilon() == 1e-7


def test_plot_model_without_pydot_raises_keras_import_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pydot", None)
    # outside IPython (an earlier test may have imported it): Keras prints there instead
    monkeypatch.delitem(sys.modules, "IPython.core.magics.namespace", raising=False)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\)"):
        keras.utils.plot_model(model, to_file=str(tmp_path / "m.png"))
    assert not (tmp_path / "m.png").exists()


def test_dot_source_has_every_layer_and_call():
    inputs = keras.Input((3,), name="x")
    a = keras.layers.Dense(2, name="a")(inputs)
    b = keras.layers.Dense(2, name="b")(inputs)
    model = keras.Model(inputs, keras.layers.Add(name="add")([a, b]))
    dot = model_to_dot_source(model, show_shapes=True)
    for edge in ('"x" -> "a"', '"x" -> "b"', '"a" -> "add"', '"b" -> "add"'):
        assert edge in dot
    assert "(None, 3)|(None, 2)" in dot
    seq = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d1"),
                            keras.layers.Dense(1, name="d2")])
    assert '"d1" -> "d2"' in model_to_dot_source(seq)
