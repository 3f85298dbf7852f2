"""Metric objects: update_state over two batches, result, reset_state."""

import numpy as np

import kerasish as keras

rng = np.random.default_rng(54)
M = keras.metrics
yb = rng.integers(0, 2, (6, 1)).astype("float32")
pb = rng.random((6, 1)).astype("float32")
yc = rng.integers(0, 4, 6)
pc = rng.random((6, 4)).astype("float32")
pc /= pc.sum(-1, keepdims=True)
yr = rng.normal(size=(6, 2)).astype("float32")
pr = rng.normal(size=(6, 2)).astype("float32")
out = {}
cases = [
    (M.BinaryAccuracy(), yb, pb), (M.Precision(), yb, pb), (M.Recall(), yb, pb),
    (M.AUC(num_thresholds=50), yb, pb), (M.AUC(curve="PR", num_thresholds=50), yb, pb),
    (M.TruePositives(), yb, pb), (M.FalsePositives(), yb, pb), (M.TrueNegatives(), yb, pb),
    (M.FalseNegatives(), yb, pb),
    (M.SparseCategoricalAccuracy(), yc, pc), (M.SparseTopKCategoricalAccuracy(k=2), yc, pc),
    (M.CategoricalAccuracy(), keras.utils.to_categorical(yc, 4), pc),
    (M.TopKCategoricalAccuracy(k=2), keras.utils.to_categorical(yc, 4), pc),
    (M.MeanAbsoluteError(), yr, pr), (M.MeanSquaredError(), yr, pr), (M.RootMeanSquaredError(), yr, pr),
]
for i, (metric, y, p) in enumerate(cases):
    metric.update_state(y[:3], p[:3])
    metric.update_state(y[3:], p[3:])
    out[f"{i}_{type(metric).__name__}"] = float(metric.result())
    metric.reset_state()
    out[f"{i}_reset"] = float(metric.result())
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-6}
