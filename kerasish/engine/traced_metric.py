"""Metrics written by users: a `keras.metrics.Metric` subclass with `add_variable`,
`update_state(y_true, y_pred, sample_weight=None)`, `result()` and `reset_state()`.

update_state is traced once per output width with keras.ops (its `assign_add` /
`assign` calls become nodes that update the variables' own device buffers,
kerasish/ops/state.py) and runs as its own small plan after each batch's forward: the
state accumulates on the device. `result()` and `reset_state()` run as written, on
the host, when the logs are read or reset (they only read or set the variables).
Integer labels (sparse losses) reach update_state as a float32 column (rows, 1).
"""

import numpy as np

from kerasish.engine.executor import PREDICT, Executor
from kernels_numba import ops as kops


class TracedMetric:
    """The engine's metric protocol (kerasish/metrics/base.py) around a user Metric."""

    def __init__(self, metric):
        self.metric = metric
        self.name = metric.name
        self.sparse = None  # takes either label kind: set from the loss in build_for
        self.count = 0
        self.acc = None
        self._plans = {}

    def get_config(self):
        return self.metric.get_config()

    def build(self, device):
        pass  # the variables live where add_variable made them

    def bind_labels(self, sparse):
        self.sparse = sparse

    def reset(self):
        self.metric.reset_state()
        self.count = 0

    def update(self, y_pred, y_true, rows):
        ex = self._plan(rows, y_pred.shape[1])
        s = ex.step(rows)
        kops.copy(s.inputs[0], y_pred)
        if self.sparse:
            kops.cast_i32_to_f32(s.inputs[1], y_true)
        else:
            kops.copy(s.inputs[1], y_true)
        ex.forward(s, False)
        self.count += rows

    def result(self):
        value = self.metric.result()
        return float(np.asarray(value.numpy() if hasattr(value, "numpy") else value,
                                dtype=np.float64).reshape(-1)[0])

    def _plan(self, rows, classes):
        ex = self._plans.get(classes)
        if ex is None or ex.batch_size < rows:
            ex = self._plans[classes] = Executor(self._graph(classes), max(rows, 1), PREDICT)
        return ex

    def _graph(self, classes):
        from kerasish.graph import tracing
        from kerasish.layers.input_layer import Input
        from kerasish.models.functional import Functional

        y_pred = Input((classes,), name=f"__{self.name}_y_pred")
        y_true = Input((1,) if self.sparse else (classes,), name=f"__{self.name}_y_true")
        with tracing.capture_effects() as effects:
            self.metric.update_state(y_true, y_pred)
        if not effects:
            raise TypeError(f"metric '{self.name}': update_state must update its variables "
                            f"with assign_add/assign on keras.ops results")
        model = Functional([y_pred, y_true], effects, name=f"__{self.name}_update")
        return model


def function_metric(fn):
    """`metrics=[fn]`: Keras's MeanMetricWrapper of a user function fn(y_true, y_pred),
    its per-sample values traced like a custom loss's (engine/traced_loss.py) and
    averaged over the samples on the device."""
    from kerasish.engine.traced_loss import TracedLoss
    from kerasish.metrics.base import MeanMetric

    class FunctionMetric(MeanMetric):
        def __init__(self):
            super().__init__(name=fn.__name__)
            self.fn, self._values = fn, TracedLoss(fn, name=fn.__name__)
            self.sparse = None

        def bind_labels(self, sparse):
            if sparse:
                raise ValueError(f"metric function '{self.name}': integer labels (with a "
                                 f"sparse loss) are not supported yet; expected targets "
                                 f"shaped like the model output (one-hot or values)")
            self.sparse = False

        def values(self, out, y_pred, y_true):
            self._values.forward(out, y_pred, y_true, {})

        def get_config(self):
            return {"name": self.name}

    return FunctionMetric()


def is_function(metric):
    """A plain Python function given in `metrics=` (not one of kerasish's names)."""
    import inspect

    return inspect.isfunction(metric) and \
        not getattr(metric, "__module__", "").startswith("kerasish.")


def wrap(metric):
    """A TracedMetric for a Metric subclass that defines its own update_state, a
    FunctionMetric for a function."""
    from kerasish.metrics.base import Metric

    if is_function(metric):
        return function_metric(metric)
    if type(metric).update_state is not Metric.update_state:
        return TracedMetric(metric)
    return metric
