"""keras.models.clone_model (new weights, same architecture), serialize_keras_object /
deserialize_keras_object in Keras 3's dict form (checked against real Keras 3 when it
is installed, both directions), and register_keras_serializable(package=, name=)."""

import json

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers
from tests.kerasish.keras3 import real_keras
from tests.kerasish.saving_helpers import _cnn, _x
from tests.kerasish.test_functional_interop import build, data, max_diff

ser, deser = keras.saving.serialize_keras_object, keras.saving.deserialize_keras_object


# -- clone_model -----------------------------------------------------------------------

def test_clone_sequential_has_new_weights_and_same_architecture():
    model, x = _cnn(), _x(4)
    clone = keras.models.clone_model(model)
    assert type(clone) is keras.Sequential and clone.name == model.name
    assert clone.get_config() == model.get_config()
    assert all(a is not b for a, b in zip(clone.layers, model.layers))
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    assert not all(np.array_equal(a, b) for a, b in zip(clone.get_weights(), model.get_weights()))
    clone.set_weights(model.get_weights())
    assert np.array_equal(clone.predict(x, verbose=0), model.predict(x, verbose=0))
    before = model.get_weights()
    clone.set_weights([w * 0 for w in clone.get_weights()])
    assert max_diff(model.get_weights(), before) == 0  # nothing is shared


def test_clone_functional_with_shared_layer_and_nested_model():
    model, (x, y) = build(keras), data()
    clone = keras.models.clone_model(model)
    assert [l.name for l in clone.layers] == [l.name for l in model.layers]
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    assert clone.get_layer("inner") is not model.get_layer("inner")
    assert clone.get_config() == model.get_config()
    clone.set_weights(model.get_weights())
    assert max_diff(clone.predict(x, verbose=0), model.predict(x, verbose=0)) == 0
    before = model.get_weights()
    clone.compile("adam", ["sparse_categorical_crossentropy", "mse"])
    clone.fit(x, y, epochs=1, verbose=0)
    assert max_diff(model.get_weights(), before) == 0


def test_clone_function_input_tensors_and_recursion():
    model = build(keras)
    shared = keras.models.clone_model(
        model, clone_function=lambda l: l if l.name == "shared" else
        type(l).from_config(l.get_config()))
    assert shared.get_layer("shared") is model.get_layer("shared")
    assert shared.get_layer("proj") is not model.get_layer("proj")
    a, b = keras.Input((4,), name="a2"), keras.Input((3,), name="b2")
    rebuilt = keras.models.clone_model(model, input_tensors=[a, b])
    assert rebuilt.inputs == [a, b]
    seen = []
    keras.models.clone_model(model, recursive=True, clone_function=lambda l: (
        seen.append(l.name), type(l).from_config(l.get_config()))[1])
    assert "d6" in seen and "inner" not in seen
    seq = _cnn()
    t = keras.Input((7, 6, 2))
    functional = keras.models.clone_model(seq, input_tensors=t)
    assert isinstance(functional, keras.models.Functional) and functional.inputs == [t]
    with pytest.raises(TypeError, match="must return a Layer"):
        keras.models.clone_model(seq, clone_function=lambda l: 3)
    with pytest.raises(ValueError, match="2 input"):
        keras.models.clone_model(model, input_tensors=[a])
    with pytest.raises(TypeError, match="Sequential or Functional"):
        keras.models.clone_model(layers.Dense(2))


# -- serialize / deserialize -----------------------------------------------------------

def _objects(lib):
    return {
        "dense": lib.layers.Dense(3, activation="relu", name="d"),
        "conv": lib.layers.Conv2D(4, 3, padding="same", name="c"),
        "he": lib.initializers.HeNormal(seed=3),
        "adam": lib.optimizers.Adam(0.01),
        "sgd": lib.optimizers.SGD(0.1, momentum=0.9),
        "scce": lib.losses.SparseCategoricalCrossentropy(from_logits=True),
        "mse": lib.losses.MeanSquaredError(),
        "acc": lib.metrics.SparseCategoricalAccuracy(),
        "decay": lib.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9),
    }


@pytest.mark.parametrize("key", list(_objects(keras)))
def test_serialize_round_trip(key):
    obj = _objects(keras)[key]
    config = ser(obj)
    assert set(config) >= {"module", "class_name", "config", "registered_name"}
    back = deser(config)
    assert type(back) is type(obj) and back.get_config() == obj.get_config()


def _same_form(ours, theirs, key):
    ours, theirs = json.loads(json.dumps(ours)), json.loads(json.dumps(theirs))  # as saved
    assert ours["class_name"] == theirs["class_name"], key
    assert ours["registered_name"] == theirs["registered_name"] or key in ("adam", "sgd")
    if key not in ("adam", "sgd"):  # Keras's torch backend names its own optimizer module
        assert ours["module"] == theirs["module"], key
    common = set(ours["config"]) & set(theirs["config"])
    assert common, key
    for k in common:
        a, b = ours["config"][k], theirs["config"][k]
        if isinstance(b, dict) and "module" in b:
            assert isinstance(a, dict) and a["class_name"] == b["class_name"], (key, k)
        elif isinstance(b, float):
            assert a == pytest.approx(b, rel=1e-6), (key, k)
        elif k != "name" or key in ("dense", "conv"):
            assert a == b, (key, k)


def test_serialized_form_matches_keras_both_ways():
    real = real_keras()
    ours, theirs = _objects(keras), _objects(real)
    for key in ours:
        mine, keras_form = ser(ours[key]), real.saving.serialize_keras_object(theirs[key])
        _same_form(mine, keras_form, key)
        # Keras reads kerasish's dict, kerasish reads Keras's.
        from_ours = real.saving.deserialize_keras_object(mine)
        assert type(from_ours).__name__ == type(theirs[key]).__name__
        from_theirs = deser(keras_form)
        assert type(from_theirs).__name__ == type(ours[key]).__name__
        _same_form(ser(from_theirs), keras_form, key)
    assert ser(keras.activations.relu) == real.saving.serialize_keras_object(real.activations.relu)
    assert deser(ser(keras.activations.relu)) is keras.activations.relu
    built = keras.Sequential([keras.Input((5,)), layers.Dense(3, name="d")]).layers[0]
    k_built = real.Sequential([real.Input((5,)), real.layers.Dense(3, name="d")]).layers[0]
    k_config = real.saving.serialize_keras_object(k_built)["build_config"]
    assert ser(built)["build_config"] == json.loads(json.dumps(k_config))


def test_models_serialize_in_keras_form():
    model = build(keras)
    config = ser(model)
    assert (config["module"], config["class_name"], config["registered_name"]) == \
        ("keras.src.models.functional", "Functional", "Functional")
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    back = deser(config)
    assert back.get_config() == model.get_config() and back.optimizer is not None
    x, _ = data()
    back.set_weights(model.get_weights())
    assert max_diff(back.predict(x, verbose=0), model.predict(x, verbose=0)) == 0
    seq = ser(_cnn())
    assert (seq["module"], seq["class_name"], seq["compile_config"]) == ("keras", "Sequential", {})


def test_special_values_and_refusals():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(deser(ser(arr)), arr) and deser(ser(arr)).dtype == np.float32
    assert deser(ser(b"abc")) == b"abc" and deser(ser(np.int64(3))) == 3
    assert deser({"a": [1, "relu"]}) == {"a": [1, "relu"]}
    with pytest.raises(ValueError, match="lambda"):
        ser(lambda x: x)
    with pytest.raises(ValueError, match="lambda"):
        deser({"class_name": "__lambda__", "config": {"value": "AAAA"}}, safe_mode=False)
    with pytest.raises(ValueError, match="dtype"):
        deser({"class_name": "__numpy__", "config": {"value": [1], "dtype": "object"}})
    with pytest.raises(ValueError, match=r"unknown class 'system' \(module 'os'\)"):
        deser({"module": "os", "class_name": "system", "config": {}, "registered_name": None})
    with pytest.raises(ValueError, match="unknown class 'Nadamax'.*optimizers are"):
        deser({"module": "keras.optimizers", "class_name": "Nadamax", "config": {}})
    with pytest.raises(ValueError, match="unknown function 'evil'"):
        deser({"module": "builtins", "class_name": "function", "config": "evil",
               "registered_name": "function"})


class Shift(layers.Layer):
    def __init__(self, by=1.0, **kwargs):
        super().__init__(**kwargs)
        self.by = by

    def get_config(self):
        return {**super().get_config(), "by": self.by}

    def forward(self, y, x, training):
        np.add(x, np.float32(self.by), out=y)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            dx[...] = dy


def test_register_with_name_deserializes():
    registry = keras.saving.get_custom_objects()
    try:
        keras.saving.register_keras_serializable(package="pkg", name="Moved")(Shift)
        config = ser(Shift(2.5, name="s"))
        assert (config["class_name"], config["registered_name"]) == ("Shift", "pkg>Moved")
        layer = deser(config)
        assert type(layer) is Shift and layer.by == 2.5
        model = keras.Sequential([keras.Input((2,)), Shift(0.5)])
        again = keras.Sequential.from_config(model.get_config())  # failed before (issue 18)
        assert type(again.layers[0]) is Shift
        assert keras.saving.get_registered_name(Shift) == "pkg>Moved"

        @keras.saving.register_keras_serializable(package="pkg", name="sq")
        def squared(x):
            return x * x

        fn = ser(squared)
        assert fn == {"module": "builtins", "class_name": "function", "config": "pkg>sq",
                      "registered_name": "function"}
        assert deser(fn) is squared
        with pytest.raises(ValueError, match="name"):
            keras.saving.register_keras_serializable(package="pkg", name="a>b")(Shift)
    finally:
        registry.pop("pkg>Moved", None)
        registry.pop("pkg>sq", None)


def test_regularizers_and_constraints_round_trip_in_keras_form():
    for obj in (keras.regularizers.L1(0.01), keras.regularizers.L1L2(0.01, 0.02),
                keras.constraints.MaxNorm(2.0, axis=0), keras.constraints.NonNeg()):
        config = ser(obj)
        assert config["module"] in ("keras.regularizers", "keras.constraints")
        assert config["registered_name"] is None
        back = deser(config)
        assert type(back) is type(obj) and back.get_config() == obj.get_config()
    with pytest.raises(ValueError, match=r"unknown class 'L3' \(module 'keras.regularizers'\)"):
        deser({"module": "keras.regularizers", "class_name": "L3", "config": {},
               "registered_name": None})
    with pytest.raises(ValueError, match="GlorotUniform"):  # a real input_axes is refused
        deser({"module": "keras.initializers", "class_name": "GlorotUniform",
               "config": {"seed": None, "input_axes": [0], "output_axes": None},
               "registered_name": None})
