"""Metrics that accumulate on the device; the host reads them once per progress update.

compile(metrics=[...]) takes Keras's strings (a class name, its snake_case, or an alias
such as 'mae'; the log entry is named by the string, as in Keras 3), metric objects,
Keras metric functions (keras.metrics.mean_absolute_error) and saved config dicts.
'accuracy'/'acc' pick binary, sparse or categorical accuracy from the output's shape
and its loss's labels.
"""

import re

from kerasish.metrics.accuracy import (
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from kerasish.metrics.base import LossMean, Mean, MeanMetric, Metric, Sum  # noqa: F401
from kerasish.metrics.confusion import (
    AUC,
    FalseNegatives,
    FalsePositives,
    Precision,
    Recall,
    TrueNegatives,
    TruePositives,
)
from kerasish.metrics.loss_metrics import (
    LOSS_METRICS,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    CategoricalHinge,
    CosineSimilarity,
    Hinge,
    KLDivergence,
    LogCoshError,
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    Poisson,
    SparseCategoricalCrossentropy,
    SquaredHinge,
)
from kerasish.metrics.regression import MeanAbsoluteError, MeanSquaredError, RootMeanSquaredError
from kerasish.losses import (  # noqa: F401  (Keras exports these as metric functions too)
    mean_absolute_error,
    mean_squared_error,
)

ACCURACY_NAMES = ("accuracy", "acc")
_ALL = (SparseCategoricalAccuracy, CategoricalAccuracy, BinaryAccuracy,
        TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanAbsoluteError,
        MeanSquaredError, RootMeanSquaredError, AUC, Precision, Recall, TruePositives,
        FalsePositives, TrueNegatives, FalseNegatives, *LOSS_METRICS)
CLASSES = {cls.__name__: cls for cls in (*_ALL, Mean, Sum)}


def _snake(name):
    """Keras's to_snake_case: KLDivergence -> kl_divergence, AUC -> auc."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


# Keras 3's names (metrics.ALL_OBJECTS_DICT): class names, their snake_case, aliases.
EXPLICIT = {_snake(cls.__name__): cls for cls in _ALL}
EXPLICIT.update({cls.__name__: cls for cls in _ALL})
EXPLICIT.update({"auc": AUC, "mse": MeanSquaredError, "MSE": MeanSquaredError,
                 "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
                 "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy,
                 "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
                 "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError})
# Mean and Sum take values, not (y_true, y_pred): Keras would misuse them in compile.
STANDALONE = {"Mean": Mean, "Sum": Sum, "mean": Mean, "sum": Sum}
VALID = sorted(set(ACCURACY_NAMES) | set(EXPLICIT))


def _name_of(m):
    return m if isinstance(m, str) else getattr(m, "__name__", None)


def check_names(metrics):
    """Validate compile(metrics=...) early, listing the valid names.

    Returns names (resolved by `resolve` once shapes are known) and metric objects
    (used as given; a saved {"class_name", "config"} dict becomes one).
    """
    if metrics is None:
        return []
    if isinstance(metrics, (str, dict)) or isinstance(metrics, Metric):
        metrics = [metrics]
    specs = []
    for m in metrics:
        if isinstance(m, dict) and m.get("class_name") in CLASSES:
            m = CLASSES[m["class_name"]].from_config(dict(m.get("config") or {}))
        if isinstance(m, type) and issubclass(m, Metric):
            m = m()
        if isinstance(m, (Mean, Sum)) or _name_of(m) in STANDALONE:
            raise ValueError(f"Metric {_name_of(m) or type(m).__name__!r} takes values "
                             "(update_state(values)), not (y_true, y_pred): use it "
                             "standalone, not in compile(metrics=...)")
        if isinstance(m, Metric):
            if type(m) not in CLASSES.values():
                raise ValueError(f"Unsupported metric object {m!r}: custom Metric subclasses "
                                 f"are not supported yet; valid classes: {sorted(CLASSES)}")
            specs.append(m)
            continue
        name = _name_of(m) or getattr(m, "name", None)
        if isinstance(name, str) and (name.lower() in ACCURACY_NAMES or name in EXPLICIT):
            specs.append(name)
        else:
            raise ValueError(f"Unknown metric: {m!r}. Valid metrics: {VALID} or the "
                             f"classes {sorted(CLASSES)}")
    return specs


def serialize(spec):
    """A compile-config entry: names stay strings, objects become Keras's dict form."""
    if isinstance(spec, str):
        return spec
    return {"class_name": type(spec).__name__, "config": spec.get_config()}  # as Keras 3.15


def resolve(name, output_shape, labels_sparse):
    """A metric for one output. Keras's rule for 'accuracy': by the shapes of y_true and
    y_pred, not the loss. Other names build their class, named by the string as in Keras
    3. A metric object is used as it is."""
    if isinstance(name, Metric):
        return name
    if name.lower() in ACCURACY_NAMES:
        if output_shape[-1] == 1:
            return BinaryAccuracy(name)
        if labels_sparse:
            return SparseCategoricalAccuracy(name)
        return CategoricalAccuracy(name)
    return EXPLICIT[name](name=name)


def get(identifier):
    """keras.metrics.get: a metric object from a name, a class, a config dict or an object."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, dict):
        cls = CLASSES.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown metric class {identifier.get('class_name')!r}")
        return cls.from_config(dict(identifier.get("config") or {}))
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    cls = EXPLICIT.get(identifier) or STANDALONE.get(identifier)
    if cls is None:
        raise ValueError(f"Unknown metric: {identifier!r}. Valid metrics: {VALID}")
    return cls()
