"""Integer and bool Inputs (issue 34): the declared dtype is reported and saved as Keras
does, values are fed exactly (float32 below 2**24), larger ones refused by name."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


def _embedding_model(dtype):
    inputs = keras.Input(shape=(3,), dtype=dtype)
    emb = layers.Embedding(8, 2)
    model = keras.Model(inputs, layers.Flatten()(emb(inputs)))
    emb.set_weights([np.arange(16, dtype=np.float32).reshape(8, 2)])
    return model


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int16", "bool"])
def test_dtype_reported_and_round_tripped(dtype):
    inputs = keras.Input(shape=(3,), dtype=dtype)
    assert inputs.dtype == dtype
    model = keras.Model(inputs, layers.Dense(1)(inputs))
    assert model.get_config()["layers"][0]["config"]["dtype"] == dtype
    assert keras.Model.from_config(model.get_config()).inputs[0].dtype == dtype


def test_numpy_dtype_objects_named_as_keras():
    assert keras.Input(shape=(2,), dtype=np.int64).dtype == "int64"
    assert keras.Input(shape=(2,)).dtype == "float32"


def test_unsupported_dtype_refused_by_name():
    with pytest.raises(ValueError, match="InputLayer: expected dtype one of .*received "
                                         "dtype='string'"):
        keras.Input(shape=(2,), dtype="string")


def test_ids_fed_exactly():
    model = _embedding_model("int32")
    out = model.predict(np.array([[0, 7, 3]], np.int32), verbose=0)
    np.testing.assert_array_equal(out, [[0, 1, 14, 15, 6, 7]])


def test_float_data_truncated_like_keras():
    # Keras converts data to the Input's dtype: 2.9 -> 2
    model = _embedding_model("int32")
    out = model.predict(np.array([[2.9, 1.0, 0.2]], np.float32), verbose=0)
    np.testing.assert_array_equal(out, [[4, 5, 2, 3, 0, 1]])


@pytest.mark.parametrize("value", [2 ** 24, -(2 ** 24), 2 ** 31 - 1])
def test_ids_beyond_float32_exact_range_refused(value):
    model = _embedding_model("int64")
    with pytest.raises(ValueError, match=r"predict: input 0 of model .*expected int64 input "
                                         r"values in \(-2\*\*24, 2\*\*24\).*issue 36"):
        model.predict(np.array([[1, value, 2]], np.int64), verbose=0)


def test_largest_exact_value_accepted():
    inputs = keras.Input(shape=(1,), dtype="int32")
    model = keras.Model(inputs, layers.Dense(1, use_bias=False, kernel_initializer="ones")(inputs))
    out = model.predict(np.array([[2 ** 24 - 1]], np.int32), verbose=0)
    assert out[0, 0] == 2 ** 24 - 1
