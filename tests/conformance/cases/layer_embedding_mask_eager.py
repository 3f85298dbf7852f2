"""keras-io's masking and padding guide, eager part: Embedding(mask_zero=True) called on
an array returns the vectors with `_keras_mask` attached; compute_mask(inputs) and
Masking's mask, as Keras computes them."""

import numpy as np

import kerasish as keras
from kerasish import layers

raw_inputs = [[711, 632, 71], [73, 8, 3215, 55, 927], [83, 91, 1, 645, 1253, 927]]
padded = keras.utils.pad_sequences(raw_inputs, padding="post")

embedding = layers.Embedding(input_dim=5000, output_dim=4, mask_zero=True)
masked_output = embedding(padded)
no_mask = layers.Embedding(input_dim=10, output_dim=2)
no_mask(np.array([[1, 2]]))

samples = np.random.default_rng(10).standard_normal((3, 6, 2)).astype("float32")
samples[0, 3:] = 0.0
samples[2, 5] = 0.0
masking = layers.Masking()
masked_samples = masking(samples)

RESULT = {
    "mask": np.asarray(masked_output._keras_mask),
    "compute_mask": np.asarray(embedding.compute_mask(padded)),
    "compute_mask_keyword": np.asarray(embedding.compute_mask(padded, mask=None)),
    "no_mask": str(no_mask.compute_mask(np.array([[1, 2]]))),
    "masking_mask": np.asarray(masked_samples._keras_mask),
    "masking_values": np.asarray(masked_samples),
}
