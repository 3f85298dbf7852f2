"""The order of a layer graph, its checks, and its flat form for the plan.

`map_graph(inputs, outputs)` gives the nodes to run and the layers in Keras 3's
order (by depth from the outputs, ties by first visit: keras/src/ops/function.py
computes the same order, which is what legacy .h5 files are matched by).
`flatten(model)` inlines nested models into one list of layer calls on integer
tensor ids: the form the memory plan and the executor work on.
`infer_output_shapes(graph, shapes)` re-runs a graph's shape inference for more specific
input shapes (a model built for None sizes, called on known ones: Keras does the same).
"""

from kerasish.graph.nodes import flatten as flatten_structure


def _post_order(inputs, outputs):
    """Nodes from inputs to outputs (iterative DFS: graphs may be 100,000 layers deep)."""
    input_ids = {id(t) for t in inputs}
    finished, in_progress, ordered, first_visit = set(), set(), [], {}
    for output in outputs:
        stack = [(output, False)]
        while stack:
            tensor, expanded = stack.pop()
            node = tensor.node
            if expanded:
                in_progress.discard(node)
                if node not in finished:
                    finished.add(node)
                    ordered.append(node)
                continue
            if node in finished:
                continue
            if node in in_progress:
                raise ValueError(f"Tensor {tensor} from layer '{node.layer.name}' is part "
                                 f"of a cycle")
            first_visit.setdefault(node.layer, len(first_visit))
            in_progress.add(node)
            stack.append((tensor, True))
            if not node.is_input and id(tensor) not in input_ids:
                for parent in reversed(node.input_tensors):
                    stack.append((parent, False))
    return ordered, first_visit


def map_graph(inputs, outputs, model_name, unused_inputs="error"):
    """(nodes to run in order, layers in Keras's order) after checking the graph."""
    ordered, first_visit = _post_order(inputs, outputs)
    input_ids = {id(t) for t in inputs}
    for node in ordered:
        if node.is_input and not any(id(t) in input_ids for t in node.output_tensors):
            raise ValueError(
                f"Model '{model_name}': graph disconnected: the outputs depend on the input "
                f"'{node.layer.name}' (shape {node.output_tensors[0].shape}), which is not "
                f"one of the model's inputs {[t.name for t in inputs]}")
    members = set(ordered)
    node_depth, layer_depth = {}, {}
    for node in reversed(ordered):
        depth = max(node_depth.setdefault(node, 0), layer_depth.get(node.layer, 0))
        layer_depth[node.layer] = node_depth[node] = depth
        if id_set_contains(input_ids, node):
            continue
        for parent in node.parent_nodes:
            if parent in members:
                node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for tensor in inputs:
        layer = tensor.node.layer
        if layer not in layer_depth and unused_inputs == "allow":
            layer_depth[layer], first_visit[layer] = 0, len(first_visit)
        elif layer not in layer_depth:
            raise ValueError(f"Model '{model_name}': input '{layer.name}' is not used by "
                             f"any output; expected every input to feed the outputs")
    position = {node: k for k, node in enumerate(ordered)}
    nodes = sorted((n for n in ordered if not n.is_input),
                   key=lambda n: (-node_depth[n], position[n]))
    layers = sorted(layer_depth, key=lambda layer: (-layer_depth[layer], first_visit[layer]))
    names = [layer.name for layer in layers]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"Model '{model_name}': layer names must be unique; the names "
                         f"{dup} are used more than once")
    return nodes, layers


def infer_output_shapes(graph, input_shapes):
    """The output shapes of `graph` (a model or a Trace: inputs, _nodes, outputs) for
    `input_shapes`, every node's compute_output_shape in run order, nested models and
    traced calls through their own graphs (the walk FlatGraph._inline makes)."""
    shapes = {id(t): tuple(s) for t, s in zip(graph.inputs, input_shapes)}
    for node in graph._nodes:
        ins = [shapes.get(id(t), tuple(t.shape)) for t in node.input_tensors]
        inner = _nested_graph(node)
        if inner is not None:
            outs = infer_output_shapes(inner, ins)
        else:
            as_list = isinstance(node.input_structure, (list, tuple))
            out = node.layer.compute_output_shape(ins if as_list else (ins[0] if ins else ()))
            outs = [tuple(o) for o in out] if node.multi_output else [tuple(out)]
        for t, shape in zip(node.output_tensors, outs):
            shapes[id(t)] = shape
    return [shapes.get(id(t), tuple(t.shape)) for t in graph.outputs]


def _nested_graph(node):
    """The graph a node runs when inlined: a traced call()'s Trace or a nested model."""
    inner = getattr(node, "trace", None)  # a traced call() (graph/tracing.py)
    if inner is None and getattr(node.layer, "_is_graph_model", False):
        inner = node.layer
    return inner


def id_set_contains(input_ids, node):
    """A node whose output is a model input is where the walk stops (sub-graphs)."""
    return any(id(t) in input_ids for t in node.output_tensors)


class Call:
    """One layer call of the flat graph: integer tensor ids in and out; `mask_in` is the
    mask id the layer reads (supports_masking), `mask_out` the one it writes."""

    __slots__ = ("layer", "inputs", "outputs", "list_input", "list_output", "index",
                 "mask_in", "mask_out", "shapes", "symbolic")

    def __init__(self, layer, inputs, outputs, list_input, list_output, index):
        self.layer, self.inputs, self.outputs = layer, inputs, outputs
        self.list_input, self.list_output, self.index = list_input, list_output, index
        self.mask_in = self.mask_out = None
        self.shapes = None  # (input shape(s), output shape(s)) in a concrete graph
        self.symbolic = None  # the same from the layer's node (None sizes kept)

    def __repr__(self):
        return f"Call({self.layer.name}, {self.inputs} -> {self.outputs})"


class FlatGraph:
    """Every layer call of a model, nested models inlined, in execution order."""

    def __init__(self, model, input_shapes=None):
        self.calls, self.shapes = [], []
        self.mask_of, self.mask_shapes = {}, []  # tensor id -> mask id; mask id -> shape
        self.added_ids = []  # scalars from add_loss, added to the training loss
        self.added_owners = []  # the layer whose add_loss gave each
        self.input_ids = [self._new_tensor(t.shape) for t in model.inputs]
        self.output_ids = self._inline(model, self.input_ids)
        if input_shapes is None and self._has_none() and \
                not any(None in tuple(t.shape[1:]) for t in model.inputs):
            # known input sizes, a None size inside (a model built for None sizes, called
            # on known ones): the inner calls' sizes follow from the model's own inputs
            input_shapes = [tuple(t.shape[1:]) for t in model.inputs]
        self.dynamic = input_shapes is not None  # calls bind their concrete shapes
        self.symbolic = []  # (layer, input shape, output shape) before binding: _concrete
        if self.dynamic:
            self._concrete(input_shapes)
        # a None size left: known only from the data (the model plans per signature)
        self.has_none = self._has_none()

    def _has_none(self):
        return any(s and s[0] is None and None in s[1:] for s in self.shapes)

    def _concrete(self, input_shapes):
        """Sizes known only from the data (None in keras.Input): every call's shapes
        for these per-sample input shapes; `call.shapes` is bound to the layer before
        the plan asks it for scratch and before each of its launches."""
        # the layers' own symbolic shapes (their nodes'), put back after each run:
        # summary and saving read layer.input_shape / output_shape
        self.symbolic = list({id(c.layer): (c.layer, *c.symbolic) for c in self.calls}.values())
        for t, shape in zip(self.input_ids, input_shapes):
            self.shapes[t] = (None, *shape)
        for call in self.calls:
            ins = [self.shapes[t] for t in call.inputs]
            in_struct = ins if call.list_input else (ins[0] if ins else ())
            out = call.layer.compute_output_shape(in_struct)
            outs = [tuple(o) for o in out] if call.list_output else [tuple(out)]
            for t, shape in zip(call.outputs, outs):
                self.shapes[t] = shape
            call.shapes = (in_struct, outs if call.list_output else outs[0])
            if call.mask_out is not None:
                self.mask_shapes[call.mask_out] = tuple(call.layer.mask_shape(in_struct))

    def _masks(self, call, input_shape):
        """Keras's mask flow: producers (Embedding(mask_zero), Masking) make one, layers
        that propagate pass their input's on, consumers read it."""
        layer, first = call.layer, self.mask_of.get(call.inputs[0]) if call.inputs else None
        if getattr(layer, "supports_masking", False) and first is not None:
            call.mask_in = first
        if getattr(layer, "produces_mask", False):
            self.mask_shapes.append(tuple(layer.mask_shape(input_shape)))
            call.mask_out = len(self.mask_shapes) - 1
            self.mask_of[call.outputs[0]] = call.mask_out
        elif first is not None and getattr(layer, "propagates_mask", False):
            for t in call.outputs:
                self.mask_of[t] = first

    def _new_tensor(self, shape):
        self.shapes.append(tuple(shape))
        return len(self.shapes) - 1

    def _inline(self, model, input_ids):
        ids = {id(t): k for t, k in zip(model.inputs, input_ids)}
        for node in model._nodes:
            ins = [ids[id(t)] for t in node.input_tensors]
            inner = _nested_graph(node)
            if inner is not None:
                outs = self._inline(inner, ins)
            else:
                outs = [self._new_tensor(t.shape) for t in node.output_tensors]
                call = Call(node.layer, ins, outs,
                            isinstance(node.input_structure, (list, tuple)),
                            node.multi_output, len(self.calls))
                ins_, outs_ = ([tuple(t.shape) for t in ts] for ts in
                               (node.input_tensors, node.output_tensors))
                call.symbolic = (ins_ if call.list_input else (ins_[0] if ins_ else ()),
                                 outs_ if call.list_output else outs_[0])
                self.calls.append(call)
                self._masks(call, node.input_tensors[0].shape if ins else None)
            for t, k in zip(node.output_tensors, outs):
                ids[id(t)] = k
        self.added_ids += [ids[id(t)] for t in getattr(model, "added", ())]
        self.added_owners += [getattr(t, "_loss_owner", None) for t in getattr(model, "added", ())]
        return [ids[id(t)] for t in model.outputs]

    def consumers(self):
        """tensor id -> the calls reading it, in execution order."""
        out = {k: [] for k in range(len(self.shapes))}
        for call in self.calls:
            for k in call.inputs:
                out[k].append(call)
        return out


def structure_like(structure, values):
    """`values` (flat) packed like `structure` (one item, a list, or a dict)."""
    it = iter(values)

    def pack(s):
        if isinstance(s, dict):
            return {k: pack(v) for k, v in s.items()}
        if isinstance(s, (list, tuple)):
            return [pack(v) for v in s]
        return next(it)

    out = pack(structure)
    return out


__all__ = ["map_graph", "FlatGraph", "Call", "flatten_structure", "structure_like"]
