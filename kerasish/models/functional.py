"""Functional: `keras.Model(inputs, outputs)`, a model over any layer graph.

Inputs and outputs may be one tensor, a list, or a dict (by name). The graph is
checked and ordered once here (graph/topology.py); the plan (engine/executor.py)
inlines nested models, runs shared layers once per call and sums their gradients.
Its config is Keras 3's "Functional" form (graph/functional_config.py).
"""

from kerasish.engine import structure
from kerasish.graph import topology
from kerasish.graph.nodes import KerasTensor, flatten
from kerasish.layers.input_layer import InputLayer
from kerasish.models.model import Model


class _BuiltinNode:
    """A functional model's node 0 (inputs -> outputs), as tf.keras 2 and early Keras 3
    made one: its calls in other graphs are nodes 1, 2, ... here. Configs count them as
    the file's Keras does (graph/functional_config.py)."""

    is_input = False

    def __init__(self, model):
        self.layer = model
        self.input_tensors = list(model.inputs)
        self.output_tensors = list(model.outputs)
        self.input_structure = model._inputs_struct
        self.multi_output = len(model.outputs) > 1
        self.outputs = model._outputs_struct


class Functional(Model):
    _unused_inputs = "error"  # an engine graph (engine/compute_loss.py) may allow them

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        if kwargs:
            raise TypeError(f"Model: unexpected arguments {sorted(kwargs)}")
        self._layers = []
        self._inputs_struct = _structure(inputs, "inputs")
        self._outputs_struct = _structure(outputs, "outputs")
        self.inputs = flatten(self._inputs_struct)
        self.outputs = flatten(self._outputs_struct)
        for t in self.inputs:
            if not isinstance(t.node.layer, InputLayer):
                raise ValueError(f"Model: every input must be a tensor from keras.Input; "
                                 f"received {t} made by layer '{t.node.layer.name}'")
        self._init_model(name, True)
        self._nodes, self._layers = topology.map_graph(self.inputs, self.outputs, self.name,
                                                       unused_inputs=self._unused_inputs)
        if len({id(t) for t in self.outputs}) != len(self.outputs):
            raise ValueError(f"Model '{self.name}': the same tensor is listed twice in "
                             f"outputs; expected distinct output tensors")
        self.built = True
        self.input_shape = _unpack([t.shape for t in self.inputs])
        self.output_shape = _unpack([t.shape for t in self.outputs])
        self._set_device()
        self._inbound_nodes.append(_BuiltinNode(self))
        if not trainable:
            self.trainable = False

    @property
    def layers(self):
        return list(self._layers)

    def _build_once(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        expected = [t.shape for t in self.inputs]
        if len(shapes) != len(expected) or not all(structure.shapes_fit(a, b)
                                                   for a, b in zip(shapes, expected)):
            raise ValueError(f"Model '{self.name}' expects input shape(s) "
                             f"{_unpack(expected)}; received {input_shape}")
        return self.compute_output_shape(input_shape)

    def build(self, input_shape=None):
        """Built at construction (Keras semantics: a no-op)."""

    def get_config(self):
        from kerasish.graph import functional_config

        return functional_config.get_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kerasish.graph import functional_config

        return functional_config.from_config(cls, config, custom_objects)


def _structure(value, what):
    if isinstance(value, dict):
        for key, t in value.items():
            _check_tensor(t, f"{what}[{key!r}]")
        return dict(value)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"Model: `{what}` must not be empty")
        for k, t in enumerate(value):
            _check_tensor(t, f"{what}[{k}]")
        return list(value)
    _check_tensor(value, what)
    return value


def _check_tensor(t, what):
    if not isinstance(t, KerasTensor):
        raise ValueError(f"Model: `{what}` must be a symbolic tensor (from keras.Input or a "
                         f"layer call on one); received {type(t).__name__}"
                         f"{' of shape ' + str(t.shape) if hasattr(t, 'shape') else ''}")


def _unpack(shapes):
    return shapes[0] if len(shapes) == 1 else shapes
