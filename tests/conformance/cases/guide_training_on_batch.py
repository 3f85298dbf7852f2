"""train_on_batch, test_on_batch and predict_on_batch (return_dict too)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(79)
x = rng.normal(size=(6, 3)).astype("float32")
y = rng.integers(0, 3, 6)
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(3)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
t1 = model.train_on_batch(x, y)
t2 = model.train_on_batch(x, y, return_dict=True)
e = model.test_on_batch(x, y)
e2 = model.test_on_batch(x, y, return_dict=True)
p = model.predict_on_batch(x)
RESULT = {"t1": t1, "t2": t2, "e": e, "e2": e2, "p": keras.ops.convert_to_numpy(p)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
