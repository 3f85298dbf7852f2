"""Metrics against freshly computed real Keras 3 (torch backend) results on random data:
update_state over several batches (with and without sample_weight) on both devices,
compile(metrics=...) names and evaluate() values, and configs both ways."""

import numpy as np
import pytest

import kerasish
from kerasish import metrics
from tests.kerasish.keras3 import real_keras

CASES = {  # id -> (class name, kwargs, data kind)
    "MeanAbsoluteError": ("MeanAbsoluteError", {}, "regression"),
    "MeanSquaredError": ("MeanSquaredError", {}, "regression"),
    "RootMeanSquaredError": ("RootMeanSquaredError", {}, "regression"),
    "AUC": ("AUC", {}, "binary"),
    "AUC_PR": ("AUC", {"curve": "PR", "num_thresholds": 50}, "binary"),
    "AUC_minoring": ("AUC", {"summation_method": "minoring", "num_thresholds": 17}, "binary"),
    "AUC_logits": ("AUC", {"from_logits": True}, "logits"),
    "AUC_thresholds": ("AUC", {"thresholds": [0.2, 0.5, 0.7]}, "binary"),
    "Precision": ("Precision", {}, "binary"),
    "Precision_list": ("Precision", {"thresholds": [0.3, 0.6, 0.9]}, "binary"),
    "Recall": ("Recall", {"thresholds": 0.4}, "binary"),
    "TruePositives": ("TruePositives", {}, "binary"),
    "FalsePositives": ("FalsePositives", {"thresholds": [0.25, 0.75]}, "binary"),
    "TrueNegatives": ("TrueNegatives", {}, "binary"),
    "FalseNegatives": ("FalseNegatives", {"thresholds": 0.7}, "binary"),
    "TopKCategoricalAccuracy": ("TopKCategoricalAccuracy", {"k": 2}, "onehot"),
    "SparseTopKCategoricalAccuracy": ("SparseTopKCategoricalAccuracy", {"k": 3}, "sparse"),
}


def _batch(kind, seed, n=9, k=5):
    r = np.random.default_rng(seed)
    if kind == "regression":
        return r.standard_normal((n, 3)).astype(np.float32), \
            r.standard_normal((n, 3)).astype(np.float32)
    if kind in ("binary", "logits"):
        y = r.integers(0, 2, (n, 2)).astype(np.float32)
        p = r.uniform(0, 1, (n, 2)) if kind == "binary" else 2 * r.standard_normal((n, 2))
        return y, p.astype(np.float32)
    p = r.uniform(0, 1, (n, k)).astype(np.float32)
    labels = r.integers(0, k, n)
    return (labels if kind == "sparse" else np.eye(k, dtype=np.float32)[labels]), p


def _close(got, want, what):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-5, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("case", list(CASES))
def test_update_state_matches_keras(device, case, weighted):
    keras = real_keras()
    cls, kwargs, kind = CASES[case]
    if device == "cuda" and cls == "AUC" and "thresholds" not in kwargs:
        # The simulator runs a Python thread per CUDA thread (one block per threshold):
        # fewer thresholds there, the same code path.
        kwargs = {**kwargs, "num_thresholds": min(kwargs.get("num_thresholds", 200), 11)}
    ours = getattr(metrics, cls)(**kwargs)
    ours.build(device)
    theirs = getattr(keras.metrics, cls)(**kwargs)
    for seed in range(3):
        y_true, y_pred = _batch(kind, seed)
        w = np.random.default_rng(10 + seed).uniform(0, 2, len(y_true)).astype(np.float32) \
            if weighted else None
        ours.update_state(y_true, y_pred, sample_weight=w)
        theirs.update_state(y_true, y_pred, sample_weight=w)
    _close(ours.result(), keras.ops.convert_to_numpy(theirs.result()), case)
    ours.reset_state()
    theirs.reset_state()
    y_true, y_pred = _batch(kind, 7)
    ours.update_state(y_true, y_pred)
    theirs.update_state(y_true, y_pred)
    _close(ours.result(), keras.ops.convert_to_numpy(theirs.result()), f"{case} after reset")


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
def test_mean_and_sum(device, weighted):
    keras = real_keras()
    for cls in ("Mean", "Sum"):
        ours, theirs = getattr(metrics, cls)(), getattr(keras.metrics, cls)()
        ours.build(device)
        for seed in range(2):
            v = np.random.default_rng(seed).standard_normal((4, 3)).astype(np.float32)
            w = np.random.default_rng(5 + seed).uniform(0, 1, 4) if weighted else None
            ours.update_state(v, sample_weight=w)
            theirs.update_state(v, sample_weight=w)
        _close(ours.result(), keras.ops.convert_to_numpy(theirs.result()), cls)


@pytest.mark.parametrize("case", list(CASES))
def test_configs_cross_both_ways(case):
    keras = real_keras()
    cls, kwargs, kind = CASES[case]
    theirs = getattr(keras.metrics, cls)(**kwargs)
    mine = metrics.get({"class_name": cls, "config": theirs.get_config()})
    back = getattr(keras.metrics, cls).from_config(mine.get_config())
    y_true, y_pred = _batch(kind, 3)
    for m in (mine, back, theirs):
        m.update_state(y_true, y_pred)
    want = keras.ops.convert_to_numpy(theirs.result())
    _close(mine.result(), want, f"{case} Keras config -> kerasish")
    _close(keras.ops.convert_to_numpy(back.result()), want, f"{case} kerasish -> Keras")


def _model(units, activation, loss, metric_list):
    model = kerasish.Sequential([kerasish.Input((4,)),
                                 kerasish.layers.Dense(units, activation=activation)])
    model.compile(optimizer="sgd", loss=loss, metrics=metric_list)
    return model


@pytest.mark.parametrize("setup", ["binary", "onehot", "sparse", "regression"])
def test_compiled_metrics_are_named_and_valued_as_keras(setup):
    keras = real_keras()
    r = np.random.default_rng(4)
    x = r.standard_normal((37, 4)).astype(np.float32)
    if setup == "binary":
        y = r.integers(0, 2, (37, 1)).astype(np.float32)
        names = ["AUC", "auc", "precision", "recall", "true_positives", "false_negatives",
                 "mae", metrics.AUC(curve="PR", name="pr"), metrics.Precision(0.3, name="p03")]
        model = _model(1, "sigmoid", "binary_crossentropy", names)
    elif setup == "onehot":
        y = np.eye(5, dtype=np.float32)[r.integers(0, 5, 37)]
        names = ["top_k_categorical_accuracy", metrics.TopKCategoricalAccuracy(k=2, name="top2"), "mse",
                 "accuracy"]
        model = _model(5, "softmax", "categorical_crossentropy", names)
    elif setup == "sparse":
        y = r.integers(0, 5, 37)
        names = ["sparse_top_k_categorical_accuracy", "acc"]
        model = _model(5, "softmax", "sparse_categorical_crossentropy", names)
    else:
        y = r.standard_normal((37, 5)).astype(np.float32)
        names = ["mae", "MSE", "root_mean_squared_error", metrics.MeanAbsoluteError()]
        model = _model(5, None, "mse", names)
    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    for spec in names:
        name = spec if isinstance(spec, str) else spec.name
        if isinstance(spec, str):
            real = keras.metrics.get(spec) if spec not in ("accuracy", "acc") else None
        else:
            real = getattr(keras.metrics, type(spec).__name__).from_config(spec.get_config())
        if real is None:
            continue
        real.update_state(y, pred)
        _close(logs[name], keras.ops.convert_to_numpy(real.result()), f"{setup} {name}")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # trains with them


def test_refusals_name_the_metric():
    with pytest.raises(ValueError, match="Unknown metric: 'f1'"):
        metrics.check_names(["f1"])
    with pytest.raises(ValueError, match="takes values"):
        metrics.check_names(["mean"])
    with pytest.raises(ValueError, match="top_k and class_id are not supported"):
        metrics.Precision(top_k=2)
    with pytest.raises(ValueError, match="multi_label"):
        metrics.AUC(multi_label=True)
    with pytest.raises(ValueError, match=r"thresholds must be in \[0, 1\]"):
        metrics.TruePositives(thresholds=1.5)
    with pytest.raises(ValueError, match="k to be an int >= 1"):
        metrics.TopKCategoricalAccuracy(k=0)


def test_metric_state_variables_read_like_keras():
    import kerasish as keras
    from kerasish import ops

    class MeanOfPred(keras.metrics.Metric):
        def __init__(self, name="mean_of_pred", **kwargs):
            super().__init__(name=name, **kwargs)
            self.total = self.add_variable(shape=(), initializer="zeros", name="total")
            self.count = self.add_variable(shape=(), initializer="zeros", name="count")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(ops.sum(y_pred))
            self.count.assign_add(ops.sum(ops.ones_like(y_pred)))  # y_true unused

        def result(self):
            return self.total / self.count

        def reset_state(self):
            self.total.assign(0.0)
            self.count.assign(0.0)

    m = MeanOfPred()
    m.update_state(np.zeros((2, 1)), np.array([[1.0], [2.0]], np.float32))
    assert np.shape(m.total.value) == () and float(m.total.value) == 3.0  # NumPy 2: 0-d only
    assert float(m.result()) == 1.5 and float(m.count) == 2.0
    assert float(2.0 * m.total - 1.0) == 5.0 and np.asarray(m.total).shape == ()
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
    model.compile("sgd", "mse", metrics=[MeanOfPred()])
    logs = model.evaluate(np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32), verbose=0,
                          return_dict=True)
    assert logs["mean_of_pred"] == 2.0


def test_loss_named_metrics_resolve_and_refuse():
    from kerasish import metrics as km

    assert type(km.get("kl_divergence")).__name__ == "KLDivergence"
    assert type(km.get("mape")).__name__ == "MeanAbsolutePercentageError"
    assert km.get("log_cosh_error").name == "logcosh"
    assert km.CosineSimilarity().direction == "up" and km.Poisson().direction == "down"
    assert km.SparseCategoricalCrossentropy().sparse
    with pytest.raises(ValueError, match="SparseCategoricalCrossentropy: unsupported arguments"):
        km.SparseCategoricalCrossentropy(ignore_class=0)
    with pytest.raises(ValueError, match="does not match"):
        km.Poisson().update_state(np.zeros((2, 3)), np.zeros((2, 4)))
