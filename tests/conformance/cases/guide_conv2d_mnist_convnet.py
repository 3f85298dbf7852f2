"""keras-io's simple MNIST convnet, tiny: Conv2D/MaxPooling2D/Flatten/Dropout/Dense, fit."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(31)
model = keras.Sequential([
    keras.Input(shape=(8, 8, 1)),
    layers.Conv2D(4, kernel_size=(3, 3), activation="relu"),
    layers.MaxPooling2D(pool_size=(2, 2)),
    layers.Conv2D(4, kernel_size=(2, 2), activation="relu"),
    layers.Flatten(),
    layers.Dropout(0.0),
    layers.Dense(3, activation="softmax"),
])
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
x = rng.random((6, 8, 8, 1)).astype("float32")
y = keras.utils.to_categorical(rng.integers(0, 3, 6), 3)
model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(0.1),
              metrics=["accuracy"])
hist = model.fit(x, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "pred": model.predict(x, verbose=0), "params": model.count_params(),
          "shapes": [list(l.output.shape)[1:] for l in model.layers]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
