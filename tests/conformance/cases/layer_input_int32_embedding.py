"""Keras's Embedding idiom: an int32 Input of token ids, Embedding, pooling, Dense; the
input's dtype, predictions, one epoch of training and the config round trip."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(1)
tokens = rng.integers(0, 20, size=(12, 6)).astype("int32")
labels = rng.integers(0, 2, size=(12, 1)).astype("float32")

inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(20, 4)(inputs)
x = layers.GlobalAveragePooling1D()(x)
outputs = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal((20, 4)).astype("float32") * 0.5,
                   rng.standard_normal((4, 1)).astype("float32"), np.zeros(1, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy")
before = model.predict(tokens, verbose=0)
history = model.fit(tokens, labels, batch_size=4, epochs=2, shuffle=False, verbose=0)
clone = keras.Model.from_config(model.get_config())

RESULT = {
    "input_dtype": str(model.inputs[0].dtype),
    "config_dtype": model.get_config()["layers"][0]["config"]["dtype"],
    "clone_dtype": str(clone.inputs[0].dtype),
    "predict": before,
    "loss": history.history["loss"],
    "weights": model.get_weights(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
