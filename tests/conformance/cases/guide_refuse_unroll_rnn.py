"""SimpleRNN(unroll=True) on a short fixed-length sequence."""

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(3, 2)), layers.SimpleRNN(2, unroll=True)])
model.set_weights([np.full(w.shape, 0.1, "float32") for w in model.get_weights()])
RESULT = {"out": model.predict(np.ones((1, 3, 2), "float32"), verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
