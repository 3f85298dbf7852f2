"""Dropout, SpatialDropout2D, GaussianNoise, GaussianDropout: identity at inference (predict and call)."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(85)
x = rng.normal(size=(2, 4, 4, 3)).astype("float32")
c = keras.ops.convert_to_numpy
model = keras.Sequential([keras.Input(shape=(4, 4, 3)), layers.Dropout(0.5), layers.SpatialDropout2D(0.3),
                          layers.GaussianNoise(0.2), layers.GaussianDropout(0.2)])
RESULT = {"infer": model.predict(x, verbose=0), "call": c(model(x)),
          "rate": layers.Dropout(0.5).get_config()["rate"]}
