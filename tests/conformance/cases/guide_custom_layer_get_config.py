"""A custom layer's get_config, rebuilt by from_config and inside a model via custom_objects."""

import numpy as np

import kerasish as keras
from kerasish import layers


class Scale(layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor})
        return config


layer = Scale(3.0, name="scale")
clone = Scale.from_config(layer.get_config())
inp = keras.Input(shape=(3,))
model = keras.Model(inp, layers.Dense(2)(Scale(0.5)(inp)))
rng = np.random.default_rng(15)
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
config = model.get_config()
classes = [layer["class_name"] for layer in config["layers"]]  # from_config may consume config
rebuilt = keras.Model.from_config(config, custom_objects={"Scale": Scale})
rebuilt.set_weights(model.get_weights())
x = rng.normal(size=(4, 3)).astype("float32")
RESULT = {"factor": clone.factor, "name": clone.name, "pred": model.predict(x, verbose=0),
          "rebuilt": rebuilt.predict(x, verbose=0),
          "classes": classes}
