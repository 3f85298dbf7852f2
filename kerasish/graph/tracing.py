"""Tracing `call()`: a layer (or a subclassed Model) written with keras.ops and other
layers becomes a graph, once per input signature.

`call()` runs on symbolic inputs (private InputLayers); every op and layer call
inside records a node, so the result is a small graph with the same parts as a
functional model: inputs, the nodes that lead to the outputs, outputs. A node of the
traced layer carries that Trace, and the plan inlines it like a nested model: forward
is the ops' launches, backward is reverse-mode over the same nodes, each gradient
rule a kernels_numba launch. Layers defining forward/backward instead are called as
they are (fused built-in kernels).
"""

import inspect

from kerasish.graph import topology
from kerasish.graph.nodes import KerasTensor, flatten

_owners = []  # layers whose call() is being traced, innermost last
_added = []  # per trace in progress: tensors given to add_loss
_effects = []  # per trace in progress: state updates (Variable.assign_add) to run


def current_owner():
    """The layer whose call() is running (its weights become ReadVariable nodes)."""
    return _owners[-1] if _owners else None


class Trace:
    """One traced call(): inputs, nodes in run order, outputs (and their structure), and
    the tensors given to add_loss (scalars added to the model's loss)."""

    def __init__(self, inputs, outputs, structure, nodes, added=()):
        self.inputs, self.outputs, self.structure, self._nodes = inputs, outputs, structure, \
            nodes
        self.added = list(added)


def add_loss(layer, value):
    """layer.add_loss(value) while tracing: value joins the trace's added losses."""
    from kerasish.ops import sum as ops_sum

    if not _added:
        raise ValueError(f"Layer '{layer.name}': add_loss with a symbolic tensor outside "
                         f"call()")
    if tuple(value.shape):  # Keras sums a non-scalar loss
        value = ops_sum(value)
    value._loss_owner = layer  # whose `losses` an eager run's value joins
    _added[-1].append(value)


def record_losses(owners, values):
    """An eager run's add_loss values (host copies) into their layers' `losses`:
    each owner keeps its terms of this, its last, call (Keras clears them per call)."""
    import numpy as np

    from kerasish.ops.operation import eager

    for owner in owners:
        if owner is not None:
            owner._losses = []
    for owner, value in zip(owners, values):
        if owner is not None:
            owner._losses.append(eager(np.asarray(value, np.float32).reshape(())))


def is_traced(layer):
    """A layer whose behaviour is its call() (not an explicit forward/backward pair)."""
    from kerasish.layers.custom_activation import has_custom_activation
    from kerasish.layers.layer import Layer

    if has_custom_activation(layer):  # activation=<a user function>: kernels, then ops
        return not getattr(layer, "_is_graph_model", False)
    cls = type(layer)
    return callable(getattr(cls, "call", None)) and cls.forward is Layer.forward and \
        not getattr(layer, "_is_graph_model", False)


def _signature(input_shape):
    return repr(input_shape)


def _call(layer, args):
    from kerasish.layers import custom_activation

    kwargs = {}
    if custom_activation.has_custom_activation(layer):
        target = lambda inputs: custom_activation.call(layer, inputs)  # noqa: E731
        params = {}
    else:
        target = layer.call
        params = inspect.signature(layer.call).parameters
    if "training" in params:
        kwargs["training"] = None  # the plan passes the mode to the layers inside
    if "mask" in params:
        kwargs["mask"] = None
    _owners.append(layer)
    _added.append([])
    _effects.append([])
    try:
        # state updates (assign_add in call(), e.g. the guide's ComputeSum) run with the
        # graph like the losses given to add_loss
        if layer.__dict__.get("_positional_call") and isinstance(args, list):
            return target(*args, **kwargs), _added[-1], _effects[-1]  # call(a, b, ...)
        return target(args, **kwargs), _added[-1], _effects[-1]
    finally:
        _owners.pop()
        _added.pop()
        _effects.pop()


def symbolic_inputs(layer, input_shape):
    """Private keras.Input tensors for `input_shape` (one shape or a list of shapes)."""
    from kerasish.layers.input_layer import InputLayer

    shapes = input_shape if isinstance(input_shape, list) else [input_shape]
    tensors = []
    for k, shape in enumerate(shapes):
        inp = InputLayer(shape=tuple(shape[1:]), name=f"__{layer.name}_input_{k}")
        tensors.append(inp.output)
    return tensors, (tensors if isinstance(input_shape, list) else tensors[0])


def trace(layer, input_shape):
    """The Trace of layer.call for `input_shape` (built and cached on first use)."""
    traces = layer.__dict__.setdefault("_traces", {})
    key = _signature(input_shape) + ("*" if layer.__dict__.get("_positional_call") else "")
    found = traces.get(key)
    if found is not None:
        return found
    if not layer.built:
        layer.build(input_shape)
        layer.built = True
    inputs, args = symbolic_inputs(layer, input_shape)
    structure, added, effects = _call(layer, args)
    structure = _variables_as_tensors(structure, layer)
    outputs = flatten(structure)
    if not outputs or not all(isinstance(t, KerasTensor) for t in outputs):
        kinds = sorted({type(t).__name__ for t in outputs})
        raise TypeError(f"Layer '{layer.name}': call() must return tensors built with "
                        f"keras.ops or layers from its inputs (symbolic while tracing); it "
                        f"returned {kinds or 'nothing'}. NumPy functions cannot be traced: "
                        f"use kerasish.ops")
    nodes, _ = topology.map_graph(inputs, outputs + added + effects, layer.name,
                                  unused_inputs="allow")
    found = traces[key] = Trace(inputs, outputs, structure, nodes, added)
    return found


def record_effect(tensor):
    """A state update's node (graph/ops state ops) to run with the traced graph."""
    if not _effects:
        raise ValueError("a variable update with a symbolic value outside a traced "
                         "update_state")
    _effects[-1].append(tensor)


class capture_effects:
    """`with capture_effects() as effects:` traces a function whose variable updates
    become graph nodes (a Metric's update_state)."""

    def __enter__(self):
        _effects.append([])
        return _effects[-1]

    def __exit__(self, *exc):
        _effects.pop()
        return False


def _variables_as_tensors(structure, owner):
    """A Variable returned by call() (the guide's ComputeSum) is read as a tensor."""
    from kerasish.ops.operation import as_tensor
    from kerasish.variables import Variable

    if isinstance(structure, Variable):
        return as_tensor(structure, owner)
    if isinstance(structure, (list, tuple)):
        return [_variables_as_tensors(s, owner) for s in structure]
    if isinstance(structure, dict):
        return {k: _variables_as_tensors(v, owner) for k, v in structure.items()}
    return structure


def output_shapes(found):
    shapes = [tuple(t.shape) for t in found.outputs]
    return shapes if isinstance(found.structure, (list, tuple, dict)) else shapes[0]
