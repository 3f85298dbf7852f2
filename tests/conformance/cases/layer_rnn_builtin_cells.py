"""keras.layers.RNN around the built-in cells (LSTMCell, GRUCell, SimpleRNNCell) and a
StackedRNNCells of them, with an Embedding mask: predictions, weights after two epochs,
weight paths, the RNN's config and cell.state_size."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(6)
tokens = rng.integers(1, 9, size=(8, 5)).astype("int32")
tokens[:3, 3:] = 0  # padding, masked by the Embedding
y = rng.standard_normal((8, 2)).astype("float32")

inputs = keras.Input(shape=(5,), dtype="int32")
x = layers.Embedding(9, 3, mask_zero=True)(inputs)
x = layers.RNN(layers.LSTMCell(4), return_sequences=True)(x)
stack = layers.RNN(layers.StackedRNNCells([layers.GRUCell(3), layers.SimpleRNNCell(2)]))
outputs = stack(x)
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict(tokens, verbose=0)
history = model.fit(tokens, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
config = stack.get_config()

RESULT = {
    "predict": before,
    "loss": history.history["loss"],
    "weights": model.get_weights(),
    "paths": [w.path for w in model.weights],
    "config_keys": sorted(config),
    "cell_classes": [c["class_name"] for c in config["cell"]["config"]["cells"]],
    "state_size": [layers.LSTMCell(4).state_size, layers.GRUCell(3).state_size],
    "params": model.count_params(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
