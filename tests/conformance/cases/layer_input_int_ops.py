"""An int32 Input flowing to keras.ops inside a custom layer: one_hot, take, a comparison
and cast (the values the plan receives are the ids exactly)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class IdFeatures(layers.Layer):
    def call(self, ids):
        one_hot = ops.one_hot(ids, 6)
        present = ops.cast(ops.not_equal(ids, 0), "float32")
        looked_up = ops.take(ops.arange(6) * 0.5, ids)
        return ops.concatenate([ops.sum(one_hot, axis=1),
                                ops.sum(present, axis=1, keepdims=True),
                                ops.sum(looked_up, axis=1, keepdims=True)], axis=-1)


inputs = keras.Input(shape=(5,), dtype="int32")
model = keras.Model(inputs, IdFeatures()(inputs))
ids = np.random.default_rng(19).integers(0, 6, size=(4, 5)).astype("int32")

RESULT = {"features": model.predict(ids, verbose=0), "dtype": str(model.inputs[0].dtype)}
