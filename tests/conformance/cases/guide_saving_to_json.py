"""model.to_json() and models.model_from_json(): same architecture, same outputs with the weights."""

import json

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(59)
model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(4, activation="elu"),
                          layers.Dense(1, activation="sigmoid")])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
text = model.to_json()
parsed = json.loads(text)
again = keras.models.model_from_json(text)
again.set_weights(model.get_weights())
x = rng.normal(size=(4, 3)).astype("float32")
RESULT = {"class_name": parsed["class_name"], "keys": sorted(parsed),
          "layers": [l["class_name"] for l in parsed["config"]["layers"]],
          "pred": again.predict(x, verbose=0), "same": bool(np.allclose(again.predict(x, verbose=0),
                                                                       model.predict(x, verbose=0)))}
