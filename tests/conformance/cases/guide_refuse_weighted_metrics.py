"""compile(weighted_metrics=[...]) with fit(sample_weight=...)."""

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([np.ones((2, 1), "float32"), np.zeros(1, "float32")])
model.compile("sgd", "mse", weighted_metrics=["mae"])
h = model.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"),
              sample_weight=np.array([1, 2, 3, 4], "float32"), epochs=1, verbose=0)
RESULT = {"hist": h.history}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
