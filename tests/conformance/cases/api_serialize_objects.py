"""keras.saving.serialize_keras_object / deserialize_keras_object of regularizers,
initializers and constraints, and registered custom objects round-tripping (a custom
regularizer and a custom layer using it, inside a model config)."""

import numpy as np

import kerasish as keras
from kerasish import layers


@keras.saving.register_keras_serializable(package="api34")
class Scaled(keras.regularizers.Regularizer):
    """An L2 penalty under its own name (l1/l2 attributes: kerasish's fused penalty)."""

    def __init__(self, factor=0.1):
        self.factor = factor
        self.l1, self.l2 = 0.0, factor

    def __call__(self, x):
        return self.factor * keras.ops.sum(keras.ops.square(x))

    def get_config(self):
        return {"factor": self.factor}


@keras.saving.register_keras_serializable(package="api34")
class Offset(layers.Layer):
    def __init__(self, offset=1.0, **kwargs):
        super().__init__(**kwargs)
        self.offset = offset

    def call(self, x):
        return x + self.offset

    def get_config(self):
        return {**super().get_config(), "offset": self.offset}


objects = {
    "l1": keras.regularizers.L1(0.01),
    "l2": keras.regularizers.L2(0.02),
    "l1l2": keras.regularizers.L1L2(l1=0.01, l2=0.03),
    "glorot": keras.initializers.GlorotUniform(seed=3),
    "constant": keras.initializers.Constant(0.5),
    "normal": keras.initializers.RandomNormal(mean=0.0, stddev=0.2, seed=1),
    "max_norm": keras.constraints.MaxNorm(max_value=2.0, axis=0),
    "non_neg": keras.constraints.NonNeg(),
    "unit_norm": keras.constraints.UnitNorm(axis=1),
    "custom": Scaled(0.3),
}
RESULT = {}
for key, obj in objects.items():
    data = keras.saving.serialize_keras_object(obj)
    back = keras.saving.deserialize_keras_object(data)
    RESULT[key] = {"class_name": data["class_name"], "module": data["module"],
                   "registered_name": data["registered_name"], "config": data["config"],
                   "revived": type(back).__name__, "revived_config": back.get_config()}

inputs = keras.Input((3,))
x = layers.Dense(2, kernel_regularizer=Scaled(0.3),
                 kernel_constraint=keras.constraints.MaxNorm(2.0))(inputs)
model = keras.Model(inputs, Offset(2.0)(x))
data = keras.saving.serialize_keras_object(model)
revived = keras.saving.deserialize_keras_object(data)
revived.set_weights([np.ones((3, 2), "float32"), np.zeros(2, "float32")])
dense = revived.layers[1]
RESULT["model"] = {
    "layers": [type(layer).__name__ for layer in revived.layers],
    "regularizer": [type(dense.kernel_regularizer).__name__, dense.kernel_regularizer.factor],
    "constraint": dense.kernel_constraint.get_config(),
    "offset": revived.layers[2].offset,
    "predict": revived.predict(np.ones((2, 3), "float32"), verbose=0),
}
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
