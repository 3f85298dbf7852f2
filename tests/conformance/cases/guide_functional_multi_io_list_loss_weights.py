"""Two outputs with a list of losses, loss_weights and metrics per output."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(6)
inp = keras.Input(shape=(5,))
h = layers.Dense(4, activation="relu")(inp)
reg = layers.Dense(1, name="reg")(h)
cls = layers.Dense(2, activation="softmax", name="cls")(h)
model = keras.Model(inp, [reg, cls])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.05), loss=["mse", "sparse_categorical_crossentropy"],
              loss_weights=[0.5, 2.0], metrics=[["mae"], ["accuracy"]])
x = rng.normal(size=(12, 5)).astype("float32")
y1 = rng.normal(size=(12, 1)).astype("float32")
y2 = rng.integers(0, 2, 12)
hist = model.fit(x, [y1, y2], batch_size=6, epochs=2, shuffle=False, verbose=0)
ev = model.evaluate(x, [y1, y2], verbose=0, return_dict=True)
RESULT = {"keys": sorted(hist.history), "hist": hist.history, "eval": ev,
          "pred": model.predict(x, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
