"""A stateful LSTM (state kept across batches) with a fixed batch size."""

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(3, 2), batch_size=2), layers.LSTM(2, stateful=True)])
model.set_weights([np.full(w.shape, 0.1, "float32") for w in model.get_weights()])
x = np.ones((2, 3, 2), "float32")
first = model.predict(x, verbose=0)
second = model.predict(x, verbose=0)
RESULT = {"first": first, "second": second}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
