"""utils.to_categorical (num_classes inferred or given) and utils.normalize (order)."""

import numpy as np

import kerasish as keras

x = np.array([[3.0, 4.0], [1.0, -1.0], [0.0, 2.0]], "float32")
RESULT = {
    "onehot": keras.utils.to_categorical([0, 2, 1, 2]),
    "onehot_n": keras.utils.to_categorical(np.array([[1], [0]]), num_classes=4),
    "normalize": keras.utils.normalize(x),
    "normalize_l1": keras.utils.normalize(x, order=1),
}
