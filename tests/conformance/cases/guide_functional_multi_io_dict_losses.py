"""The guide's ticket model, small: three inputs, two outputs, dict losses and loss_weights."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(5)
title = keras.Input(shape=(6,), name="title")
body = keras.Input(shape=(6,), name="body")
tags = keras.Input(shape=(4,), name="tags")
x = layers.concatenate([layers.Dense(4)(title), layers.Dense(4)(body), tags])
priority = layers.Dense(1, name="priority")(x)
department = layers.Dense(3, name="department")(x)
model = keras.Model(inputs=[title, body, tags], outputs={"priority": priority,
                                                         "department": department})
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.05),
              loss={"priority": keras.losses.BinaryCrossentropy(from_logits=True),
                    "department": keras.losses.CategoricalCrossentropy(from_logits=True)},
              loss_weights={"priority": 1.0, "department": 0.2})
n = 8
data = {"title": rng.normal(size=(n, 6)).astype("float32"),
        "body": rng.normal(size=(n, 6)).astype("float32"),
        "tags": rng.integers(0, 2, (n, 4)).astype("float32")}
targets = {"priority": rng.random((n, 1)).astype("float32"),
           "department": keras.utils.to_categorical(rng.integers(0, 3, n), 3)}
hist = model.fit(data, targets, epochs=2, batch_size=4, shuffle=False, verbose=0)
pred = model.predict(data, verbose=0)
RESULT = {"keys": sorted(hist.history), "hist": hist.history, "priority": pred["priority"],
          "department": pred["department"]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
