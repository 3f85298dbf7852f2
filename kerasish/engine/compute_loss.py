"""A Model subclass's own `compute_loss(x, y, y_pred, sample_weight)` (Keras 3's
backend-neutral training hook: knowledge distillation's teacher, custom loss mixes).

The override is traced once per output width, like a custom loss function
(engine/traced_loss.py), into a graph of (y_pred, y, x...) -> the scalar loss; layers and
models it calls (a teacher) are nodes of that graph, so their weights get gradients too,
as in Keras (whose train step differentiates everything compute_loss touched). It runs
as output 0's loss inside the model's step: the batch's x views are handed to it once
per step object (`wants_inputs`), y_pred, y and x are copied in, forward gives the loss
to every row, backward seeds the rows with the engine's scale. Integer labels (a 1-D y
for a class axis) reach compute_loss as a float column (None, 1).

Refused by name: several outputs, outputs with more than a batch and a feature axis,
`sample_weight`/`class_weight` with the override, and `super().compute_loss()` inside it.
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

    def _plan(self, rows, classes):
        key = int(classes)
        ex = self._plans.get(key)
        if ex is None or ex.batch_size < rows:
            ex = self._plans[key] = Executor(_graph(self.model, classes, self.sparse), rows,
                                             TRAIN, input_grads=(0,))
        return ex

    def forward(self, per_row, y_pred, y_true, scratch):
        ex, s = self._step(y_pred)
        kops.copy(s.inputs[0], y_pred)
        if self.sparse:  # int32 class ids -> the float column compute_loss sees
            kops.cast_i32_to_f32(s.inputs[1], y_true)
        else:
            kops.copy(s.inputs[1], y_true)
        for dst, src in zip(s.inputs[2:], scratch["__inputs__"]):
            kops.copy(dst, src)
        ex.forward(s, False)  # the teacher's call: Keras's examples pass training=False
        kops.copy(per_row, s.outputs[0])

    def __call__(self, y_true, y_pred):
        raise ValueError(f"Model '{self.model.name}': its compute_loss override runs in "
                         f"fit/evaluate only")

    def get_config(self):
        return None


def _graph(model, classes, sparse):
    """A Functional model (y_pred, y, *x) -> the loss per row, from the override."""
    from kerasish import ops
    from kerasish.layers.input_layer import Input
    from kerasish.models.functional import Functional

    y_pred = Input((classes,), name=f"__{model.name}_compute_loss_y_pred")
    y = Input((1,) if sparse else (classes,), name=f"__{model.name}_compute_loss_y")
    xs = [Input(tuple(t.shape[1:]), name=f"__{model.name}_compute_loss_x{k}")
          for k, t in enumerate(model.inputs)]
    x = xs[0] if len(xs) == 1 else xs
    model._tracing_compute_loss = True
    try:
        out = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=None)
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
    graph = Functional([y_pred, y, *xs], out, name=f"__{model.name}_compute_loss")
    graph._output_losses = [None]
    return graph


def label_kind(y, output_shape):
    """Integer class ids (a 1-D y, or one column of integers, for an output of several
    units) or targets shaped like the output."""
    y = np.asarray(y)
    return y.dtype.kind in "iu" and (y.ndim == 1 or y.ndim == 2 and y.shape[1] == 1) and \
        (output_shape is None or output_shape[-1] != 1)
