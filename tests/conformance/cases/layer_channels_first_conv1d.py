"""channels_first 1-D layers: Conv1D, MaxPooling1D, AveragePooling1D,
GlobalMaxPooling1D/GlobalAveragePooling1D and BatchNormalization(axis=1) on (batch,
channels, steps); predictions and a training step."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(17)
inputs = keras.Input((3, 10))
x = layers.Conv1D(4, 3, padding="same", activation="tanh", data_format="channels_first")(inputs)
x = layers.BatchNormalization(axis=1)(x)
x = layers.MaxPooling1D(2, data_format="channels_first")(x)
x = layers.Conv1D(5, 2, strides=2, data_format="channels_first")(x)
a = layers.GlobalMaxPooling1D(data_format="channels_first")(x)
b = layers.GlobalAveragePooling1D(data_format="channels_first")(
    layers.AveragePooling1D(2, padding="same", data_format="channels_first")(x))
outputs = layers.Dense(1)(layers.Concatenate()([a, b]))
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5 if k != 5 else
                   np.abs(rng.standard_normal(w.shape)).astype("float32") + 0.5
                   for k, w in enumerate(model.get_weights())])
data = rng.standard_normal((4, 3, 10)).astype("float32")
y = rng.standard_normal((4, 1)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(data, verbose=0)
loss = model.train_on_batch(data, y)

RESULT = {"predict": before, "loss": float(loss), "weights": model.get_weights(),
          "shape": list(x.shape)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
