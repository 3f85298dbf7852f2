"""Who writes what, when, and in which storage: the device-independent half of a plan.

Time runs over one step: forward call k at time k, the losses (and add_loss terms) at
K, backward of call k at 2K - k. From the flat graph this decides which tensors need
gradients, who writes each gradient (the loss first, then the consumers in backward
order: the first overwrites, later ones write a temporary that is added), which
backward calls run, and every storage's live interval (graph/memory.py places them).
"""

from kerasish.graph.memory import FOREVER, Storage, elements

TRAIN, TEST, PREDICT = "train", "test", "predict"


class Plan:
    """Who writes what, when, and in which storage (device-independent)."""

    def __init__(self, model, batch_size, mode, signature=None, input_grads=(), seeded=False):
        g = self.graph = model._flat_graph(signature)
        self.mode, self.batch_size, self.device = mode, batch_size, model.device
        k_calls = len(g.calls)
        self.bwd_time = lambda call: 2 * k_calls - call.index
        # input_grads (a traced loss: engine/traced_loss.py): gradients of these inputs
        # are wanted, every output is seeded by the caller instead of a loss (seeded: the
        # same without input gradients, a GradientTape's run: kerasish/tape/; a tuple
        # of output indices: only those outputs are seeded, the others are plain values)
        n_out = len(g.output_ids)
        seeds = [True] * n_out if seeded is True or (input_grads and seeded is False) else \
            [i in seeded for i in range(n_out)] if seeded else None
        seeded = seeds is not None
        losses = model._output_losses if mode != PREDICT and not seeded else \
            [None] * len(g.output_ids)
        self.losses = losses
        self._input_grads = [g.input_ids[i] for i in input_grads]
        self._grad_flow(g, [True if s else None for s in seeds] if seeded else losses,
                        mode == TRAIN)
        self._activations(g, k_calls, mode)
        self._gradients(g, k_calls)

    def _grad_flow(self, g, losses, train):
        """needs[t]: t's gradient matters; writers[t]; runs[call]: its backward runs."""
        needs = [False] * len(g.shapes)
        for t in self._input_grads:
            needs[t] = True
        self.runs = [False] * len(g.calls)
        self.writers = {t: [] for t in range(len(g.shapes))}
        if not train:
            self.needs = needs
            return
        for call in g.calls:
            flag = bool(call.layer.trainable_weights) or any(needs[t] for t in call.inputs)
            for t in call.outputs:
                needs[t] = flag
        for i, t in enumerate(g.output_ids):
            if losses[i] is not None and needs[t]:
                self.writers[t].append(("loss", i))
        for t in g.added_ids:  # add_loss: seeded with 1 at the losses' time
            if needs[t]:
                self.writers[t].append(("added", t))
        for call in reversed(g.calls):
            wants = bool(call.layer.trainable_weights) or any(needs[t] for t in call.inputs)
            run = wants and any(self.writers[t] for t in call.outputs)
            self.runs[call.index] = run
            if run:
                for pos, t in enumerate(call.inputs):
                    if needs[t]:
                        self.writers[t].append(("call", call.index, pos))
        self.needs = needs

    def _activations(self, g, k_calls, mode):
        b, self.act = self.batch_size, [None] * len(g.shapes)
        for i, t in enumerate(g.input_ids):
            self.act[t] = Storage(0, 0, 0)
            self.act[t].slot_input = i
        end = [0] * len(g.shapes)
        for call in g.calls:
            for t in call.inputs:
                end[t] = max(end[t], call.index)
                if self.runs[call.index]:
                    end[t] = max(end[t], self.bwd_time(call))
            for t in call.outputs:
                end[t] = call.index
                if self.runs[call.index]:
                    end[t] = self.bwd_time(call)
        for t in g.output_ids:
            end[t] = FOREVER if mode == PREDICT else max(end[t], k_calls)
        for t in g.added_ids:
            end[t] = max(end[t], k_calls)
        for call in g.calls:
            if getattr(call.layer, "aliases_input", False):
                st = self.act[call.inputs[0]]
                self.act[call.outputs[0]] = st
                if st.slot_input is None:
                    st.cover(0, call.index, end[call.outputs[0]])
                continue
            for t in call.outputs:
                self.act[t] = Storage(elements(g.shapes[t], b), call.index, end[t])
                if hasattr(call.layer, "external_value"):  # a weight or constant: its buffer
                    self.act[t].external = call.layer.external_value(self.device)
        for t, st in enumerate(self.act):  # aliases extend their storage's lifetime
            if st.slot_input is None:
                st.cover(0, st.start, end[t])

    def _gradients(self, g, k_calls):
        """Gradient storages, accumulation temporaries and zero-filled output gradients."""
        b, self.grad, self.temps, self.zero = self.batch_size, {}, {}, {}
        producer = {t: call for call in g.calls for t in call.outputs}
        self._alias_weight_gradients(g, b)
        for t in g.added_ids:
            if self.writers[t] and self.writers[t][0] == ("added", t) and t not in self.grad:
                end = self.bwd_time(producer[t]) if t in producer else k_calls
                self.grad[t] = Storage(elements(g.shapes[t], b), k_calls, end)
        for i, t in enumerate(g.output_ids):  # the loss writes first, at time K
            if self.writers[t] and self.writers[t][0] == ("loss", i):
                end = self.bwd_time(producer[t]) if t in producer else k_calls
                if t in self.grad:
                    self.grad[t].cover(0, k_calls, end)
                else:
                    self.grad[t] = Storage(elements(g.shapes[t], b), k_calls, end)
        for call in reversed(g.calls):  # output gradients exist before their producer runs
            if not self.runs[call.index]:
                continue
            t_b = self.bwd_time(call)
            for t in call.outputs:
                if t not in self.grad:  # nobody writes it: zeros, for this call only
                    self.grad[t] = self.zero[t] = Storage(elements(g.shapes[t], b), t_b, t_b)
            if getattr(call.layer, "aliases_input", False):
                t_in, t_out = call.inputs[0], call.outputs[0]
                if self.writers[t_in] == [("call", call.index, 0)] and t_out not in self.zero:
                    self.grad[t_in] = self.grad[t_out]  # zero-copy: same storage
                    self.grad[t_in].cover(0, t_b, self.bwd_time(producer[t_in]))
                    continue
            for pos, t in enumerate(call.inputs):
                sink = not self.needs[t] and getattr(call.layer, "needs_input_gradient", False)
                if not self.needs[t] and not sink:
                    continue
                size = elements(g.shapes[t], b)
                if sink or self.writers[t][0] != ("call", call.index, pos):
                    self.temps[(call.index, pos)] = Storage(size, t_b, t_b)
                elif t not in self.grad:
                    end = self.bwd_time(producer[t]) if t in producer else 2 * k_calls + 1
                    self.grad[t] = Storage(size, t_b, end)

    def _alias_weight_gradients(self, g, b):
        """A weight read once in a traced call() (ReadVariable) with one gradient writer:
        that writer writes the variable's `.grad` directly (it is zero at the start of
        each step: the optimizer update zeroes it), so no add launch is needed."""
        self.aliased_reads = set()
        reads = {}
        for call in g.calls:
            var = getattr(call.layer, "variable", None)
            if var is not None and hasattr(call.layer, "external_value"):
                reads.setdefault(id(var), []).append(call)
        for calls in reads.values():
            call = calls[0]
            t = call.outputs[0]
            if len(calls) == 1 and self.runs[call.index] and len(self.writers[t]) == 1 and \
                    call.layer.variable.grad is not None:
                st = self.grad[t] = Storage(elements(g.shapes[t], b), 0, 0)
                st.external = call.layer.variable.grad
                self.aliased_reads.add(call.index)

    def storages(self):
        seen, out = set(), []
        for st in [*self.act, *self.grad.values(), *self.temps.values()]:
            if st is not None and id(st) not in seen:
                seen.add(id(st))
                out.append(st)
        return out
