"""The masking guide: Embedding(mask_zero=True) -> LSTM on padded sequences; the mask itself."""

import numpy as np

import kerasish as keras
from kerasish import layers

raw = [[711, 632, 71], [73, 8, 3215, 55, 927], [83, 91, 1, 645, 1253, 927]]
padded = keras.utils.pad_sequences(raw, padding="post")
ids = np.minimum(padded, 49).astype("int32")
embedding = layers.Embedding(input_dim=50, output_dim=4, mask_zero=True)
mask = embedding.compute_mask(ids)
rng = np.random.default_rng(21)
model = keras.Sequential([keras.Input(shape=(None,), dtype="int32"),
                          layers.Embedding(input_dim=50, output_dim=4, mask_zero=True),
                          layers.LSTM(3)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
RESULT = {"padded": padded, "mask": keras.ops.convert_to_numpy(mask), "out": model.predict(ids, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
