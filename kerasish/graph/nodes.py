"""Symbolic tensors and nodes: what `layer(keras_tensor)` records.

A KerasTensor is a shape (None batch) and where it came from: `_keras_history =
(layer, node_index, tensor_index)`, the layer's `node_index`-th call and which of its
outputs. A Node is one call of a layer: its input tensors (flat, plus the structure
they were passed in: one tensor or a list) and its output tensors. Keras 3 works the
same way (keras/src/ops/node.py), so configs can name tensors as Keras does.
"""

import numpy as np


class KerasTensor:
    """A symbolic tensor: per-sample shape with a None batch, dtype and history."""

    def __init__(self, shape, dtype="float32", name=None, history=None):
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.dtype = dtype
        self.name = name
        self._keras_history = history

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def node(self):
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __array__(self, dtype=None, copy=None):
        if self.__dict__.get("_tape_rec") is None:
            raise TypeError(f"{self!r} is symbolic: it has no value until the model runs "
                            f"(call the model on arrays, or use predict)")
        value = _recording.value_of(self)  # a GradientTape's tensor: its value
        return value if dtype is None else value.astype(dtype)

    def numpy(self):
        """The value of a GradientTape's tensor (a symbolic tensor has none)."""
        return np.array(self.__array__())

    def __float__(self):
        return float(self.__array__())

    def __int__(self):
        return int(self.__array__())


class Node:
    """One call of `layer` on `inputs` (a KerasTensor or a list of them)."""

    def __init__(self, layer, inputs, output_shapes, multi_output):
        self.layer = layer
        self.input_structure = inputs
        self.input_tensors = flatten(inputs)
        self.is_input = getattr(layer, "_is_input_layer", False)  # keras.Input's node
        index = len(layer._inbound_nodes)
        self.output_tensors = [
            KerasTensor(shape, name=layer.name if not multi_output else f"{layer.name}_{i}",
                        history=(layer, index, i))
            for i, shape in enumerate(output_shapes)]
        self.multi_output = multi_output
        layer._inbound_nodes.append(self)
        if _recording.ANY:
            _recording.note_node(self)

    @property
    def outputs(self):
        """What the call returned: one tensor, or the list of them."""
        return list(self.output_tensors) if self.multi_output else self.output_tensors[0]

    @property
    def parent_nodes(self):
        return [t.node for t in self.input_tensors]

    @property
    def index(self):
        return self.layer._inbound_nodes.index(self)

    def __repr__(self):
        return f"<Node {self.layer.name}#{self.index}>"


def flatten(structure):
    """The KerasTensors (or arrays) of a tensor, a list/tuple or a dict, in order."""
    if isinstance(structure, dict):
        return [t for key in structure for t in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [t for item in structure for t in flatten(item)]
    return [structure]


def is_symbolic(structure):
    """True when every leaf is a KerasTensor; a mix is an error (names the leaves)."""
    leaves = flatten(structure)
    kinds = {isinstance(t, KerasTensor) for t in leaves}
    if kinds == {True, False}:
        raise ValueError("A layer was called on a mix of symbolic tensors (keras.Input "
                         "and layer outputs) and concrete arrays; expected only one kind")
    return kinds == {True}


from kerasish.tape import recording as _recording  # noqa: E402 (imports this module)
