"""A recording run as one plan: forward, the targets' seeds, reverse mode (the engine).

The recorded graph becomes a Functional model from the recording's inputs to every
tensor a recorded call returned (so each gets its value), with no compiled loss, and
the engine's Executor runs it as a seeded training plan (engine/plan.py `seeded`): the
same FlatGraph, storage plan, layer forwards/backwards and kernels as fit's step. A
gradient seeds each target output (ones, or the given output gradients), zeroes the
others, and runs the backward: parameter gradients accumulate into each Variable's
`.grad` (zeroed before, read and zeroed after), input and intermediate gradients are
the plan's gradient buffers.
"""

import numpy as np

import kernels_numba
from kernels_numba import ops as kops
from kerasish.engine.executor import TRAIN, Executor


class TapeRun:
    """The Functional model and Executor of one version of a recording."""

    def __init__(self, rec):
        from kerasish.models.functional import Functional

        if not rec.inputs:
            raise ValueError("GradientTape: the recorded computation has no array input (only "
                             "Variables); expected a layer, model or op called on an array "
                             "with a batch axis inside the tape (kerasish plans need a batch)")
        self.version = rec.version
        outs, seen = [], {id(t) for t in rec.inputs}
        for t in rec.marked:
            if id(t) not in seen:
                seen.add(id(t))
                outs.append(t)
        if not outs:
            raise ValueError("GradientTape: nothing was recorded")
        self.outputs = outs
        self.model = Functional(list(rec.inputs), outs, name="gradient_tape")
        self.model._output_losses = [None] * len(outs)
        self.input_grads = tuple(i for i, t in enumerate(rec.inputs) if id(t) in rec.watched)
        self.executor = Executor(self.model, rec.batch, TRAIN, input_grads=self.input_grads,
                                 seeded=True)
        self.graph = self.executor.plan.graph
        self.out_index = {id(t): i for i, t in enumerate(outs)}
        self.in_index = {id(t): i for i, t in enumerate(rec.inputs)}
        self.variables = list(self.model._trainable_variables)
        self.step = None

    def forward(self, rec):
        ex = self.executor
        s = self.step = ex.step(rec.batch)
        for buf, host in zip(s.inputs, rec.arrays):
            kernels_numba.copy_from_host(buf, host.reshape(buf.shape))
        for v in self.variables:
            kops.fill(v.ensure_grad(), 0.0)
        ex.forward(s, rec.training)
        for t, buf in zip(self.outputs, s.outputs):
            t._tape_value = kernels_numba.to_host(buf).reshape(_shape(t, rec.batch))
        return s

    def backward(self, targets, seeds):
        """Seed the target outputs and run reverse mode; returns the reached tensor ids."""
        s, g = self.step, self.graph
        for oid in g.output_ids:
            buf = s.grads.get(oid)
            if buf is not None:
                kops.fill(buf, 0.0)
        for t, seed in zip(targets, seeds):
            oid = g.output_ids[self.out_index[id(t)]]
            buf = s.grads.get(oid)
            if buf is None:
                continue
            if seed is None:
                kops.fill(buf, 1.0)
            else:
                seed = np.asarray(seed, np.float32)
                if seed.size != buf.size:
                    raise ValueError(f"GradientTape.gradient: output_gradients: expected an "
                                     f"array of shape {_shape(t, s.n)}; received shape "
                                     f"{seed.shape}")
                host = kernels_numba.to_host(buf) + seed.reshape(buf.shape)
                kernels_numba.copy_from_host(buf, host)
        for grad in getattr(s, "added_grads", ()):
            kops.fill(grad, 0.0)  # add_loss terms are not the tape's target
        self.executor.backward(s)
        return self._reached([g.output_ids[self.out_index[id(t)]] for t in targets])

    def _reached(self, target_ids):
        g = self.graph
        reach, weights = set(target_ids), set()
        for call in reversed(g.calls):
            if any(t in reach for t in call.outputs):
                reach.update(call.inputs)
                weights.update(id(w) for w in call.layer.trainable_weights)
        return reach, weights


def _shape(t, n):
    return tuple(n if d is None else d for d in t.shape)


def run_for(rec):
    """The TapeRun for the recording's current version (built once per version)."""
    run = rec.run
    if run is None or run.version != rec.version:
        run = rec.run = TapeRun(rec)
    return run


def materialize(rec):
    """Every recorded tensor's value, by one forward run."""
    run_for(rec).forward(rec)
    trim(rec)


def trim(rec):
    """Once no tape records into it, drop the recording's nodes from their layers (only
    from the end of each list, so no other node's index moves)."""
    if rec.open_tapes or rec.trimmed or rec.run is None or rec.run.version != rec.version:
        return
    rec.trimmed = True
    mine = {id(n) for n in rec.nodes}
    for node in reversed(rec.nodes):
        nodes = node.layer._inbound_nodes
        while nodes and id(nodes[-1]) in mine:
            nodes.pop()
    rec.nodes = []
