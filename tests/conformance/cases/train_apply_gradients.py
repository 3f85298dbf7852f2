"""Optimizers outside fit: the variables of two models in one Adam (built on both lists),
stepped with apply_gradients(zip(grads, vars)) and apply(grads) (grads matching the
built variables), then SGD with momentum via apply(grads, vars) on one model."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(0)
a = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
b = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
for model in (a, b):
    model.set_weights([rng.standard_normal(w.shape).astype("float32")
                       for w in model.get_weights()])
variables = a.trainable_weights + b.trainable_weights
grads = [[rng.standard_normal(v.shape).astype("float32") for v in variables]
         for _ in range(3)]

adam = keras.optimizers.Adam(learning_rate=0.05)
adam.build(variables)
adam.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in grads[0]], variables))
adam.apply([keras.ops.convert_to_tensor(g) for g in grads[1]])
after_adam = [keras.ops.convert_to_numpy(v) for v in variables]

sgd = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
sgd.apply([keras.ops.convert_to_tensor(g) for g in grads[2][:2]], a.trainable_weights)
sgd.apply([keras.ops.convert_to_tensor(g) for g in grads[1][:2]], a.trainable_weights)

RESULT = {
    "after_adam": after_adam,
    "a_weights": a.get_weights(),
    "b_weights": b.get_weights(),
    "adam_iterations": int(keras.ops.convert_to_numpy(adam.iterations)),
    "sgd_iterations": int(keras.ops.convert_to_numpy(sgd.iterations)),
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
