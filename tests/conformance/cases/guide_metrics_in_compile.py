"""compile(metrics=[...]) strings and objects: Keras 3's log names in history and evaluate."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(55)
x = rng.normal(size=(12, 4)).astype("float32")
y = rng.integers(0, 2, (12, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "binary_crossentropy",
              metrics=["accuracy", keras.metrics.AUC(name="auc", num_thresholds=20),
                       keras.metrics.Precision(), "mae", "mse"])
hist = model.fit(x, y, epochs=2, batch_size=4, validation_split=0.25, shuffle=False, verbose=0)
ev = model.evaluate(x, y, verbose=0, return_dict=True)
RESULT = {"keys": sorted(hist.history), "hist": hist.history, "eval": ev,
          "names": model.metrics_names}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
