"""A Model subclass's own `compute_loss(x, y, y_pred, sample_weight)` (Keras 3's
backend-neutral training hook: knowledge distillation's teacher, custom loss mixes).

The override is traced once per output width, like a custom loss function
(engine/traced_loss.py), into a graph of (y_pred, y, x...) -> the scalar loss; layers and
models it calls (a teacher) are nodes of that graph, so their weights get gradients too,
as in Keras (whose train step differentiates everything compute_loss touched). It runs
as output 0's loss inside the model's step: the batch's x views are handed to it once
per step object (`wants_inputs`, with the step's sample weights, which the executor then
does not apply again), y_pred, y, x (and the weights) are copied in, forward gives the
loss to every row, backward seeds the rows with the engine's scale. Integer labels (a 1-D
y for a class axis) and sample weights reach compute_loss as float columns (None, 1).

`super().compute_loss(...)` inside the override is the compiled loss on those tensors
(CompileState.compute_loss). Refused by name: several outputs, outputs with more than a
batch and a feature axis.
"""

import numpy as np

from kerasish.engine.executor import TRAIN, Executor
from kerasish.engine.traced_loss import TracedLoss
from kernels_numba import ops as kops


def overrides(model):
    """The model's class defines its own compute_loss."""
    from kerasish.engine.compile_state import CompileState

    return getattr(type(model), "compute_loss", None) is not CompileState.compute_loss


class ComputeLoss(TracedLoss):
    """The engine's loss protocol for a traced `model.compute_loss` override."""

    wants_inputs = True  # Step puts the batch's input views in its scratch

    def __init__(self, model, sparse):
        self.model, self.sparse = model, bool(sparse)
        self.name, self.source, self.reduction = "compute_loss", None, "sum_over_batch_size"
        self._plans = {}

    def check_output(self, output_shape):
        if len(output_shape) != 2:
            raise ValueError(f"Model '{self.model.name}': a compute_loss override needs an "
                             f"output of shape (batch, features); received {output_shape}")

    def _plan(self, rows, classes, weighted=False):
        key = (int(classes), weighted)
        ex = self._plans.get(key)
        if ex is None or ex.batch_size < rows:
            ex = self._plans[key] = Executor(_graph(self.model, classes, self.sparse,
                                                    weighted), rows, TRAIN, input_grads=(0,))
        return ex

    def scratch_shapes(self, rows, classes):
        return {}  # its plans are made on first use (weighted or not: the step decides)

    def _step(self, y_pred, weights=None):
        ex = self._plan(y_pred.shape[0], y_pred.shape[1], weights is not None)
        return ex, ex.step(y_pred.shape[0])

    def forward(self, per_row, y_pred, y_true, scratch):
        weights = scratch.get("__weights__")
        ex, s = self._step(y_pred, weights)
        kops.copy(s.inputs[0], y_pred)
        if self.sparse:  # int32 class ids -> the float column compute_loss sees
            kops.cast_i32_to_f32(s.inputs[1], y_true)
        else:
            kops.copy(s.inputs[1], y_true)
        sources = list(scratch["__inputs__"]) + ([] if weights is None else [weights])
        for dst, src in zip(s.inputs[2:], sources):
            kops.copy(dst, src.reshape(dst.shape))
        ex.forward(s, False)  # the teacher's call: Keras's examples pass training=False
        kops.copy(per_row, s.outputs[0])

    def backward(self, dy_pred, y_pred, y_true, scale, scratch):
        ex, s = self._step(y_pred, scratch.get("__weights__"))  # its forward ran just before
        kops.fill(s.grads[ex.plan.graph.output_ids[0]], scale)
        ex.backward(s)
        kops.copy(dy_pred, s.grads[ex.plan.graph.input_ids[0]])

    def __call__(self, y_true, y_pred):
        raise ValueError(f"Model '{self.model.name}': its compute_loss override runs in "
                         f"fit/evaluate only")

    def get_config(self):
        return None


def _graph(model, classes, sparse, weighted=False):
    """A Functional model (y_pred, y, *x[, sample_weight]) -> the loss per row, from the
    override (sample weights a column (None, 1), as Keras's integer labels are here)."""
    from kerasish import ops
    from kerasish.layers.input_layer import Input
    from kerasish.models.functional import Functional

    y_pred = Input((classes,), name=f"__{model.name}_compute_loss_y_pred")
    y = Input((1,) if sparse else (classes,), name=f"__{model.name}_compute_loss_y")
    xs = [Input(tuple(t.shape[1:]), name=f"__{model.name}_compute_loss_x{k}")
          for k, t in enumerate(model.inputs)]
    x = xs[0] if len(xs) == 1 else xs
    weights = [Input((1,), name=f"__{model.name}_compute_loss_w")] if weighted else []
    model._tracing_compute_loss = True
    try:
        out = model.compute_loss(x=x, y=y, y_pred=y_pred,
                                 sample_weight=weights[0] if weights else None)
    finally:
        model._tracing_compute_loss = False
    if not hasattr(out, "_keras_history"):
        raise TypeError(f"Model '{model.name}': compute_loss must return a tensor computed "
                        f"with keras.ops, losses or layers from x, y and y_pred; it "
                        f"returned {type(out).__name__}")
    if len(out.shape) > 1:
        out = ops.mean(out)
    if len(out.shape) == 0 or out.shape[0] is not None:  # one value: given to every row
        out = ops.add(ops.sum(ops.multiply(y_pred, 0.0), axis=-1), ops.mean(out))
    class LossGraph(Functional):
        _unused_inputs = "allow"  # compute_loss need not read x, y or the weights

    graph = LossGraph([y_pred, y, *xs, *weights], out, name=f"__{model.name}_compute_loss")
    graph._output_losses = [None]
    return graph


def label_kind(y, output_shape):
    """Integer class ids (a 1-D y, or one column of integers, for an output of several
    units) or targets shaped like the output."""
    y = np.asarray(y)
    return y.dtype.kind in "iu" and (y.ndim == 1 or y.ndim == 2 and y.shape[1] == 1) and \
        (output_shape is None or output_shape[-1] != 1)
