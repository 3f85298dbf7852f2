"""A toy ResNet block: Conv2D with a skip connection through layers.add."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(8)
inputs = keras.Input(shape=(6, 6, 2), name="img")
x = layers.Conv2D(4, 3, activation="relu")(inputs)
block_1 = layers.MaxPooling2D(2)(x)
x = layers.Conv2D(4, 3, activation="relu", padding="same")(block_1)
block_2 = layers.add([x, block_1])
x = layers.GlobalAveragePooling2D()(block_2)
outputs = layers.Dense(3)(x)
model = keras.Model(inputs, outputs, name="toy_resnet")
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
x_data = rng.normal(size=(4, 6, 6, 2)).astype("float32")
y = rng.integers(0, 3, 4)
model.compile(keras.optimizers.SGD(0.05),
              keras.losses.SparseCategoricalCrossentropy(from_logits=True))
loss = model.train_on_batch(x_data, y)
RESULT = {"pred": model.predict(x_data, verbose=0), "loss": loss,
          "params": model.count_params(), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
