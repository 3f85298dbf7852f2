"""The serialization guide's layer with a sublayer argument: get_config serializes it,
an overridden from_config deserializes it; used inside a functional model, the model
reloads from get_config and from .keras with the same predictions."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers


@keras.saving.register_keras_serializable(package="conf_from_config")
class CustomLayer(keras.layers.Layer):
    def __init__(self, sublayer, **kwargs):
        super().__init__(**kwargs)
        self.sublayer = sublayer

    def call(self, x):
        return self.sublayer(x)

    def get_config(self):
        base_config = super().get_config()
        config = {"sublayer": keras.saving.serialize_keras_object(self.sublayer)}
        return {**base_config, **config}

    @classmethod
    def from_config(cls, config):
        sublayer_config = config.pop("sublayer")
        sublayer = keras.saving.deserialize_keras_object(sublayer_config)
        return cls(sublayer, **config)


rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3)).astype("float32")
inputs = keras.Input((3,))
h = CustomLayer(layers.Dense(5, activation="relu"), name="custom")(inputs)
model = keras.Model(inputs, layers.Dense(2)(h))
model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])

clone = keras.Model.from_config(model.get_config())
clone.set_weights(model.get_weights())
path = os.path.join(globals().get("WORKDIR", "/tmp"), "from_config.keras")
model.save(path)
loaded = keras.saving.load_model(path)

RESULT = {
    "predict": model.predict(x, verbose=0),
    "clone": clone.predict(x, verbose=0),
    "loaded": loaded.predict(x, verbose=0),
    "loaded_layers": [type(layer).__name__ for layer in loaded.layers],
    "sublayer_units": loaded.get_layer("custom").sublayer.units,
    "params": loaded.count_params(),
}
