"""kernel_/bias_/activity_regularizer (L1, L2, L1L2): model.losses and the trained weights."""

import numpy as np

import kerasish as keras
from kerasish import layers, regularizers

rng = np.random.default_rng(56)
model = keras.Sequential([
    keras.Input(shape=(4,)),
    layers.Dense(3, kernel_regularizer=regularizers.L2(0.01), bias_regularizer=regularizers.L1(0.02)),
    layers.Dense(2, kernel_regularizer=regularizers.L1L2(l1=0.01, l2=0.02),
                 activity_regularizer=regularizers.L2(0.05)),
])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
x = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 2)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "mse")
hist = model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
reg = regularizers.L1L2(l1=0.1, l2=0.2)
RESULT = {"loss": hist.history["loss"], "weights": model.get_weights(),
          "eval": model.evaluate(x, y, verbose=0),
          "value": float(keras.ops.convert_to_numpy(reg(np.array([[1.0, -2.0]], "float32")))),
          "config": reg.get_config(), "get": regularizers.get("l2").get_config()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
