"""A recording run as one plan: forward, the targets' seeds, reverse mode (the engine).

The recorded graph becomes a Functional model from the recording's inputs to every
tensor a recorded call returned (so each gets its value), with no compiled loss, and
the engine's Executor runs it as a training plan seeded at the targets only
(engine/plan.py `seeded`): the same FlatGraph, storage plan, layer forwards/backwards
and kernels as fit's step. A gradient seeds each target output (ones, or the given
output gradients) and runs the backward: parameter gradients accumulate into each
Variable's `.grad` (zeroed before, read and zeroed after), input and intermediate
gradients are the plan's gradient buffers.

Replay: a run is kept by the recording's structural key (recording.py: the layers by
identity, ops by class and attributes, constants by value, shapes, the batch size) with
the targets and watched inputs. A later step that records the same structure runs the
kept plan on its own arrays (nothing is planned or allocated again); tensors correspond
by their position in the recording.
"""

from collections import OrderedDict

import numpy as np

import kernels_numba
from kernels_numba import ops as kops
from kerasish.engine.executor import TRAIN, Executor

_KEPT = OrderedDict()  # key -> TapeRun
_MAX_KEPT = 8


class TapeRun:
    """The Functional model and Executor for one recorded structure and target set."""

    def __init__(self, rec, target_positions):
        from kerasish.models.functional import Functional

        if not rec.inputs:
            raise ValueError("GradientTape: the recorded computation has no array input (only "
                             "Variables); expected a layer, model or op called on an array "
                             "with a batch axis inside the tape (kerasish plans need a batch)")
        positions, seen = [], {id(t) for t in rec.inputs}
        for p, t in enumerate(rec.marked):
            if id(t) not in seen:
                seen.add(id(t))
                positions.append(p)
        if not positions:
            raise ValueError("GradientTape: nothing was recorded")
        self.positions = positions  # output k is rec.marked[positions[k]]
        outs = [rec.marked[p] for p in positions]
        self.model = Functional(list(rec.inputs), outs, name="gradient_tape")
        self.model._output_losses = [None] * len(outs)
        self.out_of = {p: k for k, p in enumerate(positions)}
        self.input_grads = tuple(i for i, t in enumerate(rec.inputs) if id(t) in rec.watched)
        seeded = tuple(sorted({self.out_of[p] for p in target_positions}))
        self.executor = Executor(self.model, rec.batch, TRAIN, input_grads=self.input_grads,
                                 seeded=seeded)
        self.graph = self.executor.plan.graph
        self.variables = list(self.model._trainable_variables)
        self.step = None

    def output_id(self, rec, t):
        """The plan's tensor id of a recorded tensor (an input or an output), or None."""
        for k, p in enumerate(rec.inputs):
            if p is t:
                return self.graph.input_ids[k]
        k = self.out_of.get(rec._position.get(id(t)))
        return None if k is None else self.graph.output_ids[k]

    def forward(self, rec):
        ex = self.executor
        s = self.step = ex.step(rec.batch)
        for buf, host in zip(s.inputs, rec.arrays):
            kernels_numba.copy_from_host(buf, host.reshape(buf.shape))
        for v in self.variables:
            kops.fill(v.ensure_grad(), 0.0)
        ex.forward(s, rec.training)
        for p, buf in zip(self.positions, s.outputs):
            t = rec.marked[p]
            t._tape_value = kernels_numba.to_host(buf).reshape(_shape(t, rec.batch))
        return s

    def backward(self, rec, targets, seeds):
        """Seed the target outputs and run reverse mode; returns the reached tensor ids
        and the ids of the reached variables."""
        s = self.step
        ids = [self.output_id(rec, t) for t in targets]
        bufs = {tid: s.grads.get(tid) for tid in ids}
        for buf in bufs.values():
            if buf is not None:
                kops.fill(buf, 0.0)
        for t, tid, seed in zip(targets, ids, seeds):
            buf = bufs[tid]
            if buf is None:
                continue
            if seed is None:
                kops.axpy(buf, _ones(buf), 1.0) if _repeated(ids, tid) else kops.fill(buf, 1.0)
                continue
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
        return self._reached(ids)

    def _reached(self, target_ids):
        key = tuple(target_ids)
        found = self.__dict__.setdefault("_reach", {}).get(key)
        if found is None:
            found = self._reach[key] = self._walk(target_ids)
        return found

    def _walk(self, target_ids):
        """The tensors and variables the targets depend on (reverse over the calls)."""
        g = self.graph
        reach, weights = set(target_ids), set()
        for call in reversed(g.calls):
            if any(t in reach for t in call.outputs):
                reach.update(call.inputs)
                weights.update(id(w) for w in call.layer.trainable_weights)
        return reach, weights


def _repeated(ids, tid):
    return ids.count(tid) > 1


def _ones(buf):
    return kernels_numba.to_device(np.ones(buf.shape, np.float32),
                                   kernels_numba.device_of(buf))


def _shape(t, n):
    return tuple(n if d is None else d for d in t.shape)


def run_for(rec, targets=()):
    """The TapeRun for the recording's structure and these targets: kept from an
    earlier step with the same structure, else planned now."""
    positions = tuple(sorted({rec._position[id(t)] for t in targets}))
    watched = tuple(i for i, t in enumerate(rec.inputs) if id(t) in rec.watched)
    from kerasish.layers.layer import Layer

    # a trainable flag flipped anywhere plans again (as the engine's own plans do)
    key = (tuple(rec.key), rec.batch, tuple(a.shape for a in rec.arrays), watched, positions,
           Layer.trainable_changes, rec.arrays[0].dtype.str if rec.arrays else None)
    run = rec.run
    if run is not None and run.version == rec.version and run.key == key:
        return run
    run = _KEPT.pop(key, None)
    if run is None:
        run = TapeRun(rec, positions)
        run.key = key
    _KEPT[key] = run
    while len(_KEPT) > _MAX_KEPT:
        _KEPT.popitem(last=False)
    run.version = rec.version
    rec.run = run
    return run


def materialize(rec):
    """Every recorded tensor's value, by one forward run."""
    run_for(rec).forward(rec)


def trim(rec):
    """After its gradient, once no tape records into it or may ask again (persistent),
    drop the recording's nodes from their layers (only from the end of each list, so no
    other node's index moves): a training loop's layers do not grow a node per step."""
    if rec.open_tapes or rec.trimmed or rec.persistent or not rec.differentiated:
        return
    rec.trimmed = True
    mine = {id(n) for n in rec.nodes}
    for node in reversed(rec.nodes):
        nodes = node.layer._inbound_nodes
        while nodes and id(nodes[-1]) in mine:
            nodes.pop()
    rec.nodes = []
