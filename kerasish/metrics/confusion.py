"""Confusion-matrix metrics: TruePositives/FalsePositives/TrueNegatives/FalseNegatives,
Precision, Recall and AUC, from (T,) device accumulators of kernels_numba's
confusion_update (one launch per batch); `result()` reads the four small arrays and
combines them on the host with Keras's formulas (float32, divide_no_nan)."""

import numpy as np

import kernels_numba
from kernels_numba.ops import metric as metric_ops
from kerasish.metrics.base import Metric

EPS = 1e-7


def _evenly(thresholds):
    """Keras's is_evenly_distributed_thresholds (its fast path also clips p to [0, 1])."""
    t = np.asarray(thresholds, np.float64)
    if len(t) < 3:
        return False
    return bool(np.allclose(t, np.arange(len(t), dtype=np.float32) / (len(t) - 1), atol=EPS))


def _parse_thresholds(metric, thresholds):
    if thresholds is None:
        return [0.5]
    values = [thresholds] if np.ndim(thresholds) == 0 else list(np.ravel(thresholds))
    if not values or any(not (0.0 <= float(v) <= 1.0) for v in values):
        raise ValueError(f"{type(metric).__name__}: thresholds must be in [0, 1]; received "
                         f"{thresholds!r}")
    return [float(v) for v in values]


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, np.float32(0), a / np.where(b == 0, 1, b)).astype(np.float32)


class _Confusion(Metric):
    from_logits = False

    def _set_thresholds(self, thresholds, clip):
        self.thresholds_list = list(thresholds)
        self._thresholds = np.asarray(thresholds, np.float64).astype(np.float32)
        self._clip = clip
        self._thr_dev = None

    def state_shapes(self):
        t = (len(self._thresholds),)
        return {"tp": t, "fp": t, "tn": t, "fn": t}

    def build(self, device):
        if self.acc is not None and kernels_numba.device_of(self.acc) == device:
            return
        super().build(device)
        self._thr_dev = kernels_numba.to_device(self._thresholds, device)
        self._no_weights = kernels_numba.zeros((0,), np.float32, device)

    def _update(self, y_pred, y_true, weights):
        s = self.state
        metric_ops.confusion_update(s["tp"], s["fp"], s["tn"], s["fn"], y_pred, y_true,
                                    self._thr_dev, weights, clip=self._clip,
                                    sigmoid=self.from_logits)

    def update(self, y_pred, y_true, rows):
        self._update(y_pred, y_true, self._no_weights)
        self.count += rows

    def update_weighted(self, y_pred, y_true, rows, weights):
        per_element = np.repeat(np.asarray(weights, np.float32), y_pred.size // rows)
        self._update(y_pred, y_true, kernels_numba.to_device(per_element, self.device))
        self.count += rows

    def counts(self):
        return {k: kernels_numba.to_host(v).astype(np.float32) for k, v in self.state.items()}

    def _one_or_all(self, values):
        return float(values[0]) if len(self.thresholds_list) == 1 else values


class _Condition(_Confusion):
    key = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name, dtype)
        t = _parse_thresholds(self, thresholds)
        self.init_thresholds = thresholds
        self._set_thresholds(t, _evenly([0.0] + t + [1.0]))

    def result(self):
        if self.acc is None:
            return 0.0
        return self._one_or_all(self.counts()[self.key])

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_Condition):
    default_name, key = "true_positives", "tp"


class FalsePositives(_Condition):
    default_name, key = "false_positives", "fp"


class TrueNegatives(_Condition):
    default_name, key = "true_negatives", "tn"


class FalseNegatives(_Condition):
    default_name, key = "false_negatives", "fn"


class _PrecisionRecall(_Confusion):
    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise ValueError(f"{type(self).__name__}: top_k and class_id are not supported "
                             f"yet; received top_k={top_k!r}, class_id={class_id!r}")
        super().__init__(name, dtype)
        t = _parse_thresholds(self, thresholds)
        self.init_thresholds = thresholds
        self._set_thresholds(t, _evenly([0.0] + t + [1.0]))

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": None,
                "class_id": None}


class Precision(_PrecisionRecall):
    default_name = "precision"

    def result(self):
        if self.acc is None:
            return 0.0
        c = self.counts()
        return self._one_or_all(_div(c["tp"], c["tp"] + c["fp"]))


class Recall(_PrecisionRecall):
    default_name = "recall"

    def result(self):
        if self.acc is None:
            return 0.0
        c = self.counts()
        return self._one_or_all(_div(c["tp"], c["tp"] + c["fn"]))


class AUC(_Confusion):
    """Area under the ROC or PR curve from num_thresholds confusion counts (Keras's
    'interpolation', 'minoring' or 'majoring' summation; PR interpolation per Davis &
    Goadrich, as Keras)."""

    default_name = "auc"

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        if multi_label or num_labels is not None or label_weights is not None:
            raise ValueError("AUC: multi_label, num_labels and label_weights are not "
                             "supported yet")
        curve = str(curve).upper()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR'; received {curve!r}")
        summation_method = str(summation_method).lower()
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError("AUC: summation_method must be 'interpolation', 'minoring' or "
                             f"'majoring'; received {summation_method!r}")
        super().__init__(name, dtype)
        self.curve, self.summation_method = curve, summation_method
        self.from_logits = bool(from_logits)
        self.init_thresholds = None if thresholds is None else sorted(
            _parse_thresholds(self, thresholds))
        if self.init_thresholds is not None:
            inner = self.init_thresholds
            clip = _evenly([0.0] + inner + [1.0])
        else:
            if not isinstance(num_thresholds, int) or num_thresholds <= 1:
                raise ValueError("AUC: num_thresholds must be an integer > 1; received "
                                 f"{num_thresholds!r}")
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            clip = True
        self.num_thresholds = len(inner) + 2
        self._set_thresholds([0.0 - EPS] + inner + [1.0 + EPS], clip)

    def result(self):
        if self.acc is None:
            return 0.0
        c = self.counts()
        tp, fp, tn, fn = c["tp"], c["fp"], c["tn"], c["fn"]
        n = self.num_thresholds
        if self.curve == "PR" and self.summation_method == "interpolation":
            return float(self._interpolate_pr(tp, fp, fn))
        recall = _div(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _div(fp, fp + tn), recall
        else:
            x, y = recall, _div(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[: n - 1] + y[1:]) / np.float32(2.0)
        elif self.summation_method == "minoring":
            heights = np.minimum(y[: n - 1], y[1:])
        else:
            heights = np.maximum(y[: n - 1], y[1:])
        return float(np.sum((x[: n - 1] - x[1:]) * heights, dtype=np.float32))

    def _interpolate_pr(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = tp[: n - 1] - tp[1:]
        p = tp + fp
        dp = p[: n - 1] - p[1:]
        slope = _div(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[: n - 1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _div(p[: n - 1], np.maximum(p[1:], 0)), np.float32(1.0))
        with np.errstate(divide="ignore"):
            inc = _div(slope * (dtp + intercept * np.log(ratio).astype(np.float32)),
                       np.maximum(tp[1:] + fn[1:], 0))
        return np.sum(inc, dtype=np.float32)

    def get_config(self):
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": False, "num_labels": None, "label_weights": None,
                  "from_logits": self.from_logits}
        if self.init_thresholds is not None:
            config["thresholds"] = self.init_thresholds
        return config
