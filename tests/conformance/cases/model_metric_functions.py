"""Metric functions in compile (`metrics=[fn]`, Keras's MeanMetricWrapper): beside a
regression loss on targets shaped like the output, and beside a sparse loss, where the
function receives the integer labels."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


def max_abs_error(y_true, y_pred):
    return ops.max(ops.abs(y_true - y_pred), axis=-1)


def hit(y_true, y_pred):
    predicted = ops.cast(ops.argmax(y_pred, axis=-1), "float32")
    return ops.cast(ops.equal(predicted, ops.reshape(y_true, (-1,))), "float32")


rng = np.random.default_rng(0)
x = rng.standard_normal((12, 4)).astype("float32")

regression = keras.Sequential([keras.Input((4,)), layers.Dense(2)])
regression.set_weights([rng.standard_normal(w.shape).astype("float32")
                        for w in regression.get_weights()])
regression.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=[max_abs_error])
y = rng.standard_normal((12, 2)).astype("float32")
reg_history = regression.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

classifier = keras.Sequential([keras.Input((4,)), layers.Dense(3)])
classifier.set_weights([rng.standard_normal(w.shape).astype("float32")
                        for w in classifier.get_weights()])
classifier.compile(optimizer=keras.optimizers.SGD(0.05),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   metrics=[hit, "accuracy"])
labels = rng.integers(0, 3, 12)
cls_history = classifier.fit(x, labels, batch_size=4, epochs=2, shuffle=False, verbose=0)

RESULT = {
    "regression": reg_history.history,
    "regression_evaluate": regression.evaluate(x, y, verbose=0, return_dict=True),
    "classifier": cls_history.history,
    "classifier_evaluate": classifier.evaluate(x, labels, verbose=0, return_dict=True),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
