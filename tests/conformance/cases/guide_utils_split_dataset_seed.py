"""utils.split_dataset sizes on arrays (no shuffle) and set_random_seed determinism of initializers."""

import numpy as np

import kerasish as keras
from kerasish import layers

x = np.arange(20, dtype="float32").reshape(10, 2)
left, right = keras.utils.split_dataset(x, left_size=0.7, shuffle=False)
sizes = [len(list(left)), len(list(right))]
keras.utils.set_random_seed(3)
a = layers.Dense(3)
a.build((None, 2))
keras.utils.set_random_seed(3)
b = layers.Dense(3)
b.build((None, 2))
RESULT = {"sizes": sizes,
          "repeatable": bool(np.array_equal(a.get_weights()[0], b.get_weights()[0]))}
