"""Cross-entropies: from_logits, label_smoothing, sparse labels, reduction='none' and 'sum'."""

import numpy as np

import kerasish as keras

rng = np.random.default_rng(51)
logits = rng.normal(size=(5, 4)).astype("float32")
labels = rng.integers(0, 4, 5)
onehot = keras.utils.to_categorical(labels, 4)
probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
L = keras.losses
bin_true = rng.integers(0, 2, (5, 1)).astype("float32")
bin_logit = rng.normal(size=(5, 1)).astype("float32")
RESULT = {
    "scce_logits": keras.ops.convert_to_numpy(L.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)),
    "scce_probs": keras.ops.convert_to_numpy(L.SparseCategoricalCrossentropy()(labels, probs)),
    "cce_smooth": keras.ops.convert_to_numpy(L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(onehot, logits)),
    "cce_none": keras.ops.convert_to_numpy(L.CategoricalCrossentropy(reduction="none")(onehot, probs)),
    "cce_sum": keras.ops.convert_to_numpy(L.CategoricalCrossentropy(reduction="sum")(onehot, probs)),
    "bce_logits": keras.ops.convert_to_numpy(L.BinaryCrossentropy(from_logits=True)(bin_true, bin_logit)),
    "bce_smooth": keras.ops.convert_to_numpy(L.BinaryCrossentropy(label_smoothing=0.2)(bin_true, 1 / (1 + np.exp(-bin_logit)))),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}
