"""Softmax + sparse categorical cross-entropy in one launch, for a training plan.

When a model output is a Dense(activation="softmax") layer's, its loss is sparse
categorical cross-entropy on probabilities, unweighted and unmasked, and nothing else
sends a gradient into that output, a training step needs neither the softmax forward,
nor the loss forward, its sum, the accuracy count, the loss backward or the softmax
backward as separate launches: the Dense layer writes only its logits
(`defer_softmax`), and `ops.softmax_sparse_ce_train` writes the probabilities, adds
the batch's loss to the loss tracker and its matches to a sparse-accuracy metric, and
writes the logits' gradient where the Dense backward reads dy. The values are those of
the unfused chain (the same clipped loss and its exact gradient).

The same holds for a linear Dense output with SparseCategoricalCrossentropy(
from_logits=True) (Keras's usual classifier head): the output stays the logits, the
op's probabilities go to a scratch buffer, and the loss is the from-logits one. On the
CPU the op is also part of the replayed launch plan, where the unfused loss and metric
run live every step (the reference MLP: 0.59 -> 0.52 of PyTorch's epoch time).
"""

import numpy as np

from kerasish.layers.core import Dense
from kerasish.losses.crossentropy import SparseCategoricalCrossentropy
from kerasish.metrics.accuracy import SparseCategoricalAccuracy
from kernels_numba import ops


class FusedOutput:
    """One fused output: its Dense layer, the call's logits scratch, the metric it counts."""

    def __init__(self, index, layer, logits, metric, workspace, from_logits, probs):
        self.index, self.layer, self.logits, self.metric = index, layer, logits, metric
        self.workspace, self.from_logits, self.probs = workspace, from_logits, probs

    def defer(self, flag):
        """The Dense's softmax left to the op for a training step (softmax outputs)."""
        if not self.from_logits:
            self.layer.defer_softmax(flag)


def find(ex):
    """{output index: FusedOutput} for the executor's plan (training only)."""
    plan, g = ex.plan, ex.plan.graph
    found = {}
    if ex.weighted:
        return found
    producer = {t: (k, call) for k, call in enumerate(g.calls) for t in call.outputs}
    for i, t in enumerate(g.output_ids):
        loss = plan.losses[i]
        k, call = producer.get(t, (None, None))
        if call is None or not _fusable(loss, call, plan.writers[t], i, g.shapes[t]):
            continue
        metric = next((m for m in ex.model._output_metrics[i]
                       if type(m) is SparseCategoricalAccuracy), None)
        rows = ex.output_rows[i]
        ws = ex._alloc("losses", f"loss {i}/fused workspace",
                       ops.softmax_sparse_ce_train_workspace_shape(rows), np.float32)
        if loss.from_logits:  # the output keeps the logits; the probabilities: scratch
            probs = ex._alloc("losses", f"loss {i}/fused probabilities",
                              (rows, g.shapes[t][-1]), np.float32)
            found[i] = FusedOutput(i, call.layer, None, metric, ws, True, probs)
        else:
            found[i] = FusedOutput(i, call.layer, ex.call_scratch[k]["z"], metric, ws, False,
                                   None)
    return found


def _fusable(loss, call, writers, i, shape):
    layer = call.layer
    if type(loss) is not SparseCategoricalCrossentropy:
        return False
    head = "linear" if loss.from_logits else "softmax"
    return (loss.reduction == "sum_over_batch_size" and type(layer) is Dense
            and layer.activation == head and len(shape) == 2
            and call.mask_in is None and call.mask_out is None
            and writers == [("loss", i)])


def launch(ex, s, fused):
    """The fused outputs' launches for step s (their counts: `count`)."""
    model = ex.model
    for k, (_, y_pred, y_true, _, _, scale, dy_pred) in enumerate(s.losses):
        f = fused.get(s.loss_outputs[k])
        if f is not None:
            metric, n = f.metric, y_pred.shape[0]
            probs, logits = (f.probs[:n], y_pred) if f.from_logits else (y_pred, f.logits[:n])
            ops.softmax_sparse_ce_train(
                probs, dy_pred, model._loss_trackers[f.index].acc,
                None if metric is None else metric.acc, logits, y_true, scale=scale,
                workspace=f.workspace, from_logits=f.from_logits)


def count(ex, s, fused):
    """The host side of `launch`: the rows the loss tracker and the metric now hold."""
    model = ex.model
    for k, (_, y_pred, _, _, _, _, _) in enumerate(s.losses):
        f = fused.get(s.loss_outputs[k])
        if f is not None:
            model._loss_trackers[f.index].count += y_pred.shape[0]
            if f.metric is not None:
                f.metric.count += y_pred.shape[0]
