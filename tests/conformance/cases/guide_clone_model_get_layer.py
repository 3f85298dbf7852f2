"""models.clone_model (fresh weights, same architecture), get_layer by name and index, shapes."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(86)
inp = keras.Input(shape=(3,), name="features")
h = layers.Dense(4, activation="relu", name="hidden")(inp)
out = layers.Dense(2, name="logits")(h)
model = keras.Model(inp, out)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
clone = keras.models.clone_model(model)
clone.set_weights(model.get_weights())
x = rng.normal(size=(4, 3)).astype("float32")
RESULT = {"clone": clone.predict(x, verbose=0), "names": [l.name for l in clone.layers],
          "by_name": model.get_layer("hidden").units, "by_index": model.get_layer(index=2).name,
          "input_shape": list(model.input_shape), "output_shape": list(model.output_shape),
          "in_name": model.inputs[0].name if hasattr(model.inputs[0], "name") else None,
          "different_objects": clone.get_layer("hidden") is not model.get_layer("hidden")}
