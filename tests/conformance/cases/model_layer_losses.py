"""`layer.losses` and `model.losses` (the layers-and-models guide): add_loss values of the
last call, nested layers included, reset by each call, plus the regularizers' penalties."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class ActivityRegularizationLayer(layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class OuterLayer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


class OuterLayerWithKernelRegularizer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(4, kernel_regularizer=keras.regularizers.l2(1e-3))

    def call(self, inputs):
        return self.dense(inputs)


rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3)).astype("float32")

layer = OuterLayer()
never_called = len(layer.losses)
_ = layer(x)
first = [float(keras.ops.convert_to_numpy(v)) for v in layer.losses]
_ = layer(x * 3.0)
second = [float(keras.ops.convert_to_numpy(v)) for v in layer.losses]  # reset at each call: one value again

reg = OuterLayerWithKernelRegularizer()
_ = reg(x)
reg.dense.set_weights([rng.standard_normal((3, 4)).astype("float32"), np.zeros(4, "float32")])
reg_losses = [float(keras.ops.convert_to_numpy(v)) for v in reg.losses]

inputs = keras.Input((3,))
h = layers.Dense(4, kernel_regularizer=keras.regularizers.l1(1e-2))(inputs)
h = OuterLayer()(h)
model = keras.Model(inputs, layers.Dense(1)(h))
model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])
symbolic_only = [float(keras.ops.convert_to_numpy(v)) for v in model.losses]  # no call on data yet: the penalty only
_ = model(x)
after_call = [float(keras.ops.convert_to_numpy(v)) for v in model.losses]

RESULT = {
    "never_called": never_called,
    "first": first,
    "second": second,
    "regularizer": reg_losses,
    "model_before_call": symbolic_only,
    "model_after_call": after_call,
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
