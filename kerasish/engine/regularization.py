"""Weight and activity regularizers, and weight constraints, in a plan's step.

Keras adds `l1 sum|w| + l2 sum w^2` of every trainable weight with a regularizer, and
the same of each regularized layer's output divided by the batch size, to the loss of
training and evaluation alike; a constraint projects its weight after each update.
Here one `regularize` launch per regularized weight adds its penalty to a (1,) buffer
and its gradient into the weight's gradient (the optimizer zeroes gradients after
each update, so the order within the step is free); an activity penalty adds its
gradient into the layer's output gradient just before that layer's backward (a
backward-list entry, so the launch plan captures it); the buffer then joins the
add_loss tracker (rows times the value, like add_loss), which the logged loss includes.
"""

import numpy as np

from kernels_numba import ops
from kernels_numba.ops import regularize


def _factors(reg):
    return float(reg.l1), float(reg.l2)


class Penalties:
    """The regularized weights, layer outputs and constrained weights of one plan."""

    def __init__(self, ex):
        model, g = ex.model, ex.plan.graph
        variables = model._trainable_variables
        self.weights = [(v, *_factors(v.regularizer)) for v in variables
                        if getattr(v, "regularizer", None) is not None]
        self.constrained = [v for v in variables if getattr(v, "constraint", None) is not None]
        # (call index, output tensor, l1, l2) for layers with an activity regularizer
        self.activity = [(call.index, call.outputs[0], *_factors(call.layer.activity_regularizer))
                         for call in g.calls
                         if getattr(call.layer, "activity_regularizer", None) is not None]
        self.active = bool(self.weights or self.activity)
        if not self.active:
            return
        largest = max([int(np.prod(v.shape, dtype=np.int64)) for v, _, _ in self.weights] +
                      [ex.batch_size * int(np.prod(g.shapes[t][1:], dtype=np.int64))
                       for _, t, _, _ in self.activity] + [1])
        self.penalty = ex._alloc("losses", "regularization penalty", (1,), np.float32)
        self.workspace = ex._alloc("losses", "regularization workspace",
                                   regularize.penalty_workspace_shape(largest), np.float32)

    def backward_entry(self, call_index, dy, y, n):
        """The activity entry to run before call `call_index`'s backward, or None."""
        for index, _, l1, l2 in self.activity:
            if index == call_index:
                return (self.penalty, dy, y, l1, l2, 1.0 / n)
        return None

    def run_activity(self, entry):
        penalty, dy, y, l1, l2, scale = entry
        ops.activity_penalty(penalty, dy, y, l1=l1, l2=l2, scale=scale,
                             workspace=self.workspace)

    def begin(self):
        if self.active:
            ops.fill(self.penalty, 0.0)

    def add_weights(self, train):
        """Every regularized weight's penalty (and, training, its gradient)."""
        for var, l1, l2 in self.weights:
            ops.weight_penalty(self.penalty, var.grad if train else None, var.value,
                               l1=l1, l2=l2, workspace=self.workspace)

    def add_activity_values(self, s, done=()):
        """Activity penalties of outputs whose backward entry did not count them."""
        for index, t, l1, l2 in self.activity:
            if index not in done:
                ops.activity_penalty(self.penalty, None, s.acts[t], l1=l1, l2=l2,
                                     scale=1.0 / s.n, workspace=self.workspace)

    def finish(self, model, n, counted=False):
        """The step's penalty into the add_loss tracker (the logged loss includes it);
        `counted`: the step's add_loss terms already counted its n rows (a mean tracker:
        counting them twice halved both)."""
        if self.active:
            tracker = model._added_loss_tracker
            ops.axpy(tracker.acc, self.penalty, float(n))
            if not counted:
                tracker.count += n

    def constrain(self):
        for var in self.constrained:
            var.constraint.apply(var.value)
