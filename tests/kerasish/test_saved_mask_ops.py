"""Loading Keras 3 configs that record masks as op nodes (issue 34): Masking's
not_equal/any and Embedding(mask_zero)'s not_equal entries, fed to the next layer as
kwargs["mask"], are skipped (kerasish computes those masks itself)."""

import json

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers

# Keras 3.15's Model(Input((5, 2)), LSTM(2)(Masking()(x))).get_config(), as it wrote it
KERAS_MASKED_CONFIG = json.loads(
    '{"name": "masked", "trainable": true, "layers": [{"module": "keras.layers", '
    '"class_name": "InputLayer", "config": {"batch_shape": [null, 5, 2], "dtype": "float32", '
    '"sparse": false, "ragged": false, "name": "seq", "optional": false}, "registered_name": '
    'null, "name": "seq", "inbound_nodes": []}, {"module": "keras.src.ops.numpy", '
    '"class_name": "NotEqual", "config": {"name": "not_equal"}, "registered_name": '
    '"NotEqual", "name": "not_equal", "inbound_nodes": [{"args": [{"class_name": '
    '"__keras_tensor__", "config": {"shape": [null, 5, 2], "dtype": "float32", '
    '"keras_history": ["seq", 0, 0]}}, 0.0], "kwargs": {}}]}, {"module": "keras.layers", '
    '"class_name": "Masking", "config": {"name": "masking", "trainable": true, "dtype": '
    '{"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, '
    '"registered_name": null}, "mask_value": 0.0}, "registered_name": null, "name": '
    '"masking", "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": '
    '{"shape": [null, 5, 2], "dtype": "float32", "keras_history": ["seq", 0, 0]}}], "kwargs":'
    ' {}}]}, {"module": "keras.src.ops.numpy", "class_name": "Any", "config": {"name": "any",'
    ' "axis": -1, "keepdims": false}, "registered_name": "Any", "name": "any", '
    '"inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": '
    '[null, 5, 2], "dtype": "bool", "keras_history": ["not_equal", 0, 0]}}], "kwargs": {}}]},'
    ' {"module": "keras.layers", "class_name": "LSTM", "config": {"name": "lstm", '
    '"trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": '
    '{"name": "float32"}, "registered_name": null}, "return_sequences": false, '
    '"return_state": false, "go_backwards": false, "stateful": false, "unroll": false, '
    '"zero_output_for_mask": false, "units": 2, "activation": "tanh", "recurrent_activation":'
    ' "sigmoid", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", '
    '"class_name": "GlorotUniform", "config": {"seed": null, "input_axes": null, '
    '"output_axes": null}, "registered_name": null}, "recurrent_initializer": {"module": '
    '"keras.initializers", "class_name": "Orthogonal", "config": {"seed": null, "gain": 1.0},'
    ' "registered_name": null}, "bias_initializer": {"module": "keras.initializers", '
    '"class_name": "Zeros", "config": {}, "registered_name": null}, "unit_forget_bias": true,'
    ' "kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null, '
    '"activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null, '
    '"bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "seed": null}, '
    '"registered_name": null, "build_config": {"input_shape": [null, 5, 2]}, "name": "lstm", '
    '"inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": '
    '[null, 5, 2], "dtype": "float32", "keras_history": ["masking", 0, 0]}}], "kwargs": '
    '{"training": false, "mask": {"class_name": "__keras_tensor__", "config": {"shape": '
    '[null, 5], "dtype": "bool", "keras_history": ["any", 0, 0]}}}}]}], "input_layers": '
    '["seq", 0, 0], "output_layers": ["lstm", 0, 0]}'
)


def test_recorded_mask_ops_skipped_and_the_mask_recomputed():
    loaded = keras.Model.from_config(KERAS_MASKED_CONFIG)
    assert [type(layer).__name__ for layer in loaded.layers] == ["InputLayer", "Masking", "LSTM"]
    inputs = keras.Input((5, 2))
    ours = keras.Model(inputs, layers.LSTM(2)(layers.Masking()(inputs)))
    ours.set_weights(loaded.get_weights())
    x = np.random.default_rng(0).standard_normal((3, 5, 2)).astype("float32")
    x[0, 2:] = 0.0
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), ours.predict(x, verbose=0))


def test_a_mask_from_a_model_input_is_still_refused():
    config = json.loads(json.dumps(KERAS_MASKED_CONFIG))
    lstm = next(e for e in config["layers"] if e["class_name"] == "LSTM")
    lstm["inbound_nodes"][0]["kwargs"]["mask"]["config"]["keras_history"] = ["seq", 0, 0]
    with pytest.raises(ValueError, match="tensor kwargs \\['mask'\\]"):
        keras.Model.from_config(config)
