"""Feature extraction: a Model whose outputs are every layer's output of another model."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(7)
base = keras.Sequential([keras.Input(shape=(6,)), layers.Dense(5, activation="relu"),
                         layers.Dense(4, activation="tanh"), layers.Dense(2)])
base.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in base.get_weights()])
extractor = keras.Model(inputs=base.inputs, outputs=[layer.output for layer in base.layers])
x = rng.normal(size=(3, 6)).astype("float32")
features = extractor(x)
mid = keras.Model(base.inputs, base.layers[1].output)
RESULT = {"features": [keras.ops.convert_to_numpy(f) for f in features], "mid": mid.predict(x, verbose=0),
          "n": len(features)}
