"""BatchNormalization: moving statistics after fit steps, inference output, momentum/epsilon."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(37)
model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3),
                          layers.BatchNormalization(momentum=0.9, epsilon=1e-3), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") if "moving_variance" not in w.path
                   else np.ones(w.shape, "float32") for w in model.weights])
x = rng.normal(size=(8, 4)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.05), "mse")
hist = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
bn = model.layers[1]
RESULT = {"loss": hist.history["loss"], "bn": bn.get_weights(), "pred": model.predict(x, verbose=0),
          "trainable": len(bn.trainable_weights), "non_trainable": len(bn.non_trainable_weights)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
