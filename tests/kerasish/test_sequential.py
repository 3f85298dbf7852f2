import json

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, models


def reference_cnn():
    model = models.Sequential()
    model.add(layers.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)))
    model.add(layers.MaxPooling2D((2, 2)))
    model.add(layers.Conv2D(64, (3, 3), activation="relu"))
    model.add(layers.MaxPooling2D((2, 2)))
    model.add(layers.Flatten())
    model.add(layers.Dense(64, activation="relu"))
    model.add(layers.Dense(10, activation="softmax"))
    return model


def test_reference_cnn_shapes_params_and_names():
    model = reference_cnn()
    assert model.built
    assert [layer.name for layer in model.layers] == [
        "conv2d", "max_pooling2d", "conv2d_1", "max_pooling2d_1", "flatten", "dense", "dense_1"]
    assert [layer.output_shape for layer in model.layers] == [
        (None, 26, 26, 32), (None, 13, 13, 32), (None, 11, 11, 64), (None, 5, 5, 64),
        (None, 1600), (None, 64), (None, 10)]
    assert model.count_params() == 320 + 18496 + 102464 + 650
    assert model.layers[0].kernel.shape == (3, 3, 1, 32)  # HWIO
    assert model.layers[0].kernel.path == "sequential/conv2d/kernel"
    np.testing.assert_array_equal(model.layers[0].bias.numpy(), 0)


def test_glorot_uniform_limits():
    model = models.Sequential([keras.Input((300,)), layers.Dense(100)])
    w = model.layers[0].kernel.numpy()
    limit = np.sqrt(6 / 400)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.9 * limit


def test_summary_table(capsys):
    model = reference_cnn()
    model.summary()
    out = capsys.readouterr().out
    assert out.startswith('Model: "sequential"\n┏')
    assert "│ conv2d (Conv2D)                 │ (None, 26, 26, 32)     │           320 │" in out
    assert " Total params: 121,930 (476.29 KB)" in out
    assert "Planned buffers on cpu" in out


def test_list_constructor_input_pop_and_config_roundtrip():
    model = models.Sequential([keras.Input(shape=(6,)), layers.Dense(4, activation="relu"),
                               layers.Dropout(0.25), layers.Dense(2)])
    assert len(model.layers) == 3
    config = model.get_config()
    assert config["layers"][0]["class_name"] == "InputLayer"
    assert config["build_input_shape"] == [None, 6]
    clone = models.Sequential.from_config(json.loads(json.dumps(config)))
    assert [type(layer).__name__ for layer in clone.layers] == ["Dense", "Dropout", "Dense"]
    clone.set_weights(model.get_weights())
    for a, b in zip(model.get_weights(), clone.get_weights()):
        np.testing.assert_array_equal(a, b)
    popped = model.pop()
    assert popped.units == 2 and model.output_shape == (None, 4)


def test_incompatible_shapes_name_the_layer():
    model = models.Sequential([keras.Input((4, 4, 1)), layers.Conv2D(2, 3)])
    with pytest.raises(ValueError, match="Conv2D conv2d_1: "):
        model.add(layers.Conv2D(2, 5))
    with pytest.raises(ValueError, match="conv2d_2: expected input of rank 4"):
        models.Sequential([keras.Input((4,)), layers.Flatten(), layers.Conv2D(1, 1)])


def test_set_weights_errors():
    model = models.Sequential([keras.Input((3,)), layers.Dense(2)])
    with pytest.raises(ValueError, match="expected 2 arrays; received 1"):
        model.set_weights([np.zeros((3, 2))])
    with pytest.raises(ValueError, match=r"expects shape \(3, 2\); received \(2, 2\)"):
        model.set_weights([np.zeros((2, 2)), np.zeros(2)])


def test_add_rejects_non_layers_and_duplicates():
    model = models.Sequential()
    with pytest.raises(TypeError, match="instance of class Layer"):
        model.add("dense")
    model.add(layers.Dense(2, name="d"))
    with pytest.raises(ValueError, match="unique names"):
        model.add(layers.Dense(2, name="d"))


def test_calling_the_model_gives_inference_outputs():
    model = models.Sequential([keras.Input((5,)), layers.Dense(4, activation="relu"),
                               layers.Dropout(0.5), layers.Dense(3, activation="softmax")])
    x = np.random.default_rng(0).random((7, 5), dtype=np.float32)
    out = model(x)  # uncompiled, as in Keras
    assert isinstance(out, np.ndarray) and out.shape == (7, 3) and out.dtype == np.float32
    w1, b1, w2, b2 = [w.astype(np.float64) for w in model.get_weights()]
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2  # dropout is off outside training
    expected = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(out, expected / expected.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(model(x, training=False), out)
    # batch 1: the same outputs up to rounding (BLAS may take another kernel for one row)
    np.testing.assert_allclose(model(x[:1]), out[:1], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="training=True"):
        model(x, training=True)
    with pytest.raises(ValueError, match=r"expected.*\(None, 5\)|5"):
        model(np.zeros((2, 6), np.float32))


def test_get_layer_by_name_and_index():
    model = reference_cnn()
    assert model.get_layer("dense") is model.layers[5]
    assert model.get_layer(index=0) is model.layers[0]
    assert model.get_layer(index=-1).name == "dense_1"
    with pytest.raises(ValueError, match=r"no such layer: nope.*'conv2d'"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="only has 7 layers"):
        model.get_layer(index=7)
    with pytest.raises(ValueError, match="either a layer name or a layer index"):
        model.get_layer()
    with pytest.raises(ValueError, match="not both"):
        model.get_layer("dense", 0)
    with pytest.raises(TypeError, match="expected an int index"):
        model.get_layer(index="0")


def test_clear_session_restarts_names_and_keras_paths_resolve(tmp_path):
    first = models.Sequential([keras.Input((3,)), layers.Dense(2)])
    keras.backend.clear_session()
    assert layers.Dense(2).name == "dense"  # names start over, as in Keras
    keras.utils.clear_session()
    second = models.Sequential([keras.Input((3,)), layers.Dense(2)])
    assert first.layers[0].name == second.layers[0].name == "dense"
    first.save(tmp_path / "m.h5")  # keras.saving.load_model is Keras 3's spelling
    loaded = keras.saving.load_model(tmp_path / "m.h5")
    np.testing.assert_array_equal(loaded.get_weights()[0], first.get_weights()[0])
