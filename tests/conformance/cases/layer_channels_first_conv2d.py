"""A channels_first CNN: Conv2D, BatchNormalization(axis=1), MaxPooling2D,
AveragePooling2D and GlobalAveragePooling2D with data_format="channels_first"; output
shapes, predictions, two epochs of training, weights and configs."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(16)
model = keras.Sequential([
    keras.Input((2, 9, 8)),
    layers.Conv2D(4, 3, padding="same", activation="relu", data_format="channels_first"),
    layers.BatchNormalization(axis=1),
    layers.MaxPooling2D(2, data_format="channels_first"),
    layers.Conv2D(3, 2, data_format="channels_first"),
    layers.AveragePooling2D(2, padding="same", data_format="channels_first"),
    layers.GlobalAveragePooling2D(data_format="channels_first"),
    layers.Dense(2),
])
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5 if k != 5 else
                   np.abs(rng.standard_normal(w.shape)).astype("float32") + 0.5
                   for k, w in enumerate(model.get_weights())])
x = rng.standard_normal((6, 2, 9, 8)).astype("float32")
y = rng.standard_normal((6, 2)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict(x, verbose=0)
history = model.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "shapes": [list(layer.output.shape) for layer in model.layers],
    "predict": before,
    "loss": history.history["loss"],
    "weights": model.get_weights(),
    "data_formats": [layer.get_config().get("data_format") for layer in model.layers],
    "bn_axis": model.layers[1].get_config()["axis"],
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
