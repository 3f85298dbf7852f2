"""Sequential: a linear stack of layers with a static, shape-checked layer graph."""


import numpy as np

from kerasish import config as kconfig
from kerasish import layers as klayers
from kerasish.layers.input_layer import InputLayer
from kerasish.layers.layer import Layer, unique_name
from kerasish.trainer import Trainer


class Sequential(Trainer):
    """`Sequential([layers...])` or `model.add(layer)`; Keras semantics.

    When the input shape is known (an Input/InputLayer, `input_shape=` on the first
    layer, `build(...)`, or the first fit), every layer's output shape is inferred once
    and checked, then weights are created on the current device (kerasish.config).
    """

    def __init__(self, layers=None, trainable=True, name=None):
        self.name = name or unique_name("sequential")
        self.trainable = trainable
        self._layers = []
        self._input_layer = None
        self.built = False
        self.device = None
        self._act_shapes = None
        self._scratch_batch = 0
        self._init_trainer()
        for layer in layers or []:
            self.add(layer)

    # -- structure ----------------------------------------------------------------------

    @property
    def layers(self):
        return list(self._layers)

    def add(self, layer):
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. "
                            f"Received: layer={layer!r} of type {type(layer)}.")
        if isinstance(layer, InputLayer):
            if self._input_layer is not None or self._layers:
                raise ValueError("Sequential: an InputLayer can only be the first layer")
            self._input_layer = layer
            return
        if any(existing.name == layer.name for existing in self._layers):
            raise ValueError(f"All layers added to a Sequential model should have unique names. "
                             f"Name '{layer.name}' is already the name of a layer in this model.")
        if not self._layers and self._input_layer is None and layer._input_shape_arg:
            self._input_layer = InputLayer(shape=layer._input_shape_arg)
        self._layers.append(layer)
        self._invalidate()
        if self._input_layer is not None:
            self.build((None, *self._input_layer.shape))

    def pop(self):
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        layer = self._layers.pop()
        self._invalidate()
        if self._layers and self._input_layer is not None:
            self.build((None, *self._input_layer.shape))
        return layer

    def __call__(self, inputs, training=False):
        """`model(x)`: the inference outputs for x as one batch, a NumPy array.

        Training-mode forwards (dropout on, batch statistics) run only inside fit and
        train_on_batch, where their backward follows.
        """
        if training:
            raise ValueError(f"Model '{self.name}': calling the model with training=True is "
                             f"not supported; expected training=False or None (use fit or "
                             f"train_on_batch to train)")
        return self.predict_on_batch(inputs)

    def get_layer(self, name=None, index=None):
        """A layer by name or by index into `layers` (Keras semantics and messages)."""
        if (name is None) == (index is None):
            raise ValueError(f"Sequential.get_layer: provide either a layer name or a layer "
                             f"index, not {'both' if name is not None else 'neither'}; "
                             f"received name={name!r}, index={index!r}")
        if index is not None:
            if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
                raise TypeError(f"Sequential.get_layer: expected an int index; received "
                                f"{type(index).__name__}")
            if not -len(self._layers) <= index < len(self._layers):
                raise ValueError(f"Sequential.get_layer: was asked to retrieve layer at index "
                                 f"{index} but model only has {len(self._layers)} layers.")
            return self._layers[index]
        for layer in self._layers:
            if layer.name == name:
                return layer
        raise ValueError(f"Sequential.get_layer: no such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self._layers]}.")

    def _invalidate(self):
        self.built = False
        self._executors = {}
        self._scratch_batch = 0

    def build(self, input_shape=None):
        """Infer and check every layer's output shape; create weights on the device."""
        if input_shape is None:
            if self._input_layer is None:
                raise ValueError(f"Model '{self.name}': cannot build without an input shape; "
                                 "pass input_shape, add an Input, or call fit")
            input_shape = (None, *self._input_layer.shape)
        input_shape = tuple(input_shape)
        if self._input_layer is None:
            self._input_layer = InputLayer(shape=input_shape[1:])
        if not self._layers:
            raise ValueError(f"Model '{self.name}' has no layers to build")
        device = self.device or kconfig.get_device()  # a built model keeps its device
        shapes = [(None, *input_shape[1:])]
        for layer in self._layers:
            if layer.built and layer.input_shape is not None and \
                    tuple(layer.input_shape[1:]) != tuple(shapes[-1][1:]):
                raise ValueError(f"Layer '{layer.name}' was built for input shape "
                                 f"{layer.input_shape}; received {shapes[-1]}")
            layer._path_prefix = f"{self.name}/"
            shapes.append(layer._build_once(shapes[-1]))
        self._act_shapes = shapes
        self.device = device
        self.built = True
        if self.compiled:
            self._build_training_state()

    @property
    def input_shape(self):
        return self._act_shapes[0] if self.built else None

    @property
    def output_shape(self):
        return self._act_shapes[-1] if self.built else None

    def _ensure_scratch(self, batch_size):
        """Allocate every layer's scratch once, for the largest batch planned so far."""
        if batch_size <= self._scratch_batch:
            return
        from kernels_numba import empty

        for layer in self._layers:
            layer.scratch = {name: empty(shape, dtype, self.device)
                             for name, (shape, dtype) in layer.scratch_shapes(batch_size).items()}
        self._scratch_batch = batch_size

    # -- weights ------------------------------------------------------------------------

    @property
    def weights(self):
        return [w for layer in self._layers for w in layer.weights]

    @property
    def trainable_weights(self):
        return [w for layer in self._layers for w in layer.trainable_weights] \
            if self.trainable else []

    @property
    def non_trainable_weights(self):
        return [w for w in self.weights if not any(w is t for t in self.trainable_weights)]

    @property
    def _trainable_variables(self):
        return self.trainable_weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"Model '{self.name}': set_weights expected {len(mine)} arrays; "
                             f"received {len(weights)}")
        for var, value in zip(mine, weights):
            if tuple(np.shape(value)) != var.shape:
                raise ValueError(f"Model '{self.name}': weight {var.path} expects shape "
                                 f"{var.shape}; received {tuple(np.shape(value))}")
        for var, value in zip(mine, weights):
            var.assign(value)

    def count_params(self):
        if not self.built:
            raise ValueError(f"Model '{self.name}' has not been built yet: call build() or fit.")
        return int(sum(int(np.prod(w.shape)) for w in self.weights))

    # -- config -------------------------------------------------------------------------

    def get_config(self):
        layers = []
        if self._input_layer is not None:
            layers.append(klayers.serialize(self._input_layer))
        layers.extend(klayers.serialize(layer) for layer in self._layers)
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32",
                  "layers": layers}
        if self.built:
            config["build_input_shape"] = [None, *self._act_shapes[0][1:]]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        for layer_config in config.get("layers", []):
            model.add(klayers.deserialize(layer_config, custom_objects))
        shape = config.get("build_input_shape")
        if not model.built and shape is not None:
            model.build(tuple(shape))
        return model

    def to_json(self, **kwargs):
        from kerasish import saving

        return saving.model_to_json(self, **kwargs)

    def summary(self, line_length=None, print_fn=None):
        """Keras's table of layers, shapes and parameters, plus the planned buffer memory."""
        from kerasish.utils.summary import print_summary

        print_summary(self, line_length=line_length, print_fn=print_fn)

    # -- saving (kerasish.saving) --------------------------------------------------------

    def save(self, filepath, overwrite=True, include_optimizer=True, **kwargs):
        from kerasish import saving

        saving.save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer)

    def save_weights(self, filepath, overwrite=True, **kwargs):
        from kerasish import saving

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False, **kwargs):
        from kerasish import saving

        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch, by_name=by_name)

    def __repr__(self):
        return f"<Sequential name={self.name}, built={self.built}>"
