"""Named inputs fed as a dict; the model's input_names order and the outputs as a list."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(10)
num = keras.Input(shape=(3,), name="numeric")
cat = keras.Input(shape=(2,), name="onehot")
x = layers.Concatenate()([num, cat])
x = layers.Dense(4, activation="relu")(x)
out = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model({"numeric": num, "onehot": cat}, out)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
data = {"numeric": rng.normal(size=(8, 3)).astype("float32"),
        "onehot": rng.integers(0, 2, (8, 2)).astype("float32")}
y = rng.integers(0, 2, (8, 1)).astype("float32")
model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy", metrics=["accuracy"])
hist = model.fit(data, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "pred": model.predict(data, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
