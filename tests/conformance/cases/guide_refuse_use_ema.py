"""An optimizer with use_ema=True (exponential moving average of the weights)."""

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([np.ones((2, 1), "float32"), np.zeros(1, "float32")])
model.compile(keras.optimizers.Adam(0.01, use_ema=True, ema_momentum=0.9), "mse")
model.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), epochs=1, verbose=0)
RESULT = {"weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
