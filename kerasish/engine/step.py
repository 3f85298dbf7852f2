"""Step: the views of every buffer of a plan for one concrete batch size, and the
forward and backward launch lists the executor runs (engine/executor.py)."""


from kerasish.engine import conv_pool
from kerasish.engine.plan import PREDICT, TRAIN
from kerasish.graph.memory import batched, elements

_CALL, _ZERO, _ADD, _COPY, _ACTIVITY, _POOLED = range(6)


def _rows_view(buf, n):
    return buf if buf.shape[0] == n else buf[:n]


def _pack(items, as_list):
    return list(items) if as_list else items[0]


class Step:
    """Views of every buffer for one concrete batch size n, and the launch lists."""

    def __init__(self, ex, n, slot=0):
        plan, g = ex.plan, ex.plan.graph
        self.n = n
        self.captures, self.ready = {}, {}  # mode -> (token, launch lists): Executor
        self.activity_done = set()  # calls whose activity penalty runs in backward
        self.acts = [self._view(ex, plan.act[t], g.shapes[t], n, slot) for t in
                     range(len(g.shapes))]
        self.inputs = [self.acts[t] for t in g.input_ids]
        self.outputs = [self.acts[t] for t in g.output_ids]
        self.output_rows = [o.reshape((o.size // o.shape[o.ndim - 1], o.shape[o.ndim - 1]))
                            if o.ndim else o.reshape((1, 1)) for o in self.outputs]
        self.n_rows = [o.shape[0] for o in self.output_rows]
        self.masks = [_rows_view(m, n) for m in ex.masks]
        self.forward = []
        fused = getattr(ex, "pooled_forward", {})
        pools = {pool: g.calls[conv].layer for conv, pool in fused.items()}
        for call, scratch in zip(g.calls, ex.call_scratch):
            # zero-copy layers and weights/constants (their buffer is the tensor) launch nothing
            if not getattr(call.layer, "aliases_input", False) and \
                    not hasattr(call.layer, "external_value"):
                layer = call.layer  # or a fused conv + pool's half (engine/conv_pool.py)
                if call.index in fused:
                    layer = conv_pool.ConvLinear(layer)
                elif call.index in pools:
                    layer = conv_pool.PoolReluBias(layer, pools[call.index])
                self.forward.append((layer, _pack([self.acts[t] for t in call.inputs],
                                                       call.list_input),
                                     _pack([self.acts[t] for t in call.outputs],
                                           call.list_output), scratch,
                                     self._mask(call.mask_in), self._mask(call.mask_out),
                                     call.shapes))
        if g.dynamic:  # last: the layers get their symbolic (None) shapes back
            self.forward.append((_Unbind(g), None, None, {}, None, None, None))
        self.losses, self.loss_outputs, self.targets = [], [], []
        self.sample_weights = []
        self.added = [self.acts[t] for t in g.added_ids]
        self.added_grads = []
        if ex.mode == PREDICT:
            return
        self.sample_weights = [None if w is None else _rows_view(w, r)
                               for w, r in zip(ex.weight_slots, self.n_rows)]
        targets = ex.target_slots[slot]
        self.targets = [None if tgt is None else _rows_view(tgt, r)
                        for tgt, r in zip(targets, self.n_rows)]
        grads = self.grads = {t: self._view(ex, st, g.shapes[t], n, slot)
                              for t, st in plan.grad.items()}
        self.added_grads = [grads[t] for t in g.added_ids
                            if plan.writers[t][:1] == [("added", t)]]
        for i, t in enumerate(g.output_ids):
            loss = plan.losses[i]
            if loss is None:
                continue
            rows = self.n_rows[i]
            dy = grads.get(t) if plan.writers[t][:1] == [("loss", i)] else None
            scratch = {k: _rows_view(v, rows) for k, v in ex.loss_scratch[i].items()}
            if getattr(loss, "wants_inputs", False):  # a compute_loss override reads x
                scratch["__inputs__"] = self.inputs
            self.losses.append((loss, self.output_rows[i], self.targets[i],
                                _rows_view(ex.per_row[i], rows), scratch,
                                ex.model._loss_weights[i] / rows,
                                None if dy is None else dy.reshape(self.output_rows[i].shape)))
            self.loss_outputs.append(i)
        if ex.mode == TRAIN:
            self._plan_backward(ex, plan, g, grads, n, slot)

    def _pooled_entry(self, ex, plan, grads, n, conv, pool):
        """The _POOLED entry: the conv's backward_pooled arguments (dx, the pool's dy, the
        conv's x, the pool's y and argmax, dz: the conv output gradient's storage)."""
        t_in = conv.inputs[0]
        dx = grads.get(t_in) if plan.needs[t_in] else None
        argmax = _rows_view(ex.call_scratch[pool.index]["argmax"], n)
        args = (dx, grads[pool.outputs[0]], self.acts[t_in], self.acts[pool.outputs[0]],
                argmax, grads[conv.outputs[0]])
        return (_POOLED, conv.layer, pool.layer, ex.call_scratch[conv.index], args)

    def _mask(self, k):
        return None if k is None else self.masks[k]

    @staticmethod
    def _view(ex, st, shape, n, slot):
        if st.external is not None:
            return st.external.reshape(shape)
        if st.slot_input is not None:
            return _rows_view(ex.input_slots[slot][st.slot_input], n).reshape((n, *shape[1:]))
        flat = ex.blocks[st.block]
        return flat[:elements(shape, n)].reshape((n, *shape[1:]) if batched(shape) else shape)

    def _plan_backward(self, ex, plan, g, grads, n, slot):
        self.backward, self.activity_done = [], set()
        pooled = getattr(ex, "pooled", {})
        pools = set(pooled.values())
        for call in reversed(g.calls):
            if not plan.runs[call.index] or call.index in plan.aliased_reads or \
                    call.index in pools:  # a fused pool: its conv's entry does its work
                continue
            if call.index in pooled:
                self.backward.append(self._pooled_entry(ex, plan, grads, n, call,
                                                        g.calls[pooled[call.index]]))
                continue
            for t in call.outputs:
                if t in plan.zero:
                    self.backward.append((_ZERO, grads[t]))
            dx, adds = [], []
            for pos, t in enumerate(call.inputs):
                temp = plan.temps.get((call.index, pos))
                if temp is not None:
                    buf = self._view(ex, temp, g.shapes[t], n, slot)
                    dx.append(buf)
                    if plan.needs[t]:
                        adds.append((_ADD, grads[t], buf))
                else:
                    dx.append(grads.get(t) if plan.needs[t] else None)
            dy = [grads[t] for t in call.outputs]
            act = ex.penalties.backward_entry(call.index, dy[0], self.acts[call.outputs[0]], n) \
                if ex.penalties.active else None
            if act is not None:  # an activity regularizer's gradient joins dy first
                self.backward.append((_ACTIVITY, act))
                self.activity_done.add(call.index)
            if getattr(call.layer, "aliases_input", False):
                if dx[0] is not None and dx[0] is not grads.get(call.outputs[0]) and \
                        plan.grad.get(call.inputs[0]) is not plan.grad.get(call.outputs[0]):
                    self.backward.append((_COPY, dx[0], dy[0].reshape(dx[0].shape)))
            else:
                self.backward.append((
                    _CALL, call.layer, _pack(dx, call.list_input), _pack(dy, call.list_output),
                    _pack([self.acts[t] for t in call.inputs], call.list_input),
                    _pack([self.acts[t] for t in call.outputs], call.list_output),
                    ex.call_scratch[call.index], self._mask(call.mask_in), call.shapes))
            self.backward.extend(adds)
        if g.dynamic:
            self.backward.append((_CALL, _Unbind(g), None, None, None, None, {}, None, None))


def _bound(call):
    """The call's layer, or (a graph binding concrete shapes) a view of it whose
    scratch_shapes sees this call's shapes and then gives the layer its own back: a plan
    made and never run (summary's dry run) leaves no call's shapes on the layer."""
    return call.layer if call.shapes is None else _BoundLayer(call)


class _BoundLayer:
    def __init__(self, call):
        self.call = call

    def scratch_shapes(self, batch_size):
        layer = self.call.layer
        own = layer.input_shape, layer.output_shape
        layer.input_shape, layer.output_shape = self.call.shapes
        try:
            return layer.scratch_shapes(batch_size)
        finally:
            layer.input_shape, layer.output_shape = own


class _Unbind:
    """The last entry of a dynamic graph's forward and backward lists: the executor binds
    each call's concrete shapes to its layer before running it; this puts the symbolic
    ones (None where keras.Input has None) back, so that model.summary(), get_config
    and saving after fit/predict see Keras's shapes, not the last batch's."""

    def __init__(self, graph):
        self.graph = graph

    def forward(self, y, x, training):
        for layer, input_shape, output_shape in self.graph.symbolic:
            layer.input_shape, layer.output_shape = input_shape, output_shape

    def backward(self, dx, dy, x, y):
        self.forward(None, None, False)
