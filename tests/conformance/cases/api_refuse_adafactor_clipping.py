"""Adafactor with gradient clipping (clipnorm): Keras clips, kerasish refuses it by name."""

import numpy as np

import kerasish as keras

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adafactor(learning_rate=0.1, clipnorm=1.0), loss="mse")
history = model.fit(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"), verbose=0)
RESULT = {"history_keys": sorted(history.history)}
