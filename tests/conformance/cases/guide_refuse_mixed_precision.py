"""A layer with dtype="mixed_float16" (the mixed precision guide's per-layer policy)."""

import numpy as np

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, dtype="mixed_float16")])
RESULT = {"compute": model.layers[0].compute_dtype, "variable": model.layers[0].variable_dtype,
          "out": str(model.predict(np.ones((1, 3), "float32"), verbose=0).dtype)}
