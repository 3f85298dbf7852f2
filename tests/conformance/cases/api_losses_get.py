"""keras.losses.get: string aliases give Keras's per-sample functions, class names give
instances, dicts configured instances; values on arrays match."""

import numpy as np

import kerasish as keras

rng = np.random.default_rng(0)
y_true = rng.uniform(0.1, 1.0, (4, 3)).astype("float32")
y_pred = rng.uniform(0.1, 1.0, (4, 3)).astype("float32")
names = ["mae", "MAE", "mse", "mape", "msle", "kld", "kl_divergence", "poisson", "huber",
         "log_cosh", "hinge", "squared_hinge", "categorical_hinge", "mean_absolute_error",
         "binary_crossentropy", "categorical_crossentropy"]
RESULT = {}
for name in names:
    fn = keras.losses.get(name)
    RESULT[name] = {"is_loss_instance": isinstance(fn, keras.losses.Loss),
                    "values": np.asarray(fn(y_true, y_pred))}
for name in ["MeanAbsoluteError", "Huber", "KLDivergence"]:
    obj = keras.losses.get(name)
    RESULT[name] = {"class": type(obj).__name__, "value": float(obj(y_true, y_pred))}
configured = keras.losses.get({"class_name": "Huber", "config": {"delta": 0.5}})
RESULT["configured"] = float(configured(y_true, y_pred))
RESULT["none"] = keras.losses.get(None) is None
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
