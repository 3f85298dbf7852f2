"""saving.serialize_keras_object / deserialize_keras_object for layers, losses, optimizers, activations."""

import kerasish as keras
from kerasish import layers

ser = keras.saving.serialize_keras_object
de = keras.saving.deserialize_keras_object
dense = layers.Dense(3, activation="relu", name="d")
out = {}
for name, obj in (("dense", dense), ("loss", keras.losses.Huber(delta=0.5)),
                  ("opt", keras.optimizers.SGD(0.3, momentum=0.5)),
                  ("l2", keras.regularizers.L2(0.1)), ("maxnorm", keras.constraints.MaxNorm(2.0))):
    config = ser(obj)
    out[name + "_keys"] = sorted(config)
    out[name + "_class"] = config["class_name"]
    back = de(config)
    out[name + "_back"] = type(back).__name__
out["activation"] = ser(keras.activations.relu)
out["dense_units"] = de(ser(dense)).units
RESULT = out
