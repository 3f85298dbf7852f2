"""Sequential: a linear stack of layers, the chain case of the layer graph."""

from kerasish import layers as klayers
from kerasish.engine import structure
from kerasish.graph.nodes import KerasTensor
from kerasish.layers.input_layer import InputLayer
from kerasish.layers.layer import Layer, unique_name
from kerasish.models.model import Model


class Sequential(Model):
    """`Sequential([layers...])` or `model.add(layer)`; Keras semantics.

    When the input shape is known (an Input/InputLayer, `input_shape=` on the first
    layer, `build(...)`, or the first fit) each layer is called on the previous
    layer's output tensor once: shapes are inferred and checked, weights are created
    on the current device (kerasish.config). `add` calls only the new layer, so a
    model of n layers is built in O(n).
    """

    def __init__(self, layers=None, trainable=True, name=None):
        self._layers = []
        self._layer_names = set()  # add's unique-name check in O(1), not a scan per add
        self._input_layer = None
        self.inputs, self.outputs, self._nodes = [], [], []
        self._init_model(name or unique_name("sequential"), trainable)
        for layer in layers or []:
            self.add(layer)

    # -- structure ----------------------------------------------------------------------

    @property
    def layers(self):
        return list(self._layers)

    @property
    def _inputs_struct(self):
        return self.inputs[0] if self.inputs else None

    @property
    def _outputs_struct(self):
        return self.outputs[0] if self.outputs else None

    def add(self, layer):
        if isinstance(layer, KerasTensor) and isinstance(layer.node.layer, InputLayer):
            layer = layer.node.layer  # keras.Input(...) as the first entry
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. "
                            f"Received: layer={layer!r} of type {type(layer)}.")
        if isinstance(layer, InputLayer):
            if self._input_layer is not None or self._layers:
                raise ValueError("Sequential: an InputLayer can only be the first layer")
            self._input_layer = layer
            return
        self._add_unbuilt(layer)
        if self.built:
            self._append_call(layer)
        elif self._input_layer is not None:
            self.build((None, *self._input_layer.shape))

    def pop(self):
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self._layer_names = {existing.name for existing in self._layers}
        self._invalidate()
        if self._layers and self._input_layer is not None:
            self.build((None, *self._input_layer.shape))
        return layer

    def _invalidate(self):
        self.built = False
        self.inputs, self.outputs, self._nodes = [], [], []
        self._graph_changed()

    def _graph_changed(self):
        self._flat = None
        self._executors.clear()

    def _append_call(self, layer):
        self._append_call_unchecked(layer)
        self._graph_changed()
        if self.compiled:
            self._build_training_state()

    def build(self, input_shape=None):
        """Call every layer on the input tensor: infer and check shapes, create weights."""
        if input_shape is None:
            if self._input_layer is None:
                raise ValueError(f"Model '{self.name}': cannot build without an input shape; "
                                 "pass input_shape, add an Input, or call fit")
            input_shape = (None, *self._input_layer.shape)
        input_shape = tuple(input_shape)
        if self._input_layer is None or tuple(self._input_layer.shape) != input_shape[1:]:
            self._input_layer = InputLayer(shape=input_shape[1:])
        if not self._layers:
            raise ValueError(f"Model '{self.name}' has no layers to build")
        self._set_device()
        self.built = False
        self.inputs, self.outputs, self._nodes = [self._input_layer.output], [], []
        self.outputs = [self.inputs[0]]
        self.input_shape = self.inputs[0].shape
        for layer in self._layers:
            self._append_call_unchecked(layer)
        self.built = True
        self._graph_changed()
        if self.compiled:
            self._build_training_state()

    def _append_call_unchecked(self, layer):
        layer._path_prefix = f"{self.name}/"
        out = layer(self.outputs[-1])
        if isinstance(out, list):
            raise ValueError(f"Sequential: layer '{layer.name}' has {len(out)} outputs; "
                             f"every layer in a Sequential model must have one output")
        self._nodes.append(out.node)
        self.outputs = [out]
        self.output_shape = out.shape

    def _build_once(self, input_shape):
        if isinstance(input_shape, list):
            raise ValueError(f"Sequential '{self.name}' takes one input; received "
                             f"{len(input_shape)} input shapes")
        if not self.built:
            self.build(input_shape)
        elif not structure.shapes_fit(input_shape, self.inputs[0].shape):
            raise ValueError(f"Input of model '{self.name}' is incompatible: expected shape "
                             f"{self.inputs[0].shape}, received shape {tuple(input_shape)}")
        return self.compute_output_shape(tuple(input_shape))  # concrete for known sizes

    # -- config -------------------------------------------------------------------------

    def get_config(self):
        layers = []
        if self._input_layer is not None:
            layers.append(klayers.serialize(self._input_layer))
        layers.extend(klayers.serialize(layer) for layer in self._layers)
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32",
                  "layers": layers}
        if self.built:
            config["build_input_shape"] = [None, *self.inputs[0].shape[1:]]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        entries = config.get("layers", [])
        built = [klayers.deserialize(entry, custom_objects) for entry in entries]
        inputs = [layer for layer in built if isinstance(layer, InputLayer)][:1]
        for layer in inputs:  # add without building, then build once: O(layers)
            model.add(layer)
        model._input_layer = inputs[0] if inputs else None
        for layer in built:
            if not isinstance(layer, InputLayer):
                model._add_unbuilt(layer)
        shape = config.get("build_input_shape")
        if model._input_layer is not None:
            model.build((None, *model._input_layer.shape))
        elif shape is not None:
            model.build(tuple(shape))
        if not config.get("trainable", True):
            model.trainable = False
        return model

    def _add_unbuilt(self, layer):
        """Append to the layer list (checked), without calling it."""
        if layer.name in self._layer_names:
            # a layer may have been renamed since it was added: look again, once
            self._layer_names = {existing.name for existing in self._layers}
        if layer.name in self._layer_names:
            raise ValueError(f"All layers added to a Sequential model should have unique names. "
                             f"Name '{layer.name}' is already the name of a layer in this model.")
        if not self._layers and self._input_layer is None and layer._input_shape_arg:
            self._input_layer = InputLayer(shape=layer._input_shape_arg)
        self._layers.append(layer)
        self._layer_names.add(layer.name)
