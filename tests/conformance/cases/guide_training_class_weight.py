"""fit(class_weight={0: 1., 1: 3.}) on an imbalanced classification problem."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(78)
x = rng.normal(size=(12, 3)).astype("float32")
y = (rng.random(12) < 0.25).astype("int64")
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
hist = model.fit(x, y, class_weight={0: 1.0, 1: 3.0}, epochs=2, batch_size=4, shuffle=False,
                 verbose=0)
RESULT = {"hist": hist.history, "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
