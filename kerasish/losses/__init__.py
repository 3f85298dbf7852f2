"""Losses: Keras classes, strings and functions, computed by kernels_numba loss ops.

`get` is Keras's: a function name or alias ('mae', 'kld', ...) gives the per-sample
function (keras.losses.mean_absolute_error), a class name or class an instance, a
{"class_name", "config"} dict the configured instance, a callable itself. `resolve`
is what compile(loss=...) needs: always a Loss the engine runs (a function named as
Keras's becomes its class). The functions (`mean_absolute_error(y_true, y_pred)`)
return per-sample values of host arrays; Loss objects called on arrays return Keras's
reduced value.
"""

from kerasish.losses.base import REDUCTIONS, Loss  # noqa: F401
from kerasish.losses.crossentropy import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    SparseCategoricalCrossentropy,
)
from kerasish.losses.regression import (
    CategoricalHinge,
    CosineSimilarity,
    Hinge,
    Huber,
    KLDivergence,
    LogCosh,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    MeanSquaredLogarithmicError,
    Poisson,
    SquaredHinge,
)

CLASSES = {cls.__name__: cls for cls in (
    SparseCategoricalCrossentropy, CategoricalCrossentropy, BinaryCrossentropy,
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError, Huber, LogCosh, Poisson, KLDivergence, Hinge, SquaredHinge,
    CategoricalHinge, CosineSimilarity)}
# Keras 3's function names and aliases (keras.losses.ALL_OBJECTS_DICT).
STRINGS = {
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy, "bce": BinaryCrossentropy,
    "BCE": BinaryCrossentropy,
    "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "MSE": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError,
    "MAE": MeanAbsoluteError,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError,
    "kl_divergence": KLDivergence, "kld": KLDivergence, "KLD": KLDivergence,
    "poisson": Poisson, "huber": Huber, "log_cosh": LogCosh, "hinge": Hinge,
    "squared_hinge": SquaredHinge, "categorical_hinge": CategoricalHinge,
    "cosine_similarity": CosineSimilarity,
}


def get(identifier):
    """Keras's losses.get: None, a per-sample function, or a Loss instance."""
    if identifier is None:
        return None
    if isinstance(identifier, str) and identifier in STRINGS:
        return FUNCTIONS[identifier]
    if isinstance(identifier, dict) or isinstance(identifier, str):
        return resolve(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")


def resolve(identifier):
    """A Loss from a Loss instance, a class/function name, or a Keras config dict."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        cls = CLASSES.get(identifier.get("class_name"))
        if cls is not None:
            return cls.from_config(identifier.get("config", {}))
        if identifier.get("class_name") == "function":  # a serialized keras.losses function
            identifier = identifier.get("config")
        else:
            identifier = identifier.get("class_name")
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier) and getattr(identifier, "__name__", None) in STRINGS:
        identifier = identifier.__name__
    if isinstance(identifier, str):
        cls = STRINGS.get(identifier) or CLASSES.get(identifier)
        if cls is not None:
            return cls()
    raise ValueError(f"Unknown loss: {identifier!r}. Valid losses: "
                     f"{sorted(set(STRINGS) | set(CLASSES))}")


def serialize(loss):
    return {"module": "keras.losses", "class_name": type(loss).__name__,
            "config": loss.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    if custom_objects and isinstance(config, dict) and \
            config.get("class_name") in custom_objects:
        return custom_objects[config["class_name"]].from_config(config.get("config", {}))
    return resolve(config)


# Keras's functions: per-sample values (shape y_pred.shape[:-1]) of host arrays.

def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    return SparseCategoricalCrossentropy(from_logits, ignore_class, axis=axis).per_sample(
        y_true, y_pred)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    return CategoricalCrossentropy(from_logits, label_smoothing, axis).per_sample(y_true, y_pred)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    return BinaryCrossentropy(from_logits, label_smoothing, axis).per_sample(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    return MeanSquaredError().per_sample(y_true, y_pred)


def mean_absolute_error(y_true, y_pred):
    return MeanAbsoluteError().per_sample(y_true, y_pred)


def mean_absolute_percentage_error(y_true, y_pred):
    return MeanAbsolutePercentageError().per_sample(y_true, y_pred)


def mean_squared_logarithmic_error(y_true, y_pred):
    return MeanSquaredLogarithmicError().per_sample(y_true, y_pred)


def huber(y_true, y_pred, delta=1.0):
    return Huber(delta).per_sample(y_true, y_pred)


def log_cosh(y_true, y_pred):
    return LogCosh().per_sample(y_true, y_pred)


def poisson(y_true, y_pred):
    return Poisson().per_sample(y_true, y_pred)


def kl_divergence(y_true, y_pred):
    return KLDivergence().per_sample(y_true, y_pred)


def hinge(y_true, y_pred):
    return Hinge().per_sample(y_true, y_pred)


def squared_hinge(y_true, y_pred):
    return SquaredHinge().per_sample(y_true, y_pred)


def categorical_hinge(y_true, y_pred):
    return CategoricalHinge().per_sample(y_true, y_pred)


def cosine_similarity(y_true, y_pred, axis=-1):
    return CosineSimilarity(axis=axis).per_sample(y_true, y_pred)


mae = MAE = mean_absolute_error
mse = MSE = mean_squared_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kl_divergence
bce = BCE = binary_crossentropy

# Every name of STRINGS is also a function above (an alias or Keras's name): get's result.
FUNCTIONS = {name: globals()[name] for name in STRINGS}
