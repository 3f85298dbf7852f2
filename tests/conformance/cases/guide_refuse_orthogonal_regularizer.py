"""kernel_regularizer=regularizers.OrthogonalRegularizer(factor=0.01)."""

import numpy as np

import kerasish as keras
from kerasish import layers, regularizers

model = keras.Sequential([keras.Input(shape=(3,)),
                          layers.Dense(2, kernel_regularizer=regularizers.OrthogonalRegularizer(0.01))])
model.set_weights([np.ones((3, 2), "float32"), np.zeros(2, "float32")])
model.compile("sgd", "mse")
RESULT = {"eval": model.evaluate(np.ones((2, 3), "float32"), np.zeros((2, 2), "float32"), verbose=0)}
