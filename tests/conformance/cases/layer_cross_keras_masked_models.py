"""File crossing: masked models as .keras (Keras 3 records their masks as not_equal/any op
nodes fed to the next layer as mask=): Embedding(mask_zero=True) -> Dense ->
GlobalAveragePooling1D, and Masking -> LSTM."""

import os

import numpy as np

import kerasish as keras
from kerasish import layers

CROSSING = True
ids = keras.utils.pad_sequences([[3, 5, 7], [2, 9], [4, 4, 4, 1], [6]], maxlen=5,
                                padding="post")
seq = np.random.default_rng(21).standard_normal((3, 4, 2)).astype("float32")
seq[0, 2:] = 0.0
text_path = os.path.join(CROSSDIR, "text.keras")
seq_path = os.path.join(CROSSDIR, "seq.keras")
if PHASE == "save":
    rng = np.random.default_rng(22)
    inputs = keras.Input(shape=(5,), dtype="int32")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    x = layers.Dense(4, activation="relu")(x)
    text = keras.Model(inputs, layers.Dense(1)(layers.GlobalAveragePooling1D()(x)))
    text.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in text.get_weights()])
    text.save(text_path)
    masked = keras.Sequential([keras.Input((4, 2)), layers.Masking(), layers.LSTM(3)])
    masked.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                        for w in masked.get_weights()])
    masked.save(seq_path)
    RESULT = {"text": text.predict(ids, verbose=0), "seq": masked.predict(seq, verbose=0)}
else:
    text = keras.saving.load_model(text_path)
    masked = keras.saving.load_model(seq_path)
    RESULT = {"text": text.predict(ids, verbose=0), "seq": masked.predict(seq, verbose=0),
              "dtype": str(text.inputs[0].dtype), "weights": text.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
