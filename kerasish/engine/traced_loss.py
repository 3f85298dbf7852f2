"""Losses written by users: a function `loss(y_true, y_pred)` or a `keras.losses.Loss`
subclass with `call(y_true, y_pred)`, written with keras.ops and traced.

The function is traced once per output width into a small graph (inputs y_pred and
y_true as rows, output one loss per row: values with more axes are averaged over
them, a scalar is given to every row), and run by its own plan inside the model's
step: y_pred and y_true are copied in, forward gives the per-row losses; backward
seeds every row with the engine's scale and runs reverse-mode over the traced ops to
get dL/dy_pred. Every step is kernels_numba launches; nothing is allocated.
"""

import inspect

from kerasish.engine.executor import TRAIN, Executor
from kernels_numba import ops as kops


class TracedLoss:
    """The engine's loss protocol (see kerasish/losses.py) for a traced function."""

    sparse = False  # targets have y_pred's shape
    kind = "custom"
    from_logits = False

    def __init__(self, fn, name=None, source=None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "custom_loss")
        self.source = source if source is not None else fn  # what compile was given
        self.reduction = "sum_over_batch_size"
        self._plans = {}

    def check_output(self, output_shape):
        if len(output_shape) < 2:
            raise ValueError(f"loss '{self.name}': expected a model output with a batch "
                             f"and a feature axis; received shape {output_shape}")

    def scratch_shapes(self, rows, classes):
        self._plan(rows, classes)  # built with the model's plan, not inside a step
        return {}

    def _plan(self, rows, classes):
        key = int(classes)
        ex = self._plans.get(key)
        if ex is None or ex.batch_size < rows:
            ex = self._plans[key] = Executor(_graph(self.fn, classes, self.name), rows, TRAIN,
                                             input_grads=(0,))
        return ex

    def _step(self, y_pred):
        ex = self._plan(y_pred.shape[0], y_pred.shape[1])
        return ex, ex.step(y_pred.shape[0])

    def forward(self, per_row, y_pred, y_true, scratch):
        ex, s = self._step(y_pred)
        kops.copy(s.inputs[0], y_pred)
        kops.copy(s.inputs[1], y_true)
        ex.forward(s, True)
        kops.copy(per_row, s.outputs[0])

    def backward(self, dy_pred, y_pred, y_true, scale, scratch):
        ex, s = self._step(y_pred)  # forward of this batch ran just before
        graph = ex.plan.graph
        kops.fill(s.grads[graph.output_ids[0]], scale)
        ex.backward(s)
        kops.copy(dy_pred, s.grads[graph.input_ids[0]])

    def __call__(self, y_true, y_pred):
        from kerasish import ops

        return ops.mean(self.fn(y_true, y_pred))

    def get_config(self):
        return {"name": self.name}


class SparseTracedLoss(TracedLoss):
    """A traced function given integer labels (int32 rows) as a float column (None, 1):
    what a metric function sees beside a sparse loss, as in Keras."""

    sparse = True

    def _plan(self, rows, classes):
        key = int(classes)
        ex = self._plans.get(key)
        if ex is None or ex.batch_size < rows:
            ex = self._plans[key] = Executor(_graph(self.fn, classes, self.name, 1), rows,
                                             TRAIN, input_grads=(0,))
        return ex

    def forward(self, per_row, y_pred, y_true, scratch):
        ex, s = self._step(y_pred)
        kops.copy(s.inputs[0], y_pred)
        kops.cast_i32_to_f32(s.inputs[1], y_true)
        ex.forward(s, True)
        kops.copy(per_row, s.outputs[0])


def _graph(fn, classes, name, true_width=None):
    """A Functional model (y_pred, y_true) -> per-row loss, from the traced function
    (y_true as wide as y_pred, or `true_width` columns)."""
    from kerasish import ops
    from kerasish.layers.input_layer import Input
    from kerasish.models.functional import Functional

    y_pred = Input((classes,), name=f"__{name}_y_pred")
    y_true = Input((true_width or classes,), name=f"__{name}_y_true")
    out = fn(y_true, y_pred)
    if not hasattr(out, "_keras_history"):
        raise TypeError(f"loss '{name}': the loss function must compute its result with "
                        f"keras.ops from y_true and y_pred; it returned {type(out).__name__}")
    if len(out.shape) > 1:
        out = ops.mean(out, axis=tuple(range(1, len(out.shape))))
    elif len(out.shape) == 0 or out.shape[0] is not None:  # one value for the batch
        out = ops.add(ops.sum(ops.multiply(y_pred, 0.0), axis=-1), out)
    model = Functional([y_pred, y_true], out, name=f"__{name}_graph")
    model._output_losses = [None]
    return model


def traced(spec):
    """A TracedLoss for a plain function or a Loss subclass defining call(), else None."""
    call = getattr(type(spec), "call", None)
    if not inspect.isclass(spec) and callable(call) and hasattr(spec, "reduction") and \
            not _explicit_forward(spec):
        return TracedLoss(lambda y_true, y_pred: spec.call(y_true, y_pred),
                          name=getattr(spec, "name", None) or type(spec).__name__.lower(),
                          source=spec)
    if inspect.isfunction(spec) and not _builtin(spec):
        return TracedLoss(spec)
    return None


def _explicit_forward(loss):
    """A built-in loss (its own forward/backward kernels) rather than a call() one."""
    from kerasish import losses

    forward = getattr(type(loss), "forward", None)
    base = getattr(getattr(losses, "Loss", None), "forward", None)
    return forward is not None and forward is not base


def _builtin(fn):
    return getattr(fn, "__module__", "").startswith("kerasish.")
