"""Saving hooks as Keras 3 calls them in .keras saving and loading: get_build_config /
build_from_config, save_assets / load_assets (files in the archive), a layer overriding
from_config inside a functional model, and a registered metric function in compile."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers, ops

calls = []


@keras.saving.register_keras_serializable(package="conf_hooks")
class Scaled(layers.Layer):
    def __init__(self, factor, units=2, **kwargs):
        super().__init__(**kwargs)
        self.factor, self.units = factor, units
        self.dense = layers.Dense(units)

    def call(self, x):
        return self.dense(x) * self.factor

    def get_config(self):
        config = super().get_config()
        config.update({"factor_config": {"value": self.factor}, "units": self.units})
        return config

    @classmethod
    def from_config(cls, config):
        calls.append("from_config")
        factor = config.pop("factor_config")["value"]
        return cls(factor, **config)


@keras.saving.register_keras_serializable(package="conf_hooks")
class WithAssets(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.vocab = ["a", "b"]

    def build(self, input_shape):
        calls.append(f"build {list(input_shape)}")
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w

    def save_assets(self, dir_path):
        calls.append("save_assets")
        with open(os.path.join(dir_path, "vocab.txt"), "w") as f:
            f.write("\n".join(self.vocab + ["saved"]))

    def load_assets(self, dir_path):
        calls.append("load_assets")
        with open(os.path.join(dir_path, "vocab.txt")) as f:
            self.vocab = f.read().split("\n")

    def get_build_config(self):
        calls.append("get_build_config")
        return {"input_shape": [None, 3], "extra": 1}

    def build_from_config(self, config):
        calls.append(f"build_from_config {config['extra']}")
        self.build(config["input_shape"])


@keras.saving.register_keras_serializable(package="conf_hooks")
def abs_error(y_true, y_pred):
    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


rng = np.random.default_rng(0)
x = rng.standard_normal((6, 3)).astype("float32")
y = rng.standard_normal((6, 2)).astype("float32")
inputs = keras.Input((3,))
out = Scaled(2.0, name="scaled")(WithAssets(name="with_assets")(inputs))
model = keras.Model(inputs, out)
model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=[abs_error])
model.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)

calls.clear()
clone = keras.Model.from_config(model.get_config())
from_config_calls = list(calls)
clone.set_weights(model.get_weights())

path = os.path.join(globals().get("WORKDIR", "/tmp"), "hooks.keras")
calls.clear()
model.save(path)
save_calls = list(calls)
calls.clear()
loaded = keras.saving.load_model(path)
load_calls = list(calls)

RESULT = {
    "from_config_calls": [c for c in from_config_calls if c.startswith(("from_config", "build"))],
    "clone_predict": clone.predict(x, verbose=0),
    "save_calls": save_calls,
    "load_calls": load_calls,
    "vocab": loaded.get_layer("with_assets").vocab,
    "loaded_predict": loaded.predict(x, verbose=0),
    "loaded_evaluate": loaded.evaluate(x, y, verbose=0, return_dict=True),
    "evaluate": model.evaluate(x, y, verbose=0, return_dict=True),
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}

if __name__ == "__main__":
    print(RESULT["from_config_calls"], RESULT["save_calls"], RESULT["load_calls"])
