"""keras-io's text classification idiom: Embedding(mask_zero=True) then
GlobalAveragePooling1D, which averages only the unpadded steps (the mask passing through
a Dense); predictions and two epochs of training on padded sequences; and after Masking."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(20)
tokens = rng.integers(1, 30, size=(8, 7)).astype("int32")
tokens[:5, 4:] = 0
tokens[0, 1:] = 0
labels = rng.integers(0, 2, size=(8, 1)).astype("float32")

inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(30, 4, mask_zero=True)(inputs)
x = layers.Dense(5, activation="relu")(x)
x = layers.GlobalAveragePooling1D()(x)
outputs = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy")
before = model.predict(tokens, verbose=0)
history = model.fit(tokens, labels, batch_size=4, epochs=2, shuffle=False, verbose=0)

seq = rng.standard_normal((3, 5, 2)).astype("float32")
seq[1, 2:] = 0.0
masked = keras.Sequential([keras.Input((5, 2)), layers.Masking(),
                           layers.GlobalAveragePooling1D()])

RESULT = {"predict": before, "loss": history.history["loss"], "weights": model.get_weights(),
          "masking": masked.predict(seq, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
