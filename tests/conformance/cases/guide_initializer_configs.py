"""Initializers' get_config (Keras 3.15's keys) and initializers.get by name."""

import kerasish as keras

I = keras.initializers
RESULT = {cls.__name__: cls(seed=1).get_config() for cls in (I.GlorotUniform, I.GlorotNormal, I.HeNormal,
                                                             I.HeUniform, I.RandomNormal, I.RandomUniform)}
RESULT["get"] = type(I.get("glorot_uniform")).__name__
RESULT["constant"] = I.Constant(0.5).get_config()
