"""Keras's loss-named metrics: standalone on arrays (with sample weights), their configs,
and in compile(metrics=...) during fit and evaluate (objects and strings)."""

import numpy as np

import kerasish as keras
from kerasish import metrics

rng = np.random.default_rng(3)
probs = rng.uniform(0.05, 1.0, (6, 3)).astype("float32")
probs /= probs.sum(axis=1, keepdims=True)
onehot = np.eye(3, dtype="float32")[rng.integers(0, 3, 6)]
labels = onehot.argmax(axis=1)
pos = rng.uniform(0.1, 2.0, (6, 3)).astype("float32")
signs = np.where(rng.uniform(size=(6, 3)) > 0.5, 1.0, -1.0).astype("float32")
weights = np.array([1.0, 2.0, 0.0, 1.0, 0.5, 1.0], "float32")

cases = {
    "MeanAbsolutePercentageError": (metrics.MeanAbsolutePercentageError(), pos, probs),
    "MeanSquaredLogarithmicError": (metrics.MeanSquaredLogarithmicError(), pos, probs),
    "BinaryCrossentropy": (metrics.BinaryCrossentropy(), onehot, probs),
    "BinaryCrossentropy_logits": (metrics.BinaryCrossentropy(from_logits=True,
                                                             label_smoothing=0.1), onehot, pos),
    "CategoricalCrossentropy": (metrics.CategoricalCrossentropy(), onehot, probs),
    "SparseCategoricalCrossentropy": (metrics.SparseCategoricalCrossentropy(), labels, probs),
    "KLDivergence": (metrics.KLDivergence(), onehot, probs),
    "Poisson": (metrics.Poisson(), pos, probs),
    "LogCoshError": (metrics.LogCoshError(), pos, probs),
    "Hinge": (metrics.Hinge(), signs, pos),
    "SquaredHinge": (metrics.SquaredHinge(), signs, pos),
    "CategoricalHinge": (metrics.CategoricalHinge(), onehot, probs),
    "CosineSimilarity": (metrics.CosineSimilarity(), pos, probs),
}
RESULT = {}
for name, (m, y_true, y_pred) in cases.items():
    m.update_state(y_true, y_pred)
    plain = float(m.result())
    m.reset_state()
    m.update_state(y_true, y_pred, sample_weight=weights)
    config = {k: v for k, v in m.get_config().items() if k != "dtype"}
    RESULT[name] = {"value": plain, "weighted": float(m.result()), "config": config,
                    "name": m.name}

x = rng.standard_normal((16, 4)).astype("float32")
y = np.eye(3, dtype="float32")[rng.integers(0, 3, 16)]
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
model.set_weights([rng.standard_normal((4, 3)).astype("float32") * 0.5, np.zeros(3, "float32")])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy",
              metrics=[metrics.KLDivergence(), metrics.CategoricalHinge(),
                       metrics.CosineSimilarity(), "mape", "poisson", "msle"])
history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
RESULT["history"] = history.history
RESULT["evaluate"] = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)

sparse = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
sparse.set_weights(model.get_weights())
sparse.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
               metrics=[metrics.SparseCategoricalCrossentropy()])
RESULT["sparse_history"] = sparse.fit(x, y.argmax(axis=1), batch_size=8, epochs=1,
                                      shuffle=False, verbose=0).history
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
