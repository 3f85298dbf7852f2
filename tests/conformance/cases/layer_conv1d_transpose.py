"""layers.Conv1DTranspose (valid and same padding, strides 1 and 2, relu and linear) in
a small 1-D decoder: output shapes, predictions, a training step, kernel shape, config."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(15)
inputs = keras.Input((5, 3))
a = layers.Conv1DTranspose(4, 3, strides=2, padding="same", activation="relu")(inputs)
b = layers.Conv1DTranspose(2, 2, padding="valid")(a)
model = keras.Model(inputs, b)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
x = rng.standard_normal((4, 5, 3)).astype("float32")
y = rng.standard_normal((4, 11, 2)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(x, verbose=0)
loss = model.train_on_batch(x, y)
config = model.layers[1].get_config()

RESULT = {
    "predict": before,
    "loss": float(loss),
    "weights": model.get_weights(),
    "kernel_shapes": [list(w.shape) for w in model.get_weights()],
    "shapes": [list(model.layers[1].output.shape), list(model.output.shape)],
    "config": {k: config[k] for k in ("filters", "kernel_size", "strides", "padding",
                                      "dilation_rate", "output_padding", "activation")},
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
