"""The plan of one (model graph, batch size, mode), and the step that runs it.

Built once: the flat graph (nested models inlined, graph/topology.py), which tensors
need gradients, who writes each gradient (the loss first, then the consumers in
backward order: the first overwrites, later ones write a temporary that is added),
each buffer's lifetime and its block (graph/memory.py), every layer call's scratch,
and the input/target slots. A step then copies the batch in and runs a fixed list of
kernels_numba launches: nothing is allocated, nothing is decided. Smaller batches (the
last partial one) use row views of the same buffers, cached per (rows, slot).
On CUDA the trainer may feed the slots ahead through engine/feeder.py.
"""

import os
import warnings

import numpy as np

import kernels_numba
from kerasish.engine import conv_pool, fused_loss, launch_plan, regularization
from kerasish.engine.plan import PREDICT, TEST, TRAIN, Plan  # noqa: F401 (re-exported)
from kerasish.engine.step import _ACTIVITY, _ADD, _CALL, _POOLED, _ZERO, Step, _bound
from kerasish.engine.structure import WeightedTargets
from kerasish.graph.memory import plan_storage
from kerasish.graph.tracing import record_losses
from kernels_numba import ops


def _memory_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 64 << 30


# A plan larger than this is refused with the bytes it needs (not a MemoryError later).
MAX_PLAN_BYTES = int(os.environ.get("KERASISH_MAX_PLAN_BYTES", str(int(_memory_bytes() * 0.8))))


def _bytes(shape, dtype=np.float32):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class Executor:
    """Buffers and step functions for one model, one batch size and one mode."""

    def __init__(self, model, batch_size, mode, allocate=True, signature=None, weighted=False,
                 input_grads=(), seeded=False):
        self.model, self.mode, self.batch_size = model, mode, int(batch_size)
        self.device, self.signature, self.weighted = model.device, signature, weighted
        self._allocate = allocate  # False: only the size table (summary)
        self.plan = Plan(model, self.batch_size, mode, signature, input_grads, seeded)
        if allocate:  # the size table first: refuse before allocating anything
            self._allocate = False
            self._buffers()
            total = sum(self.planned_bytes().values())
            if total > MAX_PLAN_BYTES:
                raise MemoryError(
                    f"Model '{model.name}': a {mode} step at batch size {self.batch_size} "
                    f"needs {total:,} bytes of buffers; the limit is {MAX_PLAN_BYTES:,} "
                    f"(KERASISH_MAX_PLAN_BYTES); use a smaller batch_size or smaller inputs")
            self._allocate = True
        self._buffers()
        self.steps = {}
        self._feeder = None
        # the optimizer's list, fixed with the plan (model.trainable_weights walks the layers)
        self._variables = model._trainable_variables if mode == TRAIN else []
        from kerasish.layers.layer import Layer

        self.trainable_token = Layer.trainable_changes  # the flags this plan was made with
        if mode == TRAIN and not self._variables and not input_grads and seeded is False:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        self._replay = launch_plan.REPLAY and allocate and launch_plan.launches_only(self)
        self._random_layers = launch_plan.random_layers(self)

    def _buffers(self):
        """Every buffer of the plan, recorded in `sizes` (and allocated unless a dry run)."""
        plan = self.plan
        g, b = plan.graph, self.batch_size
        self.sizes = []  # (kind, name, shape, dtype): every buffer this plan allocates
        block_sizes = plan_storage(plan.storages())
        self.blocks = [self._alloc("activations and gradients", f"block {k}", (size,),
                                   np.float32) for k, size in enumerate(block_sizes)]
        self.call_scratch = [
            {name: self._alloc("scratch", f"{call.layer.name}/{name}", shape, dt)
             for name, (shape, dt) in _bound(call).scratch_shapes(b).items()}
            for call in g.calls]
        self.masks = [self._alloc("masks", f"mask {k}", (b, *shape[1:]), np.float32)
                      for k, shape in enumerate(g.mask_shapes)]
        self.input_slots = [[self._alloc("inputs", f"input {i}", (b, *g.shapes[t][1:]),
                                         np.float32) for i, t in enumerate(g.input_ids)]]
        self.target_slots, self.per_row, self.loss_scratch, self.output_rows = [[]], [], [], []
        self.weight_slots = []  # per-row sample weights per output (a weighted plan)
        for i, t in enumerate(g.output_ids):
            shape = g.shapes[t]
            rows = b * int(np.prod(shape[1:-1], dtype=np.int64))
            self.output_rows.append(rows)
            loss = plan.losses[i]
            if loss is None:
                self.target_slots[0].append(None)
                self.per_row.append(None)
                self.loss_scratch.append({})
                self.weight_slots.append(None)
                continue
            self.weight_slots.append(self._alloc("targets", f"sample weights {i}", (rows,),
                                                 np.float32) if self.weighted else None)
            target = ((rows,), np.int32) if loss.sparse else ((rows, shape[-1]), np.float32)
            self.target_slots[0].append(self._alloc("targets", f"target {i}", *target))
            self.per_row.append(self._alloc("losses", f"loss {i}", (rows,), np.float32))
            self.loss_scratch.append({
                k: self._alloc("losses", f"loss {i}/{k}", shape_, dt) for k, (shape_, dt)
                in loss.scratch_shapes(rows, shape[-1]).items()})
        # softmax + sparse CE outputs: one fused launch per training step
        self.fused = fused_loss.find(self) if self.mode == TRAIN else {}
        # Conv2D(relu) -> MaxPooling2D: one backward launch for the pair; the conv's
        # epilogue done by the pool's forward
        self.pooled = conv_pool.find(self) if self.mode == TRAIN else {}
        self.pooled_forward = conv_pool.find_forward(self, self.pooled)
        self.penalties = regularization.Penalties(self) if self.mode != PREDICT else None

    def _alloc(self, kind, name, shape, dtype):
        self.sizes.append((kind, name, tuple(shape), np.dtype(dtype)))
        if not self._allocate:
            return None
        return kernels_numba.empty(tuple(shape), dtype, self.device)

    # -- compatibility with the one-input, one-output feeder -----------------------------

    @property
    def x_slots(self):
        return [slot[0] for slot in self.input_slots]

    @property
    def y_slots(self):
        return [slot[0] for slot in self.target_slots if slot and slot[0] is not None]

    @property
    def x(self):
        return self.input_slots[0][0]

    @property
    def y_true(self):
        return self.target_slots[0][0]

    def planned_bytes(self):
        out = {}
        for kind, _, shape, dtype in self.sizes:
            out[kind] = out.get(kind, 0) + _bytes(shape, dtype)
        return out

    # -- steps ----------------------------------------------------------------------------

    def step(self, n, slot=0):
        """Cached views for batch size n and input slot (at most 2 sizes x 2 slots)."""
        s = self.steps.get((n, slot))
        if s is None:
            if n > self.batch_size:
                raise ValueError(f"batch of {n} samples exceeds the planned batch size "
                                 f"{self.batch_size}")
            s = self.steps[(n, slot)] = Step(self, n, slot)
        return s

    def feeder(self):
        """The double-buffered async input of this executor (created once; CUDA path)."""
        if self._feeder is None:
            from kerasish.engine.feeder import DeviceFeeder

            self._feeder = DeviceFeeder(self)
        return self._feeder

    def input_buffers(self, n):
        """The CPU plan's input buffers for a batch of n samples, which fit's own loader
        gathers x into (`load` then copies nothing), or None on CUDA."""
        if self.device != kernels_numba.CPU or n > self.batch_size:
            return None
        return self.step(n).inputs

    def load(self, s, xs, ys=None, ws=None):
        for dst, x in zip(s.inputs, xs):
            if x is not dst:  # else gathered in place (input_buffers)
                kernels_numba.copy_from_host(dst, x)
        if ys is not None:
            for dst, y in zip(s.targets, ys):
                if dst is not None and y is not None:
                    kernels_numba.copy_from_host(dst, np.reshape(y, dst.shape))
        for dst, w in zip(s.sample_weights, ws or ()):
            if dst is not None:
                kernels_numba.copy_from_host(dst, np.broadcast_to(
                    np.reshape(w, (len(w), -1)), (len(w), dst.size // len(w))).reshape(dst.shape))

    def _begin(self, x, y):
        """Views for this batch, its input on the device: a Staged batch (feeder) only
        makes the compute stream wait for its copy; a host batch is copied now."""
        if hasattr(x, "slot"):
            if x.feeder.ex is not self:  # its data lies in another plan's slot
                raise RuntimeError(f"Executor: expected a batch staged for this plan (batch "
                                   f"size {self.batch_size}); received one staged for batch "
                                   f"size {x.feeder.ex.batch_size}")
            s = self.step(x.n, x.slot)
            x.wait()
            return s
        xs = list(x) if isinstance(x, (list, tuple)) else [x]
        ws = None
        if isinstance(y, WeightedTargets):
            y, ws = y.targets, y.weights
        ys = None if y is None else (list(y) if isinstance(y, (list, tuple)) else [y])
        s = self.step(len(xs[0]))
        self.load(s, xs, ys, ws)
        return s

    @staticmethod
    def _end(x):
        if hasattr(x, "slot"):
            x.release()

    def forward(self, s, training):
        for layer, x, y, scratch, mask, mask_out, shapes in s.forward:
            layer.scratch = scratch  # per call: a shared layer has one set per call
            if shapes is not None:  # a dynamic graph: this call's concrete shapes
                layer.input_shape, layer.output_shape = shapes
            if mask is None:
                layer.forward(y, x, training)
            else:
                layer.forward(y, x, training, mask=mask)
            if mask_out is not None:  # a producer's write_mask (compute_mask: the old name)
                (getattr(layer, "write_mask", None) or layer.compute_mask)(mask_out, x)

    def backward(self, s):
        for entry in s.backward:
            kind = entry[0]
            if kind == _CALL:
                _, layer, dx, dy, x, y, scratch, mask, shapes = entry
                layer.scratch = scratch
                if shapes is not None:
                    layer.input_shape, layer.output_shape = shapes
                if mask is None:
                    layer.backward(dx, dy, x, y)
                else:
                    layer.backward(dx, dy, x, y, mask=mask)
            elif kind == _POOLED:  # a Conv2D(relu) and its MaxPooling2D (engine/conv_pool.py)
                _, layer, pool, scratch, args = entry
                layer.scratch = scratch
                layer.backward_pooled(pool, *args)
            elif kind == _ADD:
                ops.axpy(entry[1], entry[2], 1.0)
            elif kind == _ACTIVITY:
                self.penalties.run_activity(entry[1])
            elif kind == _ZERO:
                ops.fill(entry[1], 0.0)
            else:
                ops.copy(entry[1], entry[2])

    def train_step(self, x, y, apply=True):
        """Forward, losses, backward and (unless apply=False: gradients only, left in
        each variable's `.grad`) the optimizer update for one batch."""
        model = self.model
        s = self._begin(x, y)
        for f in self.fused.values():
            f.defer(True)  # its logits go to the fused loss (engine/fused_loss.py)
        reg = self.penalties
        try:
            reg.begin()
            ready = launch_plan.replayable(self, s, TRAIN)
            fused = self.fused
            if ready:
                launch_plan.advance_random(self)
                ready[0].replay()
                ready[1].replay()
            else:
                fwd = launch_plan.captured(self, lambda: self.forward(s, True))
                loss = launch_plan.captured(self, lambda: fused_loss.launch(self, s, fused))
            fused_loss.count(self, s, fused)
            self._loss_and_metrics(s)
            for k, (loss_, y_pred, y_true, _, scratch, scale, dy_pred) in enumerate(s.losses):
                if dy_pred is not None and s.loss_outputs[k] not in fused:
                    loss_.backward(dy_pred, y_pred, y_true, scale, scratch)
                    weights = s.weighting[s.loss_outputs[k]]
                    if weights is not None:
                        ops.scale_rows(dy_pred, weights)
            for grad in s.added_grads:
                ops.fill(grad, 1.0)
            if ready:
                ready[2].replay()
            else:
                bwd = launch_plan.captured(self, lambda: self.backward(s))
            if reg.active:  # regularizers: their penalties and gradients
                reg.add_activity_values(s, s.activity_done)
                reg.add_weights(train=True)
                reg.finish(model, s.n, bool(s.added))
            dist = getattr(model, "_distribution", None)  # hook: kerasish.distribute
            if dist is not None:
                dist.reduce_gradients(s.n)  # mean over the ranks, before the update
            lists = ready or (fwd, loss, bwd)
            if apply and self._variables:  # Keras: no trainable weights, no update
                if len(lists) == 4:  # the update's host half, then its bound launches
                    model.optimizer.advance_step()
                    lists[3].replay()
                else:
                    lists += (launch_plan.captured(
                        self, lambda: model.optimizer.apply_in_place(self._variables)),)
                reg.constrain()
            if not ready:
                launch_plan.remember(self, s, TRAIN, *lists)
        finally:
            for f in self.fused.values():
                f.defer(False)
            self._end(x)

    def test_step(self, x, y):
        s = self._begin(x, y)
        try:
            ready = launch_plan.replayable(self, s, TEST)
            if ready:
                ready[0].replay()
            else:
                launch_plan.remember(self, s, TEST,
                                     launch_plan.captured(self, lambda: self.forward(s, False)))
            self._loss_and_metrics(s)
            if self.penalties.active:  # Keras's evaluate loss includes the penalties
                self.penalties.begin()
                self.penalties.add_activity_values(s)
                self.penalties.add_weights(train=False)
                self.penalties.finish(self.model, s.n, bool(s.added))
        finally:
            self._end(x)

    def predict_step(self, x):
        xs = list(x) if isinstance(x, (list, tuple)) else [x]
        s = self.step(len(xs[0]))
        self.load(s, xs)
        self.forward(s, False)
        if s.added:  # layer.losses: this call's add_loss values
            record_losses(self.plan.graph.added_owners,
                          [kernels_numba.to_host(v) for v in s.added])
        return [kernels_numba.to_host(o) for o in s.outputs]

    def _loss_and_metrics(self, s):
        model = self.model
        fused = getattr(self, "fused", {})
        for i, (loss, y_pred, y_true, per_row, scratch, _, _) in enumerate(s.losses):
            if s.loss_outputs[i] in fused:
                continue  # fused_loss.launch did this output's loss
            loss.forward(per_row, y_pred, y_true, scratch)
            weights = s.weighting[s.loss_outputs[i]]
            if weights is not None:  # Keras: sum(w * loss) / rows
                ops.multiply(per_row, per_row, weights)
            model._loss_trackers[s.loss_outputs[i]].update_from_losses(per_row, len(per_row))
        tracker = model._added_loss_tracker
        for value in s.added:  # add_loss scalars: the batch's rows times the value
            kernels_numba.ops.axpy(tracker.acc, value.reshape((1,)), float(s.n))
        if s.added:
            tracker.count += s.n
        for i, metrics in enumerate(model._output_metrics):
            if metrics:
                y_pred, y_true, rows = s.output_rows[i], s.targets[i], s.n_rows[i]
                counted = fused[i].metric if i in fused else None
                for metric in metrics:
                    if metric is not counted:
                        metric.update(y_pred, y_true, rows)
