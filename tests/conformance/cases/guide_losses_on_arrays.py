"""Every loss class the README lists, called on arrays (default reduction, sample_weight)."""

import numpy as np

import kerasish as keras

rng = np.random.default_rng(50)
y_true = rng.random((4, 3)).astype("float32")
y_pred = rng.random((4, 3)).astype("float32") * 0.9 + 0.05
sw = np.array([1.0, 0.5, 0.0, 2.0], "float32")
L = keras.losses
out = {}
for loss in (L.MeanSquaredError(), L.MeanAbsoluteError(), L.MeanAbsolutePercentageError(),
             L.MeanSquaredLogarithmicError(), L.Huber(delta=0.3), L.LogCosh(), L.Poisson(),
             L.KLDivergence(), L.Hinge(), L.SquaredHinge(), L.CategoricalHinge(),
             L.CosineSimilarity(), L.BinaryCrossentropy(), L.CategoricalCrossentropy()):
    name = type(loss).__name__
    out[name] = float(keras.ops.convert_to_numpy(loss(y_true, y_pred)))
    out[name + "_sw"] = float(keras.ops.convert_to_numpy(loss(y_true, y_pred, sample_weight=sw)))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}
